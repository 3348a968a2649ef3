// The semaphore's local side: waiters in order, one protocol run at a time for the first of them, leases
// handed between coroutines without a round trip (bounded), the loss signal of each lease.
#include "lease_run.hpp"

#include "core/node_data.hpp"

#include <algorithm>

namespace zklock::detail {

semaphore_queue::semaphore_queue(std::shared_ptr<session_impl> session, std::string p, std::size_t max,
                                 semaphore_options o, std::shared_ptr<lock_queue> lock)
    : lock_base(std::move(session)), path(std::move(p)), max_permits(max), opts(std::move(o)),
      internal_lock(std::move(lock)), machine_(opts.local_handoff_limit)
{
    count_into(path, opts.stats_label);
}

void semaphore_queue::subscribe()
{
    listener_ = s->subscribe([w = weak_from_this()](session_state st) {
        auto q = w.lock();
        if (!q) return;
        if (renewed(*q->s, st)) {
            // The old session's lease nodes are gone: holders are told, and keep a lost guard until they
            // release it. Waiters served but held back wait again (or fail) with the others.
            const bool keep = requeues(*q->s);
            for (auto& [holder, l] : q->held_) {
                l.cut_off = true;
                q->lose(holder, zklock::error::session_expired);  // tells its loss listeners
                // Its node is gone: no revocation can reach it any more (as a mutex's holder is told).
                q->drop_listeners(holder);
            }
            auto back = std::exchange(q->held_back_, {});
            q->perform(q->machine().on_session_renewed(keep));
            for (auto& b : back) {
                if (keep) q->perform(q->machine().acquire(b.id, b.leases.size(), false));
                else q->complete(b.id, zklock::error::session_expired, {});
            }
        } else if (is_final(st)) {
            const auto ec = final_error(st);
            for (auto& [holder, l] : q->held_) q->lose(holder, ec);
            for (auto& b : std::exchange(q->held_back_, {})) {
                for (auto& l : b.leases) delete_node(q->s, l.node, {});
                q->complete(b.id, ec, {});
            }
            q->perform(q->machine().on_session_final(ec));
        } else if (st == session_state::connected) {
            q->confirm_touch_for_held_back();
            q->perform(q->machine().on_connected());
        }
    });
}

semaphore_queue::~semaphore_queue()
{
    forget_shared_state(*s, "semaphore:" + path);
    s->unsubscribe(listener_);
    end_run();
    for (auto& l : run_leases_) delete_node(s, l.node, {});
    for (auto& b : held_back_)
        for (auto& l : b.leases) delete_node(s, l.node, {});
    for (auto& [holder, l] : held_) delete_node(s, l.lease.node, {});
    if (keepalive_) s->release_keepalive();
    for (; !waiters_.empty(); waiters_.pop_front()) {
        auto& w = waiters_.front();
        meter.acquire_done(asio::error::operation_aborted, w.started, now(), false);
        std::visit([&](auto& h) { s->post_completion(std::move(h), error_code(asio::error::operation_aborted), {}); },
                   w.h);
    }
    for (auto& [id, h] : lost_waiters_.take_all())
        s->post_completion(std::move(h), error_code(asio::error::operation_aborted), error_code{});
    for (auto& [id, h] : revoke_waiters_.take_all()) s->post_completion(std::move(h), error_code(asio::error::operation_aborted));
}

lease_queue& semaphore_queue::machine()
{
    machine_.observe(s->state == session_state::connected);
    return machine_;
}

void semaphore_queue::acquire(std::uint64_t id, std::size_t n, deadline d, lease_length lease, completion h)
{
    error_code ec = path == "/" ? error_code(zklock::error::invalid_path) : acquire_refusal(path + "/leases");
    if (!ec && (n == 0 || n > max_permits || n > max_permits_at_once)) ec = zklock::error::invalid_permit_count;
    if (!ec && lease && *lease <= lease->zero()) ec = zklock::error::invalid_lease;
    waiters_.emplace(id, waiter{std::move(h), lease, now()});
    if (ec) return complete(id, ec, {});
    const bool one_look = clock().start_waiter(id, d, now(), s->one_look_limit());
    rearm();
    perform(machine().acquire(id, n, one_look));
}

void semaphore_queue::cancel_waiter(std::uint64_t id, error_code why)
{
    if (!waiters_.find(id)) return;
    auto it = std::find_if(held_back_.begin(), held_back_.end(), [id](const held_back& b) { return b.id == id; });
    if (it == held_back_.end()) return perform(machine().cancel(id, why));
    // Served already, its leases held back: they are free again.
    auto b = std::move(*it);
    held_back_.erase(it);
    complete(id, why, {});
    for (auto& l : b.leases) free_lease({std::move(l), b.local, {}, nullptr});
}

void semaphore_queue::drain()
{
    std::vector<std::uint64_t> ids;
    waiters_.for_each([&](std::uint64_t id, const waiter&) { ids.push_back(id); });
    for (auto id : ids) cancel_waiter(id, zklock::error::draining);
    std::vector<std::uint64_t> holders;
    for (const auto& [holder, l] : held_)
        if (!l.revoke_requested) holders.push_back(holder);
    for (auto holder : holders) revoked(holder);
}

void semaphore_queue::alarm_rang(const clock_alarm& a)
{
    if (a.what == clock_alarm::type::deadline) cancel_waiter(a.id, zklock::error::timeout);
    else if (a.what == clock_alarm::type::own_watch) ensure_watched(a.id);
}

void semaphore_queue::perform(const lease_queue::actions& out, freed_lease* freed)
{
    using A = lease_action::type;
    for (const auto& a : out) {
        switch (a.what) {
        case A::start_run:
            run_ = std::make_shared<lease_run>(shared_from_this(), a.n, a.one_look);
            run_->start();
            break;
        case A::abandon_run:
            end_run();
            for (auto& l : std::exchange(run_leases_, {})) delete_node(s, l.node, {});
            break;
        case A::grant_run: grant(a.id, std::exchange(run_leases_, {}), 0); break;
        case A::pass_lease: {
            std::vector<lease_node> one;
            one.push_back(std::move(freed->lease));
            grant(a.id, std::move(one), freed->local + 1);
            if (freed->done) freed->done->complete(*s, {});
            break;
        }
        case A::delete_lease:
            if (freed->lost || !freed->done) {  // the release hears the loss now; the node goes in the background
                if (freed->done) freed->done->complete(*s, freed->lost);
                delete_node(s, freed->lease.node, {});
            } else {
                delete_node(s, freed->lease.node, [ss = s, done = freed->done](error_code ec) { done->complete(*ss, ec); });
            }
            break;
        case A::fail_waiter: complete(a.id, a.ec, {}); break;
        case A::look_for_followers: look_for_followers(); break;
        }
    }
}

void semaphore_queue::complete(std::uint64_t id, error_code ec, std::vector<guard> leases, bool local_grant,
                               fencing_token token)
{
    auto taken = waiters_.take(id);
    if (!taken) return;
    auto& w = *taken;
    meter.acquire_done(ec, w.started, now(), local_grant, token);
    clock().stop_waiter(id);
    rearm();
    if (auto* one = std::get_if<handler<guard>>(&w.h))
        s->post_completion(std::move(*one), ec, leases.empty() ? guard{} : std::move(leases.front()));
    else
        s->post_completion(std::move(std::get<handler<std::vector<guard>>>(w.h)), ec, std::move(leases));
}

void semaphore_queue::end_run()
{
    if (auto r = std::exchange(run_, nullptr)) r->abandon();
}

void semaphore_queue::on_run_done(const lease_run* run, error_code ec, std::vector<lease_node> leases)
{
    if (run != run_.get()) {
        for (auto& l : leases) delete_node(s, l.node, {});
        return;
    }
    run_.reset();
    run_leases_ = std::move(leases);
    perform(machine().on_run_done(ec, is_retryable(ec) || expired_into_renewal(*s, ec)));
}

void semaphore_queue::grant(std::uint64_t id, std::vector<lease_node> leases, std::uint64_t local)
{
    if (loss_clock_ran_out(now())) {  // no guard is handed out already lost
        held_back_.push_back({id, std::move(leases), local});
        return confirm_touch_for_held_back();
    }
    std::vector<guard> guards;
    const auto at = now();
    auto lease = std::chrono::steady_clock::duration::zero();  // none (a plain duration: GCC 12 misreads the optional)
    if (const auto* w = waiters_.find(id); w && w->lease) lease = *w->lease;
    for (auto& l : leases) {
        const auto holder = ++holder_gen_;
        guards.emplace_back(shared_from_this(), holder, l.node, fencing_token{l.czxid, local}, at);
        const bool had_lease = l.data_version != 0;  // a node handed on shows its last holder's lease
        held_[holder] = held_lease{std::move(l), local, std::make_unique<watch>(), {}};
        meter.hold_started(holder, at);
        clock().start_own_watch(now() + std::chrono::milliseconds(local_queue::own_watch_delay_ms), holder);
        if (lease > lease.zero()) start_lease(holder, at + lease);  // from the grant, as the guard says
        if (lease > lease.zero() || had_lease) publish_lease(holder);
    }
    const auto token = guards.empty() ? fencing_token{} : guards.front().token();
    complete(id, {}, std::move(guards), local > 0, token);
    update_keepalive();
    arm_loss_clock();
}

void semaphore_queue::confirm_touch_for_held_back()
{
    if (confirming_ || held_back_.empty() || s->state != session_state::connected) return;
    confirming_ = true;
    confirm_touch([w = weak_from_this()] {
        auto q = w.lock();
        if (!q) return;
        q->confirming_ = false;
        q->grant_held_back();
    });
}

void semaphore_queue::grant_held_back()
{
    if (held_back_.empty()) return;
    if (loss_clock_ran_out(now())) return confirm_touch_for_held_back();  // not answered, or not in time: again
    for (auto& b : std::exchange(held_back_, {})) grant(b.id, std::move(b.leases), b.local);
}

void semaphore_queue::update_keepalive()
{
    if (held_.empty() == !keepalive_) return;
    keepalive_ = !held_.empty();
    if (keepalive_) s->retain_keepalive();
    else s->release_keepalive();
}

void semaphore_queue::ensure_watched(std::uint64_t holder)
{
    auto it = held_.find(holder);
    if (it == held_.end() || std::exchange(it->second.watched, true)) return;
    clock().stop_own_watch(holder);
    watch_lease(holder);
}

// A watch on each lease node tells its holder if someone deletes it.
void semaphore_queue::watch_lease(std::uint64_t holder)
{
    auto& l = held_.at(holder);
    s->get_data(l.lease.node, l.own.get(), [w = weak_from_this(), holder](error_code ec, std::string data, stat) {
        auto self = w.lock();
        if (!self || !self->held_.count(holder)) return;
        if (ec == zk_errc::no_node) return self->lose(holder, zklock::error::lock_node_deleted);
        if (is_retryable(ec)) {
            self->s->wait_state(session_state::connecting, [w, holder](error_code, session_state st) {
                if (auto q = w.lock(); q && st == session_state::connected && q->held_.count(holder)) q->watch_lease(holder);
            });
            return;
        }
        if (ec) return;
        if (data == revoke_request) {  // Curator's Revoker writes it into the node
            if (!self->held_.at(holder).revoke_requested) self->meter.revocation_received();
            self->revoked(holder);
        }
        self->held_.at(holder).own->async_wait([w, holder](error_code wec, watch_event ev) {
            auto q = w.lock();
            if (!q || wec || !q->held_.count(holder)) return;
            if (ev.type == watch_event_type::deleted) q->lose(holder, zklock::error::lock_node_deleted);
            else q->watch_lease(holder);
        });
    });
}

void semaphore_queue::lose(std::uint64_t holder, error_code why)
{
    auto it = held_.find(holder);
    if (it == held_.end()) return;
    if (!loss_replaces(it->second.lost, why)) return;
    if (!it->second.lost) meter.lost(why);  // counted once a hold, at its first reason
    it->second.lost = why;
    losses.set(holder, why);
    for (auto& [id, h] : lost_waiters_.take(holder)) s->post_completion(std::move(h), error_code{}, why);
}

void semaphore_queue::release(std::uint64_t holder, release_completion done)
{
    meter.hold_ended(holder, now());
    stop_lease(holder);
    losses.forget(holder);
    if (expired_.erase(holder)) {  // the lease went on when it ran out
        done.complete(*s, zklock::error::lease_expired);
        return;
    }
    auto it = held_.find(holder);
    if (it == held_.end()) {
        done.complete(*s, zklock::error::not_held);
        return;
    }
    auto l = take(it);
    const auto lost = is_final(s->state) ? final_error(s->state) : l.lost;
    free_lease({std::move(l.lease), l.local, lost, done.share()});
}

semaphore_queue::held_lease semaphore_queue::take(std::map<std::uint64_t, held_lease>::iterator it)
{
    const auto holder = it->first;
    auto l = std::move(it->second);
    held_.erase(it);
    clock().stop_own_watch(holder);
    drop_listeners(holder);
    if (held_.empty()) cancel_loss_clock();
    update_keepalive();
    return l;
}

// Enforced here, whatever the holder's code is doing: its listeners hear lease_expired, and the lease
// goes on as a release would pass it.
void semaphore_queue::lease_ran_out(std::uint64_t holder)
{
    auto it = held_.find(holder);
    if (it == held_.end() || lost(holder)) return;
    s->log->write(log_level::warning,
                  "zklock: a permit of the semaphore " + path + " was held past its lease; it went back to the pool");
    meter.hold_ended(holder, now(), true);
    lose(holder, zklock::error::lease_expired);
    auto l = take(it);
    expired_.insert(holder);
    free_lease({std::move(l.lease), l.local, {}, nullptr});
}

void semaphore_queue::free_lease(freed_lease l)
{
    perform(machine().lease_freed(!l.lost), &l);
}

// The answer feeds the machine: nobody else waits, or (the watch fired, or the look failed) unknown again.
void semaphore_queue::look_for_followers()
{
    s->get_children(path + "/locks", &followers_,
                    [w = weak_from_this()](error_code ec, std::vector<std::string> names, stat) {
                        auto q = w.lock();
                        if (!q) return;
                        if (ec) return q->perform(q->machine().on_followers_changed(false));
                        if (!lease_waiter_present(names, q->internal_lock->node_name()))
                            q->perform(q->machine().on_followers_none());
                        q->followers_.async_wait([w](error_code wec, watch_event) {
                            if (auto qq = w.lock(); qq && !wec)
                                qq->perform(qq->machine().on_followers_changed(!qq->held_.empty()));
                        });
                    });
}

void semaphore_queue::leases_changed()
{
    for (const auto& [holder, l] : held_) publish_lease(holder);
}

void semaphore_queue::publish_lease(std::uint64_t holder)
{
    auto& l = held_.at(holder).lease;
    s->set_data(l.node, encode_node_data(s->cfg.owner, lease_end_ms(holder), max_permits), l.data_version,
                [w = weak_from_this(), holder](error_code ec, stat st) {
                    auto q = w.lock();
                    if (!q || ec || !q->held_.count(holder)) return;  // bad_version: a revocation was written
                    q->held_.at(holder).lease.data_version = st.version;
                });
}

void semaphore_queue::drop_listeners(std::uint64_t holder)
{
    for (auto& [id, h] : lost_waiters_.take(holder))
        s->post_completion(std::move(h), error_code(asio::error::operation_aborted), error_code{});
    for (auto& [id, h] : revoke_waiters_.take(holder))
        s->post_completion(std::move(h), error_code(asio::error::operation_aborted));
}

void semaphore_queue::revoked(std::uint64_t holder)
{
    held_.at(holder).revoke_requested = true;
    for (auto& [id, h] : revoke_waiters_.take(holder)) s->post_completion(std::move(h), error_code{});
}

void semaphore_queue::wait_revoked(std::uint64_t id, std::uint64_t holder, handler<> h)
{
    auto it = held_.find(holder);
    if (it == held_.end()) return s->post_completion(std::move(h), error_code(asio::error::operation_aborted));
    if (it->second.revoke_requested) return s->post_completion(std::move(h), error_code{});
    revoke_waiters_.add(id, holder, std::move(h));
    ensure_watched(holder);
}

void semaphore_queue::cancel_revoked(std::uint64_t id)
{
    if (handler<> h; revoke_waiters_.remove(id, &h)) s->post_completion(std::move(h), error_code(asio::error::operation_aborted));
}

void semaphore_queue::wait_lost(std::uint64_t id, std::uint64_t holder, handler<error_code> h)
{
    if (expired_.count(holder)) return s->post_completion(std::move(h), error_code{}, error_code(zklock::error::lease_expired));
    if (!held_.count(holder)) return s->post_completion(std::move(h), error_code(asio::error::operation_aborted), error_code{});
    if (auto why = lost(holder)) return s->post_completion(std::move(h), error_code{}, why);
    lost_waiters_.add(id, holder, std::move(h));
    ensure_watched(holder);
}

void semaphore_queue::cancel_lost(std::uint64_t id)
{
    if (handler<error_code> h; lost_waiters_.remove(id, &h))
        s->post_completion(std::move(h), error_code(asio::error::operation_aborted), error_code{});
}

error_code semaphore_queue::lost(std::uint64_t holder) const
{
    if (expired_.count(holder)) return zklock::error::lease_expired;
    auto it = held_.find(holder);
    if (it == held_.end()) return {};
    if (is_final(s->state)) return final_error(s->state);
    return it->second.lost;
}

void semaphore_queue::add_gauges(lock_stats& into) const
{
    into.holders += held_.size();
    into.waiters += waiters_.size();
    into.contenders += (run_ || !held_.empty()) ? 1 : 0;  // a lease run's nodes, or leases held
}

// The loss clock (lock_base) ran out: every lease is told.
void semaphore_queue::grace_passed()
{
    std::vector<std::uint64_t> holders;
    for (auto& [h, l] : held_) holders.push_back(h);
    for (auto h : holders) lose(h, zklock::error::ownership_uncertain);
}

}  // namespace zklock::detail
