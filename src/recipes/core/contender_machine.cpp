// The contender's decisions. Notifications to the local queue always come last in an action list: the
// queue may react by abandoning or releasing this contender, and the shell then skips the requests of a
// finished machine that it has not performed yet (see contender.cpp).
#include "contender_machine.hpp"
#include "node_data.hpp"

#include <zklock/error.hpp>

#include <utility>

namespace zklock::detail {

using contender_act = contender_action::type;

contender_machine::contender_machine(std::string dir, std::string prefix, contender_kind kind, bool permitted,
                                     bool watch_followers)
    : dir_(std::move(dir)), prefix_(std::move(prefix)), kind_(kind), permitted_(permitted),
      watch_followers_(watch_followers), own_wanted_(watch_followers)
{
}

contender_machine::actions contender_machine::start(bool by_sequence)
{
    actions out;
    do_start(out, !by_sequence || grant_on_listing_only_);  // a sequence proof alone is no listing
    return out;
}

// Creates the node and lists the directory in one round trip: ZooKeeper answers a session's requests in
// order, so the listing already contains the new node.
void contender_machine::do_start(actions& out, bool listed)
{
    if (!permitted_) return check_permissions(out);  // (whose answer starts again, listed)
    const auto r = next_round();
    czxid_ = 0;  // a new node: its own creation zxid is the token, never an earlier node's
    ++node_gen_;
    listing_follows_ = listed;
    out.push_back({.what = contender_act::create_node, .path = dir_ + "/" + prefix_, .round = r, .batchable = !listed});
    if (listed) out.push_back({.what = contender_act::list, .path = dir_, .round = r, .purpose = listing::place});
}

contender_machine::actions contender_machine::abandon()
{
    actions out;
    abandon(out);
    return out;
}

void contender_machine::abandon(actions& out)
{
    if (finished_) return;
    finish(out);
    if (!node_.empty()) out.push_back({.what = contender_act::delete_node, .path = node_});
}

contender_machine::actions contender_machine::release()
{
    actions out;
    finish(out);
    // The own-node watch stays until the delete is answered: the delete itself consumes it.
    out.push_back({.what = contender_act::release_node, .path = node_});
    return out;
}

void contender_machine::finish(actions& out)
{
    finished_ = true;  // late answers now only clean up
    out.push_back({.what = contender_act::drop_watch, .slot = watch_slot::predecessor});
    out.push_back({.what = contender_act::drop_watch, .slot = watch_slot::followers});
}

void contender_machine::fail(actions& out, error_code ec)
{
    abandon(out);
    out.push_back({.what = contender_act::failed, .ec = ec});
}

contender_machine::actions contender_machine::on_created(std::uint64_t r, error_code ec, const std::string& path,
                                                         std::int64_t czxid, bool first)
{
    actions out;
    if (finished_) {
        // The waiter left while the create was in flight. A create lost with the connection may still
        // have happened: look for it by name once reconnected.
        if (!ec) out.push_back({.what = contender_act::delete_node, .path = path});
        else if (is_retryable(ec)) after_reconnect(out, resume::cleanup);
        return out;
    }
    if (r != round_) return out;
    if (!ec) {
        node_ = path;
        ++node_changes_;
        name_ = path.substr(path.rfind('/') + 1);
        czxid_ = czxid;
        if (listing_follows_) return out;  // the pipelined listing follows
        if (first) become_holder(out);
        else {
            relist(out);  // someone else created a node meanwhile: where do we stand?
            // Made in a multi, it came without its token: read beside the listing, not on the way to holding.
            if (czxid_ == 0) read_token(out);
        }
        return out;
    }
    next_round();  // the pipelined listing (if any) is moot
    if (ec == zk_errc::no_node) make_parents(out);
    else if (ec == zk_errc::no_auth) fail(out, zklock::error::no_create_permission);
    else if (is_retryable(ec)) after_reconnect(out, resume::find_own);
    else fail(out, ec);
    return out;
}

contender_machine::actions contender_machine::on_listed(std::uint64_t r, listing purpose, error_code ec,
                                                        const std::vector<std::string>& names)
{
    actions out;
    switch (purpose) {
    case listing::place: {
        if (finished_ || r != round_ || node_.empty()) break;
        if (is_retryable(ec)) {
            after_reconnect(out, resume::relist);
            break;
        }
        if (ec) {
            fail(out, ec);
            break;
        }
        // A create retried by the server (a lagging follower) may have made a second node of ours.
        for (const auto& n : names)
            if (n != name_ && ours(n)) out.push_back({.what = contender_act::delete_node, .path = dir_ + "/" + n});
        const auto v = decide(kind_, names, name_, passed_over_);
        if (v.foreign) {
            out.push_back({.what = contender_act::schema_found, .path = std::string(describe(*v.foreign))});
            fail(out, zklock::error::schema_mismatch);
        } else if (!v.found) {
            node_.clear();  // deleted by someone else before we held it: queue again with a new node
            do_start(out);
        } else if (v.holds) {
            become_holder(out);
        } else {
            phase_ = phase::waiting;
            watch_ahead(out, v.obstacles);
            out.push_back({.what = contender_act::waiting, .index = v.ahead});
        }
        break;
    }
    case listing::find_own:
        if (finished_) {  // the waiter left meanwhile: delete what we find
            if (is_retryable(ec)) after_reconnect(out, resume::cleanup);
            else delete_ours(out, names);
            break;
        }
        if (r != round_) break;
        if (is_retryable(ec)) after_reconnect(out, resume::find_own);
        else if (ec == zk_errc::no_node) make_parents(out);
        else if (ec) fail(out, ec);
        else {
            for (const auto& n : names)
                if (ours(n)) {
                    node_ = dir_ + "/" + n;
                    ++node_changes_;
                    name_ = n;
                    relist(out);
                    return out;
                }
            do_start(out);  // it was never created
        }
        break;
    case listing::cleanup:
        if (is_retryable(ec)) after_reconnect(out, resume::cleanup);
        else if (!ec) delete_ours(out, names);
        break;
    case listing::permissions:
        if (finished_ || r != round_) break;
        if (is_retryable(ec) || is_retryable(probe_)) after_reconnect(out, resume::start);
        else if (ec == zk_errc::no_node) make_parents(out);
        else if (probe_ == zk_errc::no_auth) fail(out, zklock::error::no_delete_permission);
        else if (ec == zk_errc::no_auth) fail(out, zklock::error::no_read_permission);
        else if (ec) fail(out, ec);
        else {
            permitted_ = true;
            out.push_back({.what = contender_act::note_permitted, .path = dir_});
            do_start(out);
        }
        break;
    case listing::followers:
        if (finished_) break;
        if (is_retryable(ec)) {
            after_reconnect(out, resume::watch_followers);
            break;
        }
        if (ec) break;
        if (someone_waits_behind(kind_, names, name_)) {
            out.push_back({.what = contender_act::followers_waiting});
        } else {
            out.push_back({.what = contender_act::await_watch, .slot = watch_slot::followers});
            out.push_back({.what = contender_act::followers_none});
        }
        break;
    }
    return out;
}

void contender_machine::relist(actions& out)
{
    out.push_back({.what = contender_act::list, .path = dir_, .round = next_round(), .purpose = listing::place});
}

// getData, not exists: a watch is set only if the node is there, so a vanished node leaves none.
// Nodes created after our listing sort after us, so when every node ahead in it is gone we hold. Watching
// them all (one pipelined round of reads) saves the listing that watching only the nearest costs each
// time it goes while others remain: a round trip on the path of every hand-off through ZooKeeper.
// Holding without that listing needs our own node watched too, in the same round: someone may delete it
// while we wait (Curator's and kazoo's waiters see that in the listing they always make).
void contender_machine::watch_ahead(actions& out, const std::vector<std::string>& obstacles)
{
    const auto r = next_round();
    ahead_gone_after_reconnect_ = false;
    all_ahead_watched_ = obstacles.size() <= max_watched_ahead;
    ahead_left_ = all_ahead_watched_ ? obstacles.size() : 1;
    // Our own node first: answers come in order, so if it is gone its answer is heard before the nodes
    // ahead are found gone too (which would grant).
    if (all_ahead_watched_) watch_waiting_own(out, r);  // (its answer has our token too)
    for (std::size_t i = 0; i < ahead_left_; ++i)
        out.push_back({.what = contender_act::get_data, .path = dir_ + "/" + obstacles[i], .round = r,
                       .slot = watch_slot::predecessor, .index = i});
    if (!all_ahead_watched_ && czxid_ == 0) read_token(out);  // made in a multi: read while we wait, not on the way to holding
}

void contender_machine::watch_waiting_own(actions& out, std::uint64_t r)
{
    out.push_back({.what = contender_act::get_data, .path = node_, .round = r, .slot = watch_slot::waiting_own});
}

// A watched node ahead was deleted (or found gone).
void contender_machine::obstacle_gone(actions& out)
{
    if (!all_ahead_watched_) return relist(out);  // others further ahead may remain: where do we stand?
    if (--ahead_left_ > 0) return;
    // Each watch ahead has fired or was never set; our own node's is no longer needed.
    next_round();
    out.push_back({.what = contender_act::drop_watch, .slot = watch_slot::predecessor});
    if (grant_on_listing_only_) return relist(out);  // the listing decides, and sees another recipe's node
    // Heard after a reconnect, the deletion may have come before our own node's (someone else deleted it
    // while we were away): the listing says whether it is still there (else we queue again).
    if (ahead_gone_after_reconnect_) return relist(out);
    become_holder(out);
}

// A read of the wait's round lost its connection: the round's other reads are moot, and one listing after
// the reconnect finds where we stand.
void contender_machine::relist_after_reconnect(actions& out)
{
    next_round();
    after_reconnect(out, resume::relist);
}

// Our own node while we wait behind watched nodes: its deletion means queueing again, not holding.
void contender_machine::on_waiting_own(actions& out, std::uint64_t r, error_code ec, bool deleted, bool read)
{
    if (phase_ != phase::waiting || r != round_) return;
    if (deleted || ec == zk_errc::no_node) return relist(out);  // it finds the node gone and queues again
    if (is_retryable(ec)) return relist_after_reconnect(out);
    if (ec) return fail(out, ec);
    if (read) out.push_back({.what = contender_act::await_watch, .round = r, .slot = watch_slot::waiting_own});
    else watch_waiting_own(out, r);  // its data changed: watch on
}

contender_machine::actions contender_machine::on_data(std::uint64_t r, watch_slot slot, error_code ec,
                                                      std::int64_t czxid, std::string_view data, std::size_t index)
{
    actions out;
    if (finished_) return out;
    if (slot == watch_slot::waiting_own) {
        if (!ec && r == round_ && czxid_ == 0) czxid_ = czxid;  // the token of a node made in a multi
        on_waiting_own(out, r, ec, false, true);
        return out;
    }
    if (slot == watch_slot::predecessor) {
        if (r != round_) return out;
        if (ec == zk_errc::no_node) obstacle_gone(out);
        else if (is_retryable(ec)) relist_after_reconnect(out);
        else if (ec) fail(out, ec);
        else out.push_back({.what = contender_act::await_watch, .round = r, .slot = watch_slot::predecessor, .index = index});
        return out;
    }
    if (slot == watch_slot::none) {
        if (index != node_gen_) return out;  // the token of a node we no longer have
        if (phase_ != phase::held) {  // read while queued: the wait itself hears of a deletion or a reconnect
            if (!ec && czxid_ == 0) czxid_ = czxid;
            return out;
        }
    }
    // Our own node, while held: watched (own), or read for its czxid alone (none).
    if (ec == zk_errc::no_node) out.push_back({.what = contender_act::lost, .ec = zklock::error::lock_node_deleted});
    else if (is_retryable(ec)) {
        own_watched_ = true;  // (a read for the czxid is asked again with the watch: rare, and harmless)
        after_reconnect(out, resume::watch_own);
    } else if (!ec) {
        if (czxid_ == 0) czxid_ = czxid;
        if (slot == watch_slot::own) out.push_back({.what = contender_act::await_watch, .slot = watch_slot::own});
        if (std::exchange(announce_when_watched_, false)) out.push_back({.what = contender_act::acquired});
        if (data == revoke_request) out.push_back({.what = contender_act::revoke_requested});
    }
    // Any other error: the session ended, and the queue hears it from the session.
    return out;
}

contender_machine::actions contender_machine::on_watch_fired(std::uint64_t r, watch_slot slot, error_code ec,
                                                             watch_event_type t, bool after_reconnect)
{
    actions out;
    if (finished_ || ec) return out;  // a session's end: the queue hears it from the session
    switch (slot) {
    case watch_slot::predecessor:
        if (r != round_) break;
        if (t == watch_event_type::deleted) {
            if (after_reconnect) ahead_gone_after_reconnect_ = true;
            obstacle_gone(out);
        }
        else relist(out);  // its data changed: look again (and watch afresh)
        break;
    case watch_slot::own:
        if (t == watch_event_type::deleted) out.push_back({.what = contender_act::lost, .ec = zklock::error::lock_node_deleted});
        else watch_own(out);  // data changed: keep watching
        break;
    case watch_slot::followers:
        // A child came or went while we hold the head: most likely someone queued behind us. Said at once,
        // so that the queue stops passing the node on beyond its bound until the listing answers.
        watch_followers(out);
        out.push_back({.what = contender_act::followers_changed});
        break;
    case watch_slot::waiting_own: on_waiting_own(out, r, {}, t == watch_event_type::deleted, false); break;
    case watch_slot::none: break;
    }
    return out;
}

contender_machine::actions contender_machine::follow()
{
    actions out;
    if (finished_ || watch_followers_) return out;
    watch_followers_ = true;
    if (phase_ == phase::held) watch_followers(out);  // else become_holder starts it
    return out;
}

contender_machine::actions contender_machine::watch_own_node()
{
    actions out;
    if (finished_ || own_wanted_) return out;
    own_wanted_ = true;
    if (phase_ == phase::held && !std::exchange(own_watched_, true)) watch_own(out);  // else become_holder does
    return out;
}

void contender_machine::become_holder(actions& out)
{
    phase_ = phase::held;
    if (watch_followers_) watch_followers(out);
    // The create's answer had no czxid (the node was found again after a lost answer, or made in a multi):
    // learn the fencing token first, by the own watch's read if that is wanted, else by a read alone (a
    // watch would cost the server a notification at our own delete).
    if (czxid_ == 0) announce_when_watched_ = true;
    if (own_wanted_ && !std::exchange(own_watched_, true)) watch_own(out);
    else if (czxid_ == 0) read_token(out);
    if (czxid_ != 0) out.push_back({.what = contender_act::acquired});
}

void contender_machine::read_token(actions& out)
{
    out.push_back({.what = contender_act::get_data, .path = node_, .slot = watch_slot::none, .index = node_gen_});
}

// While held, a watch on our own node tells the holder if someone deletes it.
void contender_machine::watch_own(actions& out)
{
    out.push_back({.what = contender_act::get_data, .path = node_, .slot = watch_slot::own});
}

// While held, a child watch on the lock directory says when another contender queues behind us, so that
// an idle node lingers only while nobody else waits.
void contender_machine::watch_followers(actions& out)
{
    out.push_back({.what = contender_act::list, .path = dir_, .slot = watch_slot::followers, .purpose = listing::followers});
}

// After a lost connection the create may or may not have happened: look for our protected name. A sync
// first, so that the listing comes from a server that has caught up with the leader (a create from the
// old connection may still have been on its way).
void contender_machine::find_own(actions& out)
{
    const auto r = next_round();
    out.push_back({.what = contender_act::sync, .path = dir_});
    out.push_back({.what = contender_act::list, .path = dir_, .round = r, .purpose = listing::find_own});
}

void contender_machine::after_reconnect(actions& out, resume step)
{
    out.push_back({.what = contender_act::await_connected, .step = step});
    if (!finished_) out.push_back({.what = contender_act::waiting});  // one-look waiters give up
}

contender_machine::actions contender_machine::on_reconnected(resume step, bool connected)
{
    actions out;
    if (finished_) {
        // Still find and delete a node whose create's answer was lost.
        if (connected && node_.empty())
            out.push_back({.what = contender_act::list, .path = dir_, .purpose = listing::cleanup});
        return out;
    }
    if (!connected) return out;  // a final state: the queue hears it from the session too
    switch (step) {
    case resume::start: do_start(out); break;
    case resume::find_own: find_own(out); break;
    case resume::relist: relist(out); break;
    case resume::watch_own: watch_own(out); break;
    case resume::watch_followers: watch_followers(out); break;
    case resume::cleanup: break;
    }
    return out;
}

void contender_machine::delete_ours(actions& out, const std::vector<std::string>& names)
{
    for (const auto& n : names)
        if (ours(n)) out.push_back({.what = contender_act::delete_node, .path = dir_ + "/" + n});
}

}  // namespace zklock::detail
