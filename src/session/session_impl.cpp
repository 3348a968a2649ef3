// The session's lifecycle: opening the C client's handle, following its state to the final one, closing
// it off the event loop; the timing knobs the lock recipes read, the keepalive that keeps a holder's touch
// fresh, and fault injection for tests. The C client wrapper is in c_client.*, the pump in pump.cpp, the
// typed operations and watches in operations.cpp, the public handles in session.cpp.
#include "c_client.hpp"
#include "core/effects.hpp"
#include "core/session_timing.hpp"

#include <zklock/validation.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <unistd.h>

namespace zklock::detail {

std::string default_owner()
{
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "unknown:" + std::to_string(::getpid());
    return std::string(host) + ":" + std::to_string(::getpid());
}

// --- Session lifecycle --------------------------------------------------------------------------
session_impl::session_impl(executor_type e, session_config c, const port_maker& make_port)
    : ex(std::move(e)), cfg(std::move(c)), sock_(ex), timer_(ex), connect_timer_(ex), keepalive_timer_(ex),
      handshake_timer_(ex), resolve_timer_(ex),
      link_(std::make_shared<helper_link>(ex))
{
    port_ = make_port ? make_port(*this) : make_c_port(*this);
    log = std::make_shared<log_target>(log_target{cfg.log, cfg.log_threshold});
    if (cfg.owner.empty()) cfg.owner = default_owner();
    init_c_log_level();
    if (cfg.log) raise_c_log_level(cfg.log_threshold);
}

session_impl::~session_impl() { link_->detach(); }

error_code session_impl::refusal() const
{
    switch (state) {
    case session_state::idle: return zklock::error::not_connected;
    case session_state::expired: return zklock::error::session_expired;
    case session_state::auth_failed: return zklock::error::auth_failed;
    case session_state::closed: return zklock::error::session_closed;
    default: return port_->is_open() ? error_code{} : error_code(zklock::error::not_connected);
    }
}

error_code session_impl::refusal(std::string_view path, bool sequential) const
{
    if (auto ec = refusal()) return ec;
    return valid_path(path, sequential) ? error_code{} : error_code(zklock::error::invalid_path);
}

void session_impl::connect(handler<> h)
{
    if (state != session_state::idle) {
        post_completion(std::move(h), is_final(state) ? error_code(zklock::error::already_closed)
                                                      : error_code(asio::error::already_started));
        return;
    }
    std::string why;
    if (auto ec = check_config(cfg, &why)) {
        log->write(log_level::error, "cannot connect: " + why);
        state = session_state::closed;
        close_finished_ = true;  // nothing was opened: a later async_close completes at once
        close_confirmed_ = true;
        post_completion(std::move(h), ec);
        return;
    }
    connect_handler_ = std::move(h);
    // Abandoning a connect closes the session: terminal cancellation only (core/effects.hpp). The signal's
    // thread only decides; the close runs on the executor, and only while this connect is still pending.
    if (auto slot = asio::get_associated_cancellation_slot(connect_handler_); slot.is_connected())
        slot.assign([w = weak_from_this(), home = ex](asio::cancellation_type t) {
            if (on_cancellation(static_cast<unsigned>(t), op_nature::open, true) == cancel_outcome::ignore) return;
            asio::post(home, [w] {
                auto s = w.lock();
                if (!s || !s->connect_handler_) return;
                s->post_completion(std::move(s->connect_handler_), error_code(asio::error::operation_aborted));
                s->close();
            });
        });
    set_state(session_state::connecting);
    connect_timer_.expires_after(cfg.connect_timeout);
    connect_timer_.async_wait([w = weak_from_this()](error_code ec) {
        auto s = w.lock();
        if (ec || !s || s->state != session_state::connecting || s->id != 0) return;
        s->log->write(log_level::error, "no ZooKeeper server answered at " + s->cfg.hosts + " within " +
                                            std::to_string(s->cfg.connect_timeout.count()) + " ms");
        s->close(zklock::error::connect_timeout);
    });
    port_->open(cfg.hosts);
}

void session_impl::set_state(session_state s)
{
    if (s == state) return;
    state = s;
    if (s != session_state::connected)  // a break is noticed: what a fault held completes first, in order
        for (auto& deliver : std::exchange(held_answers_, {})) deliver();
    if (cfg.observer) {
        lock_event e;
        e.type = lock_event_type::state_changed, e.state = s;
        asio::post(ex, [observer = cfg.observer, e] { observer(e); });
    }
    for (auto it = state_waiters_.begin(); it != state_waiters_.end();) {
        if (it->from != s) {
            post_completion(std::move(it->h), error_code{}, s);
            it = state_waiters_.erase(it);
        } else {
            ++it;
        }
    }
    if (s == session_state::connecting)  // however the connection was lost. Posted: this may run inside the C client
        asio::post(ex, [w = weak_from_this()] {
            if (auto self = w.lock()) self->follow_names();
        });
    if (!listeners_.empty())
        asio::post(ex, [w = weak_from_this(), s] {
            auto self = w.lock();
            if (!self) return;
            // Copy: a listener may unsubscribe itself or others.
            auto ls = self->listeners_;
            for (auto& [lid, fn] : ls)
                if (self->listeners_.count(lid)) fn(s);
        });
}

void session_impl::on_session_event(session_state s)
{
    if (s == session_state::connected) {
        id = port_->credentials().first;
        negotiated = port_->negotiated_timeout();
        warn_if_grace_clamped();
        ++connections;
        handshake_timer_.cancel();
        set_state(s);
        // A holder's touch may be stale after the reconnect. Posted: no request from inside the C client.
        if (keepalive_refs_ > 0)
            asio::post(ex, [w = weak_from_this()] {
                if (auto self = w.lock()) self->keepalive_tick();
            });
        asio::post(ex, [w = weak_from_this()] {
            if (auto self = w.lock()) self->follow_ensemble();
        });
        if (connect_handler_) {
            connect_timer_.cancel();
            post_completion(std::move(connect_handler_), error_code{});
        }
        return;
    }
    if (is_final(s)) {
        // Leave zookeeper_process first: closing tears the handle down.
        asio::post(ex, [w = weak_from_this(), s] {
            auto self = w.lock();
            if (!self) return;
            if (s == session_state::expired && self->renews_on_expiry()) return self->renew();
            self->enter_final(s, s == session_state::expired ? error_code(zklock::error::session_expired)
                                                             : error_code(zklock::error::auth_failed));
        });
        return;
    }
    if (state == session_state::connected) set_state(session_state::connecting);
}

std::string session_impl::id_text() const
{
    char sid[32];
    std::snprintf(sid, sizeof sid, "0x%llx", static_cast<unsigned long long>(id));
    return sid;
}

void session_impl::enter_final(session_state s, error_code why)
{
    if (is_final(state)) return;
    const auto sid = id_text();
    if (why == zklock::error::session_closed) log->write(log_level::info, "ZooKeeper session " + sid + " closed");
    else log->write(log_level::warning, "ZooKeeper session " + sid + " ended: " + why.message());

    set_state(s);
    connect_timer_.cancel();
    if (connect_handler_) post_completion(std::move(connect_handler_), why);
    keepalive_timer_.cancel();
    resolve_timer_.cancel();
    let_go_of_handle(why, [w = weak_from_this()](bool server_ended_it) {
        if (auto self = w.lock()) self->on_handle_closed(server_ended_it);
    });
}

// Answers everything that waits on the C client now (its own completions later only free memory), and
// closes the handle off the loop; `then` runs on the executor once it is closed.
void session_impl::let_go_of_handle(error_code why, std::function<void(bool)> then)
{
    for (auto& [rid, r] : std::exchange(inflight_, {})) {
        count_unanswered(*r, why);
        r->fail(why);
        r->owner.reset();
    }
    // Deletes held back for a batch are not sent to a handle let go of: their nodes go with the session
    // (close() sends them first, to be flushed as the handle closes).
    for (auto& r : std::exchange(removes_, {})) post_completion(std::move(r.h), why);
    for (auto& r : std::exchange(removes_ahead_, {})) post_completion(std::move(r.h), why);
    for (auto& c : std::exchange(creates_, {})) post_completion(std::move(c.h), why, std::string{}, stat{});
    for (auto& [wid, w] : std::exchange(watches_, {})) {
        w->at = watch_state::phase::failed;
        w->error = why;
        if (w->waiter) post_completion(std::move(w->waiter), why, watch_event{});
    }
    port_->close(std::move(then));
}

void session_impl::on_handle_closed(bool server_ended_it)
{
    close_finished_ = true;
    close_confirmed_ = server_ended_it;
    for (auto& [wid, h] : std::exchange(close_waiters_, {})) post_completion(std::move(h), error_code{});
    close_work_.reset();
}

void session_impl::close(error_code why)
{
    if (is_final(state)) return;
    // Handed to the C client, which flushes them as it closes (the creates held are moot).
    if (!removes_ahead_.empty()) removes_ = std::exchange(removes_ahead_, {});
    if (!removes_.empty()) send_removes();
    enter_final(session_state::closed, why);
}

void session_impl::close_and_wait(handler<> h)
{
    close();
    if (close_finished_) {
        post_completion(std::move(h), error_code{});
        return;
    }
    // A cancellation (any type) ends the wait, not the close, which was done above.
    const auto wid = next_close_waiter_++;
    if (auto slot = asio::get_associated_cancellation_slot(h); slot.is_connected())
        slot.assign([w = weak_from_this(), home = ex, wid](asio::cancellation_type) {
            asio::post(home, [w, wid] {
                auto s = w.lock();
                if (!s) return;
                if (auto it = s->close_waiters_.find(wid); it != s->close_waiters_.end()) {
                    s->post_completion(std::move(it->second), error_code(asio::error::operation_aborted));
                    s->close_waiters_.erase(it);
                }
            });
        });
    close_waiters_.emplace(wid, std::move(h));
    if (!close_work_) close_work_.emplace(asio::prefer(ex, asio::execution::outstanding_work.tracked));
}

void session_impl::wait_state(session_state from, handler<session_state> h)
{
    if (state != from) {
        post_completion(std::move(h), error_code{}, state);
        return;
    }
    if (is_final(state)) {  // nothing can change any more: waiting would never end
        post_completion(std::move(h), error_code(zklock::error::already_closed), state);
        return;
    }
    auto wid = next_state_waiter_++;
    if (auto slot = asio::get_associated_cancellation_slot(h); slot.is_connected())
        slot.assign([w = weak_from_this(), home = ex, wid](asio::cancellation_type) {
            asio::post(home, [w, wid] {
                auto self = w.lock();
                if (!self) return;
                auto& ws = self->state_waiters_;
                auto it = std::find_if(ws.begin(), ws.end(), [&](const state_waiter& x) { return x.id == wid; });
                if (it == ws.end()) return;
                self->post_completion(std::move(it->h), error_code(asio::error::operation_aborted), self->state);
                ws.erase(it);
            });
        });
    state_waiters_.push_back({wid, from, std::move(h)});
}

std::pair<std::int64_t, std::string> session_impl::credentials() const
{
    auto c = port_->credentials();
    if (c.first == 0) return {id, {}};
    return c;
}

std::uint64_t session_impl::subscribe(std::function<void(session_state)> fn)
{
    auto token = next_listener_++;
    listeners_.emplace(token, std::move(fn));
    return token;
}

void session_impl::unsubscribe(std::uint64_t token) { listeners_.erase(token); }

std::chrono::milliseconds session_impl::timeout() const
{
    return session_timeout_in_use(negotiated, cfg.session_timeout);
}

std::chrono::milliseconds session_impl::loss_grace() const
{
    return choose_loss_grace(cfg.loss_grace, timeout()).grace;
}

// check_config refused a grace above the bound of the timeout asked for; the server may negotiate a
// shorter one. Said once per negotiated timeout.
void session_impl::warn_if_grace_clamped()
{
    const auto choice = choose_loss_grace(cfg.loss_grace, negotiated);
    if (!choice.clamped || std::exchange(grace_warned_for_, negotiated) == negotiated) return;
    log->write(log_level::warning, "loss_grace " + std::to_string(cfg.loss_grace->count()) +
                                       " ms is above 7/12 of the session timeout the server negotiated (" +
                                       std::to_string(negotiated.count()) + " ms): using " +
                                       std::to_string(choice.grace.count()) +
                                       " ms, the longest grace that warns a holder before the session can expire");
}

std::chrono::milliseconds session_impl::keepalive_interval() const
{
    return detail::keepalive_interval(timeout(), loss_grace());
}

std::chrono::milliseconds session_impl::one_look_limit() const { return detail::one_look_limit(timeout()); }

void session_impl::finished(request_base* r, error_code ec)
{
    inflight_.erase(r->id);
    auto& kind = kind_stats(r->kind);
    kind.round_trip.record(zklock::clock::now() - r->sent_at);
    if (ec) ++kind.errors[error_name(ec)];
    // The deletes held back while this batch was out go now (posted: this runs inside the C client).
    if (r->id == newest_removes_ && !removes_.empty())
        asio::post(ex, [self = shared_from_this()] { self->send_removes(); });
    if (passed_the_leader(r->kind, ec) && r->sent_at > last_answered_send_) last_answered_send_ = r->sent_at;
}

// --- Statistics -------------------------------------------------------------------------------
void session_impl::count_unanswered(const request_base& r, error_code why)
{
    auto& kind = kind_stats(r.kind);
    ++kind.unanswered;
    ++kind.errors[error_name(why)];
}

request_stats& session_impl::kind_stats(const char* kind)
{
    for (auto& [k, st] : request_kinds_)
        if (k == kind) return st;
    return request_kinds_.emplace_back(kind, request_stats{}).second;
}

session_stats session_impl::snapshot() const
{
    session_stats out = stats;
    out.state = state;
    out.connections = connections;
    for (const auto& [kind, st] : request_kinds_) {
        auto& into = out.requests_by_kind[kind];
        into.sent += st.sent;
        for (const auto& [name, n] : st.errors) into.errors[name] += n;
        into.round_trip.merge(st.round_trip);
        into.unanswered += st.unanswered;
    }
    if (add_lock_gauges) add_lock_gauges(out);
    out.locks = lock_stats{};
    for (const auto& [label, st] : out.by_label) out.locks.merge(st);
    return out;
}

// --- Keepalive ----------------------------------------------------------------------------------
// The C client pings only after a third of the timeout without traffic, and a follower passes touches to
// the leader only when the leader pings it: a lock holder needs fresher touches than that, and needs to
// know when they were made (the send time of an answered request), which the C client's pings never say.
void session_impl::retain_keepalive()
{
    if (keepalive_refs_++ == 0) keepalive_tick();
}

void session_impl::release_keepalive()
{
    if (keepalive_refs_ > 0 && --keepalive_refs_ == 0) keepalive_timer_.cancel();
}

void session_impl::keepalive_tick()
{
    if (keepalive_refs_ == 0 || is_final(state)) return;
    const auto step = keepalive_due(zklock::clock::now(), last_answered_send_, keepalive_interval(),
                                    keepalive_in_flight_, state == session_state::connected);
    if (step.send) {
        keepalive_in_flight_ = true;
        ++stats.keepalives;
        // A sync, not a read: a follower answers reads by itself even when it has lost the leader, which
        // expires sessions; a sync is answered only through the leader.
        sync("/", [w = weak_from_this()](error_code) {
            if (auto self = w.lock()) {
                self->keepalive_in_flight_ = false;
                self->keepalive_tick();
            }
        });
    }
    keepalive_timer_.expires_at(step.wake_at);
    keepalive_timer_.async_wait([w = weak_from_this()](error_code ec) {
        if (auto self = w.lock(); self && !ec) self->keepalive_tick();
    });
}

// --- Fault injection (testing/faults.hpp) -------------------------------------------------------
void session_impl::hold_answer(std::function<void()> deliver)
{
    if (state != session_state::connected) return deliver();
    held_answers_.push_back(std::move(deliver));
}

std::optional<session_impl::fault_plan> session_impl::take_fault(const char* kind, bool answered)
{
    for (auto it = faults_.begin(); it != faults_.end(); ++it)
        if (it->kind == kind && (it->mode != fault_mode::drop_after_send) == answered) {
            auto f = std::move(*it);
            faults_.erase(it);
            return f;
        }
    return std::nullopt;
}

session_impl::fault_mode session_impl::answer_fault(const request_base& r)
{
    // An answer read behind the one a fault broke the connection at (the C client reads what arrived
    // together; that one is held, see held_answers_): on a real broken connection it would never arrive,
    // so it is lost too, and held behind it.
    if (!held_answers_.empty()) return fault_mode::lose_answer;
    if (faults_.empty()) return fault_mode::drop_after_send;
    auto f = take_fault(r.kind, true);
    if (!f) return fault_mode::drop_after_send;
    drop_connection();
    if (f->then) f->then();
    return f->mode;
}

}  // namespace zklock::detail
