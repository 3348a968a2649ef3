// One lock node's life as a pure state machine: events in, actions out, no I/O.
//
// The Boost.Redis exec_fsm / Boost.MySQL sansio pattern: the machine decides, and the shell around it
// (recipes/contender.cpp) performs each action on the session and feeds the answer back as an event.
// Every ordering a live server can produce is then a few lines of a table test (test/unit).
//
// Requests carry a round: an answer to a request of an earlier round is stale and ignored. After the
// machine is finished (abandoned or released) answers only clean up: a create that still lands is
// deleted, and a create whose answer was lost is looked for by its protected name and deleted.
#pragma once

#include "schema.hpp"

#include <zklock/watch_event.hpp>

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <string_view>
#include <string>
#include <vector>

namespace zklock::detail {

using boost::system::error_code;

/// Which of the contender's watches a read arms, or a fired watch belongs to. `own` is our node's while
/// held; `waiting_own` our node's while every node ahead is watched (its deletion must not go unseen
/// when theirs alone would make us the holder).
enum class watch_slot { none, predecessor, own, followers, waiting_own };

/// What a listing is for (echoed back with its answer).
enum class listing { place, find_own, cleanup, permissions, followers };

/// Where to pick up once the session has reconnected.
enum class resume { start, find_own, relist, watch_own, watch_followers, cleanup };

struct contender_action {
    enum class type {
        // Requests, each answered by an event.
        create_node,       ///< ephemeral sequential `path` (`batchable`: see below) -> on_created
        create_container,  ///< container `path` (an ancestor, `index`) -> on_container_created
        exists,            ///< `path` (ancestor `index`) -> on_exists
        list,              ///< children of `path` for `purpose`, watch `slot` -> on_listed
        get_data,          ///< `path` with a data watch in `slot` (predecessor: the `index`th ahead; none: no
                           ///< watch, the czxid alone of our node `index`, counted by creates) -> on_data
        probe_delete,      ///< delete `path` (a name that never exists) -> on_probed
        sync,              ///< `path`; its answer only orders the next read behind it
        await_watch,       ///< wait on the watch in `slot` (predecessor: the `index`th) -> on_watch_fired
        drop_watch,        ///< forget the watch in `slot` (predecessor: every watch of the wait, waiting_own too)
        delete_node,       ///< delete `path` in the background, again after reconnects, until gone
        release_node,      ///< delete our node `path` (empty: none); the shell reports the answer to the releaser
        await_connected,   ///< wait for the session to reconnect -> on_reconnected(`step`)
        note_permitted,    ///< the session may cache that `path` passed the permission check
        // Reports to the local queue.
        acquired,  ///< our node holds the lock (zxid() is the fencing token)
        waiting,   ///< queued behind `index` contenders (as of this listing), or waiting for a reconnect (0)
        failed,    ///< `ec`; the node is being given up
        lost,      ///< `ec`: the node we held was deleted
        followers_waiting,  ///< another contender queued behind our held node
        revoke_requested,   ///< someone asked the holder to let go (Curator's "__REVOKE__" in our node's data)
        schema_found,       ///< `path`: words for the foreign schema in the directory (for the log)
        followers_none,     ///< a listing while held found nobody queued behind our node (the watch stays)
        followers_changed,  ///< the directory changed while held: someone may queue behind (a listing follows)
    };
    type what{};
    std::string path{};
    std::uint64_t round = 0;
    watch_slot slot = watch_slot::none;
    listing purpose = listing::place;
    resume step = resume::start;
    std::size_t index = 0;
    error_code ec{};
    /// create_node: nothing is pipelined behind the create, so the session may send it in one multi with
    /// the other creates of its turn. Either way on_created may get no czxid (a create with its listing
    /// joins the deletes of its turn in their multi): the waiter's read of its own node, or the holder,
    /// reads it.
    bool batchable = false;
};

/// A waiter with at most this many contenders ahead that count watches them all, and holds when the last
/// is deleted, without listing again. Further back it watches only the nearest (each deletion then wakes
/// a bounded number of waiters, never the whole queue).
inline constexpr std::size_t max_watched_ahead = 8;
static_assert(max_watched_ahead < most_obstacles_listed, "a verdict must show when there are more ahead than we watch");

class contender_machine {
public:
    using actions = std::vector<contender_action>;

    /// `dir`: the lock directory; `prefix`: the protected name before the sequence ("_c_<uuid>-lock-");
    /// `permitted`: the session already checked this directory's ACL; `watch_followers`: when holding,
    /// report other contenders queuing behind (for a lingering node), and watch our own node at once.
    contender_machine(std::string dir, std::string prefix, contender_kind kind, bool permitted, bool watch_followers);

    // Commands.
    /// `by_sequence`: the owner may prove from the create's answer alone that the node is first
    /// (core/sequence_proof.hpp), so the node is created without the listing beside it; on_created's
    /// `first` says whether it was, and a node not proven first is listed then.
    actions start(bool by_sequence = false);
    actions abandon();  ///< nobody wants the lock: give the node up (now, or when its create lands)
    actions release();  ///< delete the node; release_node comes out even without one (path empty)
    actions follow();   ///< from now on report followers_waiting while held (a child watch on the directory)
    /// Watch our own node while held (now, or once held): its deletion is reported as `lost`, a revocation
    /// request as `revoke_requested`. Not done unasked: a short hold would pay a read and a watch for nothing.
    actions watch_own_node();
    /// Before start: `child` (a name in the directory) does not count as ahead of our node. A downgrade's
    /// read node passes over the write node its session holds.
    void pass_over(std::string child) { passed_over_ = std::move(child); }
    /// Before start: hold only on a listing that shows the directory still ours (no other recipe's node
    /// in it), never on the last watched node's deletion or a sequence proof alone: that costs a round
    /// trip a grant. An election's candidate asks for it: a Curator LeaderLatch node that joined the path
    /// while we waited leads at once beside a candidate granted without a listing (issue 48.5).
    void grant_only_on_listing() noexcept { grant_on_listing_only_ = true; }

    // Answers and notifications.
    /// `first`: the owner proved from the sequence that the node is first (see start).
    actions on_created(std::uint64_t round, error_code ec, const std::string& path, std::int64_t czxid,
                       bool first = false);
    actions on_listed(std::uint64_t round, listing purpose, error_code ec, const std::vector<std::string>& names);
    /// `data`: the node's data (our own node's may be Curator's revocation request, "__REVOKE__");
    /// `index`: the get_data action's (which node ahead).
    actions on_data(std::uint64_t round, watch_slot slot, error_code ec, std::int64_t czxid, std::string_view data = {},
                    std::size_t index = 0);
    /// `after_reconnect`: the watch was set before the session's last reconnect (what the server fires
    /// then, for events the client missed, comes in no particular order: a node ahead's deletion may come
    /// before our own node's).
    actions on_watch_fired(std::uint64_t round, watch_slot slot, error_code ec, watch_event_type type,
                           bool after_reconnect = false);
    actions on_probed(std::uint64_t round, error_code ec);
    actions on_exists(std::uint64_t round, std::size_t index, error_code ec, bool present);
    actions on_container_created(std::uint64_t round, std::size_t index, error_code ec);
    /// After await_connected: `connected` false means the session ended (the queue hears it from the session).
    actions on_reconnected(resume step, bool connected);

    bool held() const noexcept { return phase_ == phase::held; }
    bool waiting() const noexcept { return phase_ == phase::waiting; }
    bool finished() const noexcept { return finished_; }
    const std::string& node() const noexcept { return node_; }
    /// Counts the changes of node(): a caller that keeps a copy of the name knows it is current without
    /// comparing the strings (two cold blocks a grant, with many paths).
    std::uint32_t node_changes() const noexcept { return node_changes_; }
    const std::string& dir() const noexcept { return dir_; }
    std::int64_t zxid() const noexcept { return czxid_; }

private:
    enum class phase { creating, waiting, held };
    /// Creates the node; `listed`: with the listing pipelined behind it (else on_created decides).
    void do_start(actions& out, bool listed = true);
    void relist(actions& out);
    void watch_ahead(actions& out, const std::vector<std::string>& obstacles);
    void obstacle_gone(actions& out);
    void watch_waiting_own(actions& out, std::uint64_t r);
    void on_waiting_own(actions& out, std::uint64_t r, error_code ec, bool deleted, bool read);
    void relist_after_reconnect(actions& out);
    void become_holder(actions& out);
    void watch_own(actions& out);
    void read_token(actions& out);  // our node's czxid, with no watch
    void watch_followers(actions& out);
    void make_parents(actions& out);
    void forget_parts() noexcept;
    void find_own(actions& out);
    void check_permissions(actions& out);
    void after_reconnect(actions& out, resume step);
    void fail(actions& out, error_code ec);
    void finish(actions& out);
    void abandon(actions& out);
    void delete_ours(actions& out, const std::vector<std::string>& names);
    bool ours(const std::string& name) const noexcept { return name.compare(0, prefix_.size(), prefix_) == 0; }
    std::uint64_t next_round() noexcept { return ++round_; }

    std::string dir_, prefix_;
    contender_kind kind_;
    std::string passed_over_;
    bool permitted_, watch_followers_;
    bool grant_on_listing_only_ = false;  // see grant_only_on_listing
    bool ahead_gone_after_reconnect_ = false;  // this round heard a node ahead go after a reconnect
    bool own_wanted_;           // watch our own node once held (watch_own_node, or at once for followers)
    bool own_watched_ = false;  // ... and the watch was asked for
    bool finished_ = false;
    phase phase_ = phase::creating;
    std::string node_, name_;
    std::uint32_t node_changes_ = 0;
    std::int64_t czxid_ = 0;
    bool all_ahead_watched_ = false;  // every contender ahead is watched: the last one's deletion makes us hold
    std::size_t ahead_left_ = 0;      // ... and this many of them are not known to be gone yet
    bool announce_when_watched_ = false;
    bool listing_follows_ = true;  // the last create went with a listing (else on_created decides or lists)
    error_code probe_;
    std::vector<std::string> parts_;  // make_parents: each missing ancestor, then the directory
    std::vector<int> present_;        // 1 exists, 0 missing, -1 error
    error_code parts_error_;
    std::uint64_t round_ = 0;
    std::size_t node_gen_ = 0;  // counts our creates: a read of a node's token names the node it is for
};

}  // namespace zklock::detail
