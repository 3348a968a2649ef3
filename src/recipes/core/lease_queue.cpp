#include "lease_queue.hpp"

#include <zklock/error.hpp>

namespace zklock::detail {

using A = lease_action::type;

lease_queue::actions lease_queue::acquire(std::uint64_t id, std::size_t n, bool one_look)
{
    actions out;
    if (one_look && (!waiters_.empty() || !connected_)) {
        out.push_back({A::fail_waiter, id, 0, false, zklock::error::timeout});
        return out;
    }
    waiters_[id] = {n, one_look};
    advance(out);
    return out;
}

lease_queue::actions lease_queue::cancel(std::uint64_t id, error_code why)
{
    actions out;
    if (!waiters_.count(id)) return out;
    leave(out, id);
    out.push_back({A::fail_waiter, id, 0, false, why});
    advance(out);
    return out;
}

lease_queue::actions lease_queue::lease_freed(bool usable)
{
    actions out;
    if (!usable || !connected_ || waiters_.empty() || waiters_.begin()->second.n != 1 || !may_pass()) {
        // Nobody here can take it now, the bound is reached while others wait, or the oldest waiter wants
        // several leases: only a smaller leases directory serves it, so the node goes.
        out.push_back({A::delete_lease});
        return out;
    }
    const auto id = waiters_.begin()->first;
    ++handoffs_;
    if (limit_ > 0 && !looking_) {  // is anybody else waiting? known before the bound is reached
        looking_ = true;
        nobody_waits_ = false;
        out.push_back({A::look_for_followers});
    }
    leave(out, id);
    out.push_back({A::pass_lease, id});
    advance(out);
    return out;
}

lease_queue::actions lease_queue::on_run_done(error_code ec, bool retryable)
{
    actions out;
    const auto id = std::exchange(run_for_, 0);
    if (!ec) {
        handoffs_ = 0;
        if (waiters_.erase(id)) out.push_back({A::grant_run, id});
        else out.push_back({A::abandon_run});  // cannot happen (leave() moves the run on); nothing is kept
    } else if (!retryable) {
        if (waiters_.erase(id)) out.push_back({A::fail_waiter, id, 0, false, ec});
    }
    // Retryable: the same waiter, still the oldest, gets the next run once connected.
    advance(out);
    return out;
}

lease_queue::actions lease_queue::on_connected()
{
    actions out;
    advance(out);
    return out;
}

lease_queue::actions lease_queue::on_session_final(error_code ec)
{
    actions out;
    if (std::exchange(run_for_, 0)) out.push_back({A::abandon_run});
    for (const auto& [id, w] : waiters_) out.push_back({A::fail_waiter, id, 0, false, ec});
    waiters_.clear();
    return out;
}

lease_queue::actions lease_queue::on_session_renewed(bool keep_waiters)
{
    actions out;
    if (std::exchange(run_for_, 0)) out.push_back({A::abandon_run});
    handoffs_ = 0;
    looking_ = nobody_waits_ = false;  // the look's watch failed with the old session
    for (auto it = waiters_.begin(); it != waiters_.end();) {
        if (keep_waiters && !it->second.one_look) {
            ++it;
            continue;
        }
        out.push_back({A::fail_waiter, it->first, 0, false, zklock::error::session_expired});
        it = waiters_.erase(it);
    }
    advance(out);  // (a run starts once the new session is connected)
    return out;
}

lease_queue::actions lease_queue::on_followers_none()
{
    nobody_waits_ = true;
    return {};
}

lease_queue::actions lease_queue::on_followers_changed(bool leases_held)
{
    actions out;
    looking_ = false;
    nobody_waits_ = false;
    if (leases_held && limit_ > 0) {  // look again now, so that the next hand-off beyond the bound knows
        looking_ = true;
        out.push_back({A::look_for_followers});
    }
    return out;
}

// Waiter `id` goes (served or gone). When the current run is its, the run goes on for the next waiter if
// it wants the same leases (it keeps its place in the internal lock's queue), else it is given up.
void lease_queue::leave(actions& out, std::uint64_t id)
{
    waiters_.erase(id);
    if (id != run_for_) return;
    const bool same = !waiters_.empty() && !run_one_look_ && waiters_.begin()->second.n == run_n_ &&
                      !waiters_.begin()->second.one_look;
    if (same) {
        run_for_ = waiters_.begin()->first;
        return;
    }
    run_for_ = 0;
    out.push_back({A::abandon_run});
}

// The oldest waiter gets a run of the protocol; the others wait here, behind it.
void lease_queue::advance(actions& out)
{
    if (run_for_ || waiters_.empty() || !connected_) return;
    const auto& [id, w] = *waiters_.begin();
    run_for_ = id;
    run_n_ = w.n;
    run_one_look_ = w.one_look;
    out.push_back({A::start_run, id, w.n, w.one_look});
}

}  // namespace zklock::detail
