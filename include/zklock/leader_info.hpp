// Who leads an election, as any process can read it (zklock::election::async_leader).
#pragma once

#include <zklock/fencing_token.hpp>

#include <optional>
#include <string>
#include <utility>

namespace zklock {

/// The leader of an election at one moment of ZooKeeper's order; `node` empty: nobody leads.
struct leader_info {
    /// Nobody leads. (Constructors rather than an aggregate: GCC 12 destroys a braced aggregate temporary
    /// with string members at the wrong address when it is an argument inside a co_await, as in
    /// `co_await async_wait_leader_change(s, path, {}, use_awaitable)`: a crash in the caller's code.)
    leader_info() = default;
    /// Who leads: its participant id, its node, its term, and what it proclaimed (if it did).
    leader_info(std::string id_, std::string node_, fencing_token token_, std::optional<std::string> value_ = std::nullopt)
        : id(std::move(id_)), node(std::move(node_)), token(token_), value(std::move(value_))
    {
    }

    std::string id;     ///< the participant id its candidate wrote into its node (Curator's getLeader().getId())
    std::string node;   ///< the full path of the leader's node; empty when nobody leads
    fencing_token token;  ///< the term: the creation zxid of the leader's node (its leadership's token())
    /// What the leader proclaimed during this term (leadership::async_proclaim); none before it did.
    std::optional<std::string> value;

    /// True when somebody leads (`node` is not empty).
    explicit operator bool() const noexcept { return !node.empty(); }
    /// Equal when id, node, token and value are all equal.
    friend bool operator==(const leader_info&, const leader_info&) = default;
};

}  // namespace zklock
