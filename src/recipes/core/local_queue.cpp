// The local queue's decisions.
#include "local_queue.hpp"

#include <zklock/error.hpp>

#include <cerrno>

#include <utility>

namespace zklock::detail {

using queue_act = queue_action::type;

error_code local_queue::lost(std::uint64_t holder) const noexcept
{
    if (auto it = cut_off_.find(holder); it != cut_off_.end()) return it->second;
    if (!holds(holder)) return {};
    // The first reason reported stays: the session's end is known before its listeners hear of it, so it
    // counts only when no other loss was reported before it.
    return lost_reason_ ? lost_reason_ : end_;
}

local_queue::actions local_queue::acquire(std::uint64_t id, bool one_look)
{
    actions out;
    // One look: only a lock that can be had at once: joined (readers), or nobody here holds or waits
    // for it and no node of ours is queued, on a connected session.
    const bool joinable = node_usable() && !holders_.empty() && may_join() && waiters_.empty();
    const bool free = holders_.empty() && waiters_.empty() && !queued_ && connected_;
    if (one_look && !joinable && !free) {
        out.push_back({.what = queue_act::fail_waiter, .id = id, .ec = zklock::error::timeout});
        return out;
    }
    waiters_.emplace(id, one_look);
    if (one_look) one_looks_.insert(id);
    advance(out);
    return out;
}

local_queue::actions local_queue::cancel(std::uint64_t id, error_code why)
{
    actions out;
    if (!waiters_.erase(id)) return out;
    one_looks_.erase(id);
    out.push_back({.what = queue_act::fail_waiter, .id = id, .ec = why});
    maybe_abandon(out);
    return out;
}

void local_queue::advance(actions& out)
{
    if (waiters_.empty()) return;
    if (node_held_) {
        if (connected_) grant_available(out);  // else once reconnected
        return;
    }
    if (!contender_ && connected_) {  // (disconnected: on_connected starts it)
        contender_ = true;
        // The shell starts a lingering node's contender watching its followers and its own node: an idle
        // node must go as soon as another process queues, or is deleted.
        const bool watching_from_start = opts_.linger;
        followers_waiting_ = false;  // a new node: nobody queues behind it yet (heard before or after acquired)
        followers_watched_ = watching_from_start;
        followers_clear_ = false;
        revoke_requested_ = false;
        own_watch_asked_ = watching_from_start;
        out.push_back({.what = queue_act::start_contender});
    }
}

void local_queue::grant_available(actions& out)
{
    if (!holders_.empty() && !may_join()) return;
    if (answer_pending()) return;  // on_followers_none or on_followers_waiting decides
    if (stale_) {  // the guard would be lost at birth: hold the grant until the leader has answered
        if (!std::exchange(confirming_, true)) out.push_back({.what = queue_act::confirm_touch});
        return;
    }
    if (held_while_away_) {  // someone may have deleted it meanwhile: no guard on a node already gone
        if (!std::exchange(confirming_node_, true)) out.push_back({.what = queue_act::confirm_node, .seq = node_gen_});
        return;
    }
    grant(out);
    while (opts_.shared && !waiters_.empty() && may_join()) grant(out);
    fail_one_looks(out);  // the lock is taken now (or the readers' bound is reached)
}

void local_queue::add_holder(std::uint64_t holder)
{
    if (spare_holder_.empty()) {
        holders_.insert(holder);
        return;
    }
    spare_holder_.value() = holder;
    holders_.insert(std::move(spare_holder_));
}

bool local_queue::remove_holder(std::uint64_t holder)
{
    auto node = holders_.extract(holder);
    if (node.empty()) return false;
    if (spare_holder_.empty()) spare_holder_ = std::move(node);
    return true;
}

void local_queue::grant(actions& out)
{
    const auto id = waiters_.front_id();
    if (waiters_.front()) one_looks_.erase(id);
    waiters_.pop_front();
    const auto holder = ++holder_gen_;
    add_holder(holder);
    out.push_back({.what = queue_act::grant, .id = id, .holder = holder, .seq = grants_++});
    out.push_back({.what = queue_act::arm_loss_clock});
    // The node's first hold, whenever it comes (at once, on reconnect, after a confirmed touch).
    if (grants_ == 1 && !own_watch_asked_) out.push_back({.what = queue_act::start_own_watch_clock});
    // The first local hand-off (a read node: its first join) asks the contender who queues behind the
    // node, so that the answer is in (usually) before the bound is reached. Readers always ask: beyond the
    // bound they join only until a writer queues; a mutex's node asks as should_look() says, and only
    // once those waiting here could take it beyond the bound, which lets handoff_limit + 1 grants go
    // unasked (a short queue never needs the answer: over 10,000 paths with a few waiters each, that
    // was a listing a path).
    const bool look = opts_.shared || (opts_.handoff_limit > 0 && should_look() &&
                                       grants_ + waiters_.size() > opts_.handoff_limit + 1);
    if (look && !followers_watched_ && grants_ >= 2) {
        followers_watched_ = true;
        out.push_back({.what = queue_act::watch_followers});
    }
}

void local_queue::fail_one_looks(actions& out)
{
    for (const auto id : one_looks_) {
        out.push_back({.what = queue_act::fail_waiter, .id = id, .ec = zklock::error::timeout});
        waiters_.erase(id);
    }
    one_looks_.clear();
}

void local_queue::fail_all(actions& out, error_code ec)
{
    waiters_.for_each([&](std::uint64_t id, bool) { out.push_back({.what = queue_act::fail_waiter, .id = id, .ec = ec}); });
    waiters_.clear();
    one_looks_.clear();
}

void local_queue::drop_contender() noexcept
{
    contender_ = node_held_ = queued_ = held_while_away_ = confirming_node_ = false;
    ++node_gen_;
}

// Nobody here wants the lock any more: give up the node, whether it is still queued or already ours (a
// node that became the head while the session was disconnected is held by nobody; keeping it would
// block every other process). A lingering node stays: it goes when another process queues.
void local_queue::maybe_abandon(actions& out)
{
    if (!waiters_.empty() || !holders_.empty() || !contender_) return;
    if (!node_held_) {
        drop_contender();
        out.push_back({.what = queue_act::abandon_contender});
    } else if (!opts_.linger) {
        drop_contender();
        out.push_back({.what = queue_act::release_contender});
    }
}

local_queue::actions local_queue::release(std::uint64_t holder, bool wants_answer)
{
    actions out;
    const auto lost = lost_reason_ ? lost_reason_ : end_;
    if (auto it = cut_off_.find(holder); it != cut_off_.end()) {  // the lock went on without it
        out.push_back({.what = queue_act::release_done, .ec = it->second});
        cut_off_.erase(it);
        return out;
    }
    if (!remove_holder(holder)) {
        out.push_back({.what = queue_act::release_done, .ec = zklock::error::not_held});
        return out;
    }
    for (const auto& [id, none] : lost_waiters_.take(holder)) out.push_back({.what = queue_act::abort_lost_waiter, .id = id});
    for (const auto& [id, none] : revoke_waiters_.take(holder))
        out.push_back({.what = queue_act::abort_revoke_waiter, .id = id});
    if (!holders_.empty()) {  // others (readers, a re-entered hold) keep the node; a loss is theirs too
        out.push_back({.what = queue_act::release_done, .ec = lost});
        return out;
    }
    lost_reason_ = {};
    // Hand off locally only on a live connection: a disconnected session may already have lost the node.
    const bool keep = !lost && node_usable();
    if (keep && !waiters_.empty() && answer_pending()) {
        out.push_back({.what = queue_act::cancel_loss_clock});  // nobody holds while the answer is out
        out.push_back({.what = queue_act::release_done});
        return out;
    }
    if (keep && !waiters_.empty() && within_bound()) {
        grant_available(out);  // cohort hand-off: the node stays, the next local coroutine holds it
        out.push_back({.what = queue_act::release_done});
        return out;
    }
    out.push_back({.what = queue_act::cancel_loss_clock});
    if (keep && contended_ && !followers_watched_ && grants_ > opts_.handoff_limit)
        ++unanswered_nodes_;  // let go at the bound, unasked, on the contended history
    if (keep && waiters_.empty() && opts_.linger && !followers_waiting_) {
        out.push_back({.what = queue_act::release_done});  // the node lingers for our next acquire
        return out;
    }
    const bool had = contender_;
    drop_contender();
    if (lost) {
        out.push_back({.what = queue_act::release_done, .ec = lost});
        if (had) out.push_back({.what = queue_act::release_contender});
    } else if (had) {
        out.push_back({.what = queue_act::release_contender, .answer = wants_answer});
    } else {
        out.push_back({.what = queue_act::release_done});
    }
    advance(out);  // waiters left: a new node, whose create queues behind the delete in the session's FIFO
    return out;
}

std::uint64_t local_queue::enter(std::uint64_t holder, error_code* why)
{
    const error_code refusal = !holds(holder) || lost(holder) ? error_code(zklock::error::not_held)
                               : stale_                       ? error_code(zklock::error::ownership_uncertain)
                                                              : error_code{};
    if (refusal) {
        if (why) *why = refusal;
        return 0;
    }
    const auto h = ++holder_gen_;
    add_holder(h);
    ++grants_;
    return h;
}

local_queue::actions local_queue::on_acquired()
{
    actions out;
    grants_ = 0;
    node_held_ = true;
    held_while_away_ = !connected_;  // then confirmed before any grant (grant_available)
    queued_ = false;
    if (waiters_.empty()) {
        drop_contender();
        out.push_back({.what = queue_act::release_contender});
    } else {
        advance(out);
    }
    return out;
}

local_queue::actions local_queue::on_own_watch_due()
{
    actions out;
    if (node_held_ && !holders_.empty()) watch_own(out);
    return out;
}

void local_queue::watch_own(actions& out)
{
    if (!contender_ || std::exchange(own_watch_asked_, true)) return;
    out.push_back({.what = queue_act::watch_own});
}

local_queue::actions local_queue::on_queued()
{
    actions out;
    if (!node_held_) queued_ = true;
    fail_one_looks(out);  // one-look waiters give up as soon as someone is ahead
    maybe_abandon(out);
    return out;
}

local_queue::actions local_queue::on_failed(error_code ec)
{
    actions out;
    drop_contender();
    out.push_back({.what = queue_act::forget_contender});
    fail_all(out, ec);
    return out;
}

local_queue::actions local_queue::on_lost(error_code ec)
{
    actions out;
    node_lost(out, ec);
    return out;
}

void local_queue::node_lost(actions& out, error_code ec)
{
    if (!holders_.empty()) return report_lost(out, ec);
    drop_contender();
    out.push_back({.what = queue_act::release_contender});
    advance(out);
}

local_queue::actions local_queue::on_followers_none()
{
    actions out;
    followers_clear_ = true;
    contended_ = false;
    unanswered_nodes_ = 0;
    if (holders_.empty() && node_usable() && !waiters_.empty()) grant_available(out);  // a paused hand-off goes on
    return out;
}

local_queue::actions local_queue::on_followers_changed()
{
    followers_clear_ = false;
    return {};
}

local_queue::actions local_queue::on_followers_waiting()
{
    actions out;
    followers_waiting_ = true;
    contended_ = true;
    unanswered_nodes_ = 0;
    // A hand-off paused at the bound: the other process gets its turn now.
    if (holders_.empty() && !waiters_.empty() && contender_ && node_held_ && !within_bound()) {
        drop_contender();
        out.push_back({.what = queue_act::release_contender});
        advance(out);
        return out;
    }
    // A lingering node (held, but by none of our coroutines) goes at once.
    if (holders_.empty() && waiters_.empty() && contender_) {
        drop_contender();
        out.push_back({.what = queue_act::release_contender});
    }
    return out;
}

bool loss_replaces(error_code current, error_code /*next*/) noexcept { return !current; }

void local_queue::report_lost(actions& out, error_code ec)
{
    if (!loss_replaces(lost_reason_, ec)) return;
    lost_reason_ = ec;
    out.push_back({.what = queue_act::cancel_loss_clock});
    for (const auto& [id, none] : lost_waiters_.take_all()) out.push_back({.what = queue_act::notify_lost, .id = id, .ec = ec});
}

local_queue::actions local_queue::on_session_final(error_code ec)
{
    actions out;
    out.push_back({.what = queue_act::cancel_loss_clock});
    if (!holders_.empty()) report_lost(out, ec);
    if (contender_) {
        drop_contender();
        out.push_back({.what = queue_act::abandon_contender});
    }
    fail_all(out, ec);
    return out;
}

local_queue::actions local_queue::on_session_renewed(bool keep_waiters)
{
    actions out;
    out.push_back({.what = queue_act::cancel_loss_clock});
    // A loss reported before the renewal keeps its reason (one reason per loss); else the old session's end.
    const auto why = lost_reason_ ? lost_reason_ : error_code(zklock::error::session_expired);
    for (auto holder : holders_) {
        for (const auto& [id, none] : lost_waiters_.take(holder))
            out.push_back({.what = queue_act::notify_lost, .id = id, .ec = why});
        for (const auto& [id, none] : revoke_waiters_.take(holder))
            out.push_back({.what = queue_act::abort_revoke_waiter, .id = id});
        cut_off_.emplace(holder, why);
    }
    holders_.clear();
    lost_reason_ = {};
    if (contender_) {
        drop_contender();
        out.push_back({.what = queue_act::abandon_contender});
    }
    grants_ = 0;
    confirming_ = false;  // its sync failed with the old session
    if (keep_waiters) {
        for (auto id : std::exchange(one_looks_, {})) {
            waiters_.erase(id);
            out.push_back({.what = queue_act::fail_waiter, .id = id, .ec = zklock::error::session_expired});
        }
    } else {
        fail_all(out, zklock::error::session_expired);
    }
    advance(out);  // (the new node is made once the new session is connected)
    return out;
}

local_queue::actions local_queue::on_connected()
{
    actions out;
    advance(out);  // a waiter may have been kept from a node that became ours while disconnected
    return out;
}

local_queue::actions local_queue::on_node_confirmed(std::uint64_t node, error_code ec)
{
    actions out;
    if (node != node_gen_ || !confirming_node_) return out;  // a node given up since
    confirming_node_ = false;
    if (ec == zk_errc::no_node) {
        node_lost(out, zklock::error::lock_node_deleted);
        return out;
    }
    if (!is_retryable(ec)) held_while_away_ = false;  // there (or a read that cannot tell: the watch will)
    advance(out);  // granted; or, after a lost connection, asked again (now, or once reconnected)
    return out;
}

local_queue::actions local_queue::on_touch_confirmed()
{
    actions out;
    confirming_ = false;
    advance(out);  // still stale (a slow answer, a failed sync): asks again; disconnected: on_connected
    return out;
}

local_queue::actions local_queue::on_uncertain()
{
    actions out;
    if (!holders_.empty()) report_lost(out, zklock::error::ownership_uncertain);
    return out;
}

// Enforced by the library, whatever the holder's code is doing: the holder's own listeners hear
// lease_expired, and the lock goes on exactly as a release would pass it (to a local waiter within the
// bound, else by deleting the node). A holder that already lost keeps the first reason.
local_queue::actions local_queue::on_lease_expired(std::uint64_t holder)
{
    actions out;
    if (!holds(holder) || lost(holder)) return out;
    for (const auto& [id, none] : lost_waiters_.take(holder))
        out.push_back({.what = queue_act::notify_lost, .id = id, .ec = zklock::error::lease_expired});
    auto passed = release(holder, false);
    out.insert(out.end(), passed.begin(), passed.end());
    cut_off_.emplace(holder, zklock::error::lease_expired);
    return out;
}

local_queue::actions local_queue::teardown()
{
    actions out;
    out.push_back({.what = queue_act::cancel_loss_clock});
    if (contender_) {
        drop_contender();
        out.push_back({.what = queue_act::abandon_contender});
    }
    fail_all(out, error_code(ECANCELED, boost::system::system_category()));  // Asio's operation_aborted
    for (const auto& [id, none] : lost_waiters_.take_all()) out.push_back({.what = queue_act::abort_lost_waiter, .id = id});
    for (const auto& [id, none] : revoke_waiters_.take_all())
        out.push_back({.what = queue_act::abort_revoke_waiter, .id = id});
    return out;
}

}  // namespace zklock::detail
