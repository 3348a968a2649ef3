// Who leads an election, as any process can read it (zklock::election::async_leader).
#pragma once

#include <zklock/fencing_token.hpp>

#include <optional>
#include <string>

namespace zklock {

/// The leader of an election at one moment of ZooKeeper's order; `node` empty: nobody leads.
struct leader_info {
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
