// session::async_drain: performs drain_machine's actions. Everything here runs on the session's executor,
// except the entry point's cancellation binding (on the caller's thread, where the signal is emitted).
#include "drain.hpp"

#include "lock_base.hpp"

#include <atomic>
#include <utility>

namespace zklock::detail {

// A name of its own in the namespace: the library may compile in unity batches (ZKLOCK_UNITY_BUILD).
using drain_act = drain_action::type;

session_drain::session_drain(session_impl& s) : s_(s), timer_(s.ex) {}

void session_drain::start(std::shared_ptr<session_impl> keep, std::uint64_t id, clock_time deadline, handler<> h)
{
    if (!listener_)
        listener_ = s_.subscribe([w = weak_from_this()](session_state st) {
            auto self = w.lock();
            if (!self) return;
            if (is_final(st)) self->perform(self->machine_.session_ended(final_error(st)));
            else if (st == session_state::connected && std::exchange(self->confirm_when_connected_, false))
                // A turn later: the deletes that wait for this reconnect to go again were posted first,
                // and the sync must follow them.
                asio::post(self->s_.ex, [w] {
                    if (auto again = w.lock()) again->confirm_once_connected();
                });
        });
    callers_.emplace(id, std::move(h));
    const auto over = is_final(s_.state) ? final_error(s_.state) : error_code{};
    auto out = machine_.start(id, deadline, anything_held(), over);
    if (machine_.at() != drain_machine::phase::done) keep_ = std::move(keep);
    perform(out);
}

void session_drain::cut_short(std::uint64_t id) { perform(machine_.cut_short(id, anything_held())); }

void session_drain::after_release()
{
    if (machine_.at() == drain_machine::phase::waiting && !anything_held()) perform(machine_.holders_gone());
}

void session_drain::perform(const drain_machine::actions& out)
{
    for (const auto& a : out) {
        switch (a.what) {
        case drain_act::stop_new_work: stop_new_work(); break;
        case drain_act::arm_deadline:
            timer_.expires_at(a.at);
            timer_.async_wait([w = weak_from_this()](error_code ec) {
                auto self = w.lock();
                if (!self || ec || self->ended_with_session()) return;
                self->perform(self->machine_.deadline_passed(self->anything_held()));
            });
            break;
        case drain_act::confirm: confirm_once_connected(); break;
        case drain_act::close:
            timer_.cancel();
            confirm_when_connected_ = false;
            if (anything_held())
                s_.log->write(log_level::warning,
                              std::string("zklock: drain: ") +
                                  (a.ec == zklock::error::timeout ? "the deadline passed"
                                   : a.ec                         ? "a caller cut the drain short"
                                                                  : "closing") +
                                  " with locks still held; closing the session releases them (their holders are told "
                                  "session_closed)");
            s_.close_and_wait([w = weak_from_this()](error_code) {
                if (auto self = w.lock()) self->perform(self->machine_.closed(self->s_.close_confirmed()));
            });
            break;
        case drain_act::complete:
        case drain_act::abort:
            if (auto it = callers_.find(a.id); it != callers_.end()) {
                s_.post_completion(std::move(it->second), a.what == drain_act::abort
                                                              ? error_code(asio::error::operation_aborted)
                                                              : a.ec);
                callers_.erase(it);
            }
            break;
        }
    }
    // Nobody waits any more: let go of the session, on its executor and after this turn (this object is
    // the session's own, through its registry).
    if (callers_.empty() && keep_) asio::post(s_.ex, [k = std::move(keep_)] {});
}

void session_drain::confirm_once_connected()
{
    if (s_.state != session_state::connected) {
        confirm_when_connected_ = true;  // the state listener sends it
        return;
    }
    // Answered after every delete sent before it: the releases complete before the close.
    s_.sync("/", [w = weak_from_this()](error_code ec) {
        if (auto self = w.lock(); self && !self->ended_with_session()) self->perform(self->machine_.confirmed(ec));
    });
}

bool session_drain::ended_with_session()
{
    // The session may have ended before its state listener ran: that is what the callers hear.
    if (!is_final(s_.state)) return false;
    perform(machine_.session_ended(final_error(s_.state)));
    return true;
}

void session_drain::stop_new_work()
{
    auto& reg = registry_of(s_);
    reg.draining = true;
    s_.log->write(log_level::info, "zklock: drain: no new locks on this session; waiters cancelled, holders asked to let go");
    // Each lock's drain posts its completions, and may add or drop keys: take the states first.
    std::vector<std::shared_ptr<lock_base>> states;
    for (auto& [key, w] : reg.states)
        if (auto q = w.lock()) states.push_back(std::move(q));
    for (auto& q : states) q->drain();
}

bool session_drain::anything_held() const
{
    for (const auto& [key, w] : registry_of(s_).states)
        if (auto q = w.lock(); q && q->holding()) return true;
    return false;
}

void note_release(session_impl& s)
{
    if (!s.extension) return;
    if (auto& d = registry_of(s).drain) d->after_release();
}

void async_drain(const std::shared_ptr<session_impl>& s, std::chrono::steady_clock::duration grace, handler<> h)
{
    if (!s) return complete_without_session(std::move(h), error_code(zklock::error::no_session));
    static std::atomic<std::uint64_t> next_id{1};
    const auto id = next_id.fetch_add(1, std::memory_order_relaxed);
    const auto deadline = zklock::clock::now() + std::max(grace, grace.zero());
    // Bound here, on the caller's thread, where the signal is emitted; the drain is reached on the
    // session's executor only. Total cancellation is not supported: waiters were already failed.
    if (auto slot = asio::get_associated_cancellation_slot(h); slot.is_connected())
        slot.assign([w = std::weak_ptr<session_impl>(s), ex = s->ex, id](asio::cancellation_type t) {
            if ((t & (asio::cancellation_type::terminal | asio::cancellation_type::partial)) == asio::cancellation_type::none)
                return;
            asio::post(ex, [w, id] {
                if (auto ss = w.lock(); ss && ss->extension)
                    if (auto& d = registry_of(*ss).drain) d->cut_short(id);
            });
        });
    auto ex = s->ex;
    asio::dispatch(ex, [s, id, deadline, h = std::move(h)]() mutable {
        s->renewal_stopped = true;  // the session is on its way out: an expiry now ends it
        auto& reg = registry_of(*s);
        if (!reg.drain) reg.drain = std::make_shared<session_drain>(*s);
        reg.drain->start(s, id, deadline, std::move(h));
    });
}

}  // namespace zklock::detail
