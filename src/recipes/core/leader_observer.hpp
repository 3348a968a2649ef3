// Who leads an election, read and followed as a pure state machine: events in, actions out, no I/O.
// The shell (recipes/election_observer.cpp) performs each action on the session and feeds the answer back.
//
// A round: sync the directory, so that what follows is read at least as late as anything the caller has
// seen (an observer never names a leader that ZooKeeper's order has already superseded); list it; read
// the first candidate's node with a data watch (its deletion ends the term; gone since the listing: list
// again); read the directory's data with a data watch (the value the leader proclaimed). The leader read
// is news when it differs from the one the caller knows; otherwise the round waits for one of its
// watches, and any event starts the next round. Only the leader's node and the directory are watched,
// never every candidate: observers make no herd. With nobody leading the listing itself is watched (or,
// when the directory does not exist, its creation).
#pragma once

#include <zklock/leader_info.hpp>

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zklock::detail {

using boost::system::error_code;

/// An election directory's candidates in the order they lead: the first one leads. Candidates are the
/// nodes of one family: Curator LeaderSelector's "-lock-" (zklock's by default), Curator LeaderLatch's
/// "-latch-", or kazoo Election's "__lock__". Other children (data nodes) are ignored; two families,
/// or another recipe's nodes, make the directory mixed: its clients do not agree on an order.
struct candidates {
    std::vector<std::string> in_order;  ///< names, first the leader (by sequence, wrap-aware)
    bool mixed = false;                 ///< nodes of another recipe too: no order every client agrees on
};
candidates election_order(const std::vector<std::string>& children);

/// The value a leader proclaims, stored in the directory's data with its node's name so that a value is
/// never taken for a later leader's: "<node name>\n<value>".
std::string encode_proclaimed(std::string_view node_name, std::string_view value);
/// The value proclaimed by the leader whose node is `node_name`, if the data holds one of its.
std::optional<std::string> proclaimed_by(std::string_view data, std::string_view node_name);

class leader_observer {
public:
    enum class step {
        sync,             ///< sync `path`; then on_synced
        list,             ///< get_children(path); then on_listed
        list_watched,     ///< get_children(path) with a child watch (nobody leads); then on_listed
        watch_creation,   ///< exists(path) with a watch (the directory does not exist); then on_checked
        read_leader,      ///< get_data(path) with a data watch, the leader's node; then on_leader_read
        read_value,       ///< get_data(path) with a data watch, the directory; then on_value_read
        await_watch,      ///< wait for a watch this round set; then on_watch_fired
        await_connected,  ///< wait until the session is connected again (a request failed on the way); then start
        report,           ///< complete with leader()
        fail,             ///< complete with error()
    };
    struct action {
        step what;
        std::string path{};
        friend bool operator==(const action&, const action&) = default;
    };

    /// `known`: the leader the caller knows (an empty leader_info: nobody); none: report what the first
    /// round reads (async_leader).
    leader_observer(std::string dir, std::optional<leader_info> known);

    /// Starts a round (also after await_connected).
    action start();
    action on_synced(error_code ec);
    action on_listed(error_code ec, const std::vector<std::string>& children);
    action on_checked(error_code ec, bool exists);
    action on_leader_read(error_code ec, std::string_view data, std::int64_t czxid);
    action on_value_read(error_code ec, std::string_view data);
    action on_watch_fired();

    const leader_info& leader() const noexcept { return seen_; }
    error_code error() const noexcept { return error_; }

private:
    /// A failed request: wait for the connection and start again, or fail.
    action failed(error_code ec);
    /// The round read `seen_` (a leader, or nobody): report it, or find a watch and wait for a change.
    action conclude(bool directory_exists = true);

    std::string dir_;
    std::optional<leader_info> known_;
    leader_info seen_;
    error_code error_;
    bool listing_watched_ = false;  ///< this round's last listing set a child watch
};

}  // namespace zklock::detail
