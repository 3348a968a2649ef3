// What every recipe's per-session, per-path state offers to its guards, and the pieces the recipes share:
// the pending release, the background delete, the session-end errors.
#pragma once

#include <zklock/guard.hpp>

#include "core/lock_clock.hpp"
#include "registry.hpp"
#include "../session/session_impl.hpp"
#include "lock_meter.hpp"
#include "loss_board.hpp"

#include <zklock/detail/timer.hpp>

#include <atomic>
#include <functional>
#include <optional>

namespace zklock::detail {

/// A release's completion, completed once: by ZooKeeper's answer, or earlier by a cancellation (the node
/// is then given up in the background). Shared with the cancellation slot, which holds it weakly.
struct pending_release {
    explicit pending_release(handler<> handler) : h(std::move(handler)) {}
    handler<> h;
    void complete(session_impl& s, error_code ec)
    {
        if (h) s.post_completion(std::move(h), ec);
    }
};

/// What a recipe's release() completes: nothing (a dropped guard), the caller's handler, or a
/// pending_release that a cancellation slot shares. The handler is put in a pending_release only when it
/// must outlive the call (the release waits for ZooKeeper's answer): a release that a local hand-off
/// completes at once allocates nothing for it.
class release_completion {
public:
    release_completion() = default;
    explicit release_completion(handler<> h) : h_(std::move(h)) {}
    explicit release_completion(std::shared_ptr<pending_release> shared) : shared_(std::move(shared)) {}

    /// Whether someone waits for the release's answer.
    bool awaited() const noexcept { return shared_ || h_; }
    /// The completion, shared from now on (null if nobody waits).
    std::shared_ptr<pending_release> share()
    {
        if (!shared_ && h_) shared_ = std::make_shared<pending_release>(std::move(h_));
        return shared_;
    }
    void complete(session_impl& s, error_code ec)
    {
        if (shared_) shared_->complete(s, ec);
        else if (h_) s.post_completion(std::move(h_), ec);
    }

private:
    handler<> h_;
    std::shared_ptr<pending_release> shared_;
};

/// The guard's side of a recipe. Every member function runs on the session's executor, except new_id.
class lock_base {
public:
    explicit lock_base(std::shared_ptr<session_impl> session) : s(std::move(session)), timer_(s->ex) {}
    virtual ~lock_base() = default;
    lock_base(const lock_base&) = delete;
    lock_base& operator=(const lock_base&) = delete;

    /// Ids of waiters and of loss listeners, taken on the caller's thread (their cancellation slots are
    /// bound there, before the hop onto the session's executor).
    std::uint64_t new_id() noexcept { return next_id_.fetch_add(1, std::memory_order_relaxed); }

    virtual void release(std::uint64_t holder, release_completion done) = 0;
    virtual void wait_lost(std::uint64_t id, std::uint64_t holder, handler<error_code> h) = 0;
    virtual void cancel_lost(std::uint64_t id) = 0;
    /// Empty while `holder` holds; else why it lost the lock.
    virtual error_code lost(std::uint64_t holder) const = 0;
    virtual bool holds(std::uint64_t holder) const = 0;
    /// Completes `h` (success) when someone asks `holder` to let go (Curator's revocation request).
    virtual void wait_revoked(std::uint64_t id, std::uint64_t holder, handler<> h) = 0;
    virtual void cancel_revoked(std::uint64_t id) = 0;
    /// The session drains (recipes/drain.hpp): every waiter fails with error::draining, and the holders are
    /// asked to let go as a revocation asks them. Acquires after this are refused (acquire_refusal).
    virtual void drain() = 0;
    /// Whether anybody of this session holds the lock.
    bool holding() const { return has_holders(); }
    /// Whether this state's figures are counted, and under which stats label (see count_into).
    bool counted() const noexcept { return meter.counting(); }
    const std::string& stats_label() const noexcept { return meter.label(); }
    /// Adds this state's holders, waiters and contenders to a snapshot (on the session's executor).
    virtual void add_gauges(lock_stats& into) const = 0;

    /// Moves `holder`'s lease to end `length` from now (gives it one if it had none); completes `h` with
    /// why not if it does not hold any more.
    void extend_lease(std::uint64_t holder, std::chrono::steady_clock::duration length, handler<> h)
    {
        auto why = lost(holder);
        if (!why && !holds(holder)) why = zklock::error::not_held;
        if (!why) {
            start_lease(holder, now() + length);
            leases_changed();
        }
        s->post_completion(std::move(h), why);
    }

    const std::shared_ptr<session_impl> s;
    loss_board losses;  ///< what guard::lost() reads from any thread; the recipe keeps it as lost() says
    lock_meter meter;   ///< counts into the session's statistics once count_into was called

protected:
    using time_point = clock_time;
    /// Counts this state's acquires, holds and losses on `path` in the session's statistics under
    /// `label`, and tells the session's observer (the recipe's constructor calls it; a state that never
    /// does is neither counted nor observed).
    void count_into(std::string path, std::string label) { meter = lock_meter(*s, std::move(path), std::move(label)); }
    /// Why an acquire of `path` cannot start now (empty if it can): the session's refusal, or its drain.
    error_code acquire_refusal(const std::string& path) const
    {
        if (s->extension && registry_of(*s).draining) return zklock::error::draining;
        return s->refusal_to_wait(path);
    }
    /// The shell's reading of the clock: once per event, handed to the pure rules.
    static clock_time now() noexcept { return zklock::clock::now(); }
    /// What the session says of its touch now, for the loss clock.
    touch session_touch() const { return {s->last_answered_send(), s->loss_grace()}; }

    // The clocks (core/lock_clock.hpp): one timer for all of them, set to the next one due. They run on
    // the session's executor, so a lease runs out whatever the holder's own code is doing (unless it
    // blocks that executor).
    /// The clocks a recipe's shell sets itself (waiters' deadlines, the own watch); rearm() after.
    lock_clock& clock() noexcept { return clock_; }
    /// Sets the timer to the next alarm (call after changing the clocks, or the session's touch).
    void rearm()
    {
        const auto next = clock_.next(session_touch());
        if (!next) {
            if (std::exchange(armed_, false)) timer_.cancel();
            return;
        }
        if (armed_ && armed_at_ <= *next) return;  // it rings early (or on time) and sets itself again then
        armed_ = true;
        armed_at_ = *next;
        timer_.expires_at(*next);
        timer_.async_wait([self = weak_self(), gen = ++timer_gen_](error_code ec) {
            auto q = self.lock();
            if (!q || ec || gen != q->timer_gen_) return;
            q->armed_ = false;
            q->ring();
        });
    }
    /// A deadline or the own-watch alarm rang (the recipe set it).
    virtual void alarm_rang(const clock_alarm&) {}

    // Leases.
    void start_lease(std::uint64_t holder, time_point end)
    {
        clock_.start_lease(holder, end);
        rearm();
    }
    void stop_lease(std::uint64_t holder)
    {
        clock_.stop_lease(holder);
        rearm();
    }
    std::optional<time_point> lease_end(std::uint64_t holder) const { return clock_.lease_end(holder); }
    /// The end of `holder`'s lease on the wall clock (ms since the epoch), for the node's data.
    std::optional<std::int64_t> lease_end_ms(std::uint64_t holder) const
    {
        const auto end = lease_end(holder);
        if (!end) return std::nullopt;
        return wall_clock_ms(*end, now(), std::chrono::system_clock::now());
    }
    /// `holder`'s lease ran out.
    virtual void lease_ran_out(std::uint64_t holder) = 0;
    /// A lease was given or extended (the recipe may publish it in its node's data).
    virtual void leases_changed() {}
    virtual std::weak_ptr<lock_base> weak_self() = 0;

    // The loss clock (core/loss_clock.hpp): whoever holds when the grace runs out is told, even if the
    // lock changed hands meanwhile.
    /// Whether anybody holds (the clock runs only then).
    virtual bool has_holders() const = 0;
    /// The grace ran out: tell every holder ownership_uncertain.
    virtual void grace_passed() = 0;
    /// (Re)starts the clock for the holders.
    void arm_loss_clock()
    {
        if (!has_holders()) return;
        clock_.arm_loss();
        rearm();
    }
    void cancel_loss_clock()
    {
        clock_.disarm_loss();
        rearm();
    }
    /// No acquire completes with a guard whose loss is already known: while this is true at `now`, a
    /// recipe holds its grants back, calls confirm_touch, and grants once it calls back and this is false.
    bool loss_clock_ran_out(clock_time at) const { return session_touch().ran_out(at); }
    /// Sends a sync (answered only through the leader); `then` runs on the session's executor once it is
    /// answered or has failed, with this state alive or not (hold it weakly).
    void confirm_touch(std::function<void()> then)
    {
        s->sync("/", [then = std::move(then)](error_code) { then(); });
    }

private:
    void ring()
    {
        bool lease_ended = false;
        for (const auto& a : clock_.take_due(now(), session_touch())) {
            switch (a.what) {
            case clock_alarm::type::lease:
                lease_ran_out(a.id);
                lease_ended = true;
                break;
            case clock_alarm::type::loss:
                if (has_holders()) grace_passed();
                break;
            default: alarm_rang(a); break;
            }
        }
        rearm();
        if (lease_ended) note_release(*s);  // a drain waits for holds to end, however they end
    }

    std::atomic<std::uint64_t> next_id_{1};
    lock_clock clock_;
    detail::timer timer_;
    bool armed_ = false;
    time_point armed_at_{};
    std::uint64_t timer_gen_ = 0;  // tells the current wait from one it replaced
};

/// The error for operations cut short by the session's end in state `st`.
error_code final_error(session_state st);

/// Whether a listener's `expired` was a renewal (session_config::on_expiry): the session has moved on from
/// `expired` by the time listeners hear of it; an expiry that ends the session stays in that state.
inline bool renewed(const session_impl& s, session_state heard) noexcept
{
    return heard == session_state::expired && s.state != session_state::expired;
}
/// Whether a failure of a contender or a run says only that the session expired, while the session
/// renews on expiry: its waiters then wait for the new session (the `expired` listener gives the old
/// work up) instead of failing with the old one. (The C client fails what is out before the session's
/// state says so, and refuses new requests on the expired handle.)
inline bool expired_into_renewal(const session_impl& s, error_code ec)
{
    return (ec == zklock::error::session_expired || ec == zk_errc::invalid_state) && s.renews_on_expiry();
}
/// Whether the waiters of a renewed session wait on for the new one.
inline bool requeues(const session_impl& s) noexcept { return s.cfg.on_expiry == expiry_policy::renew_requeue; }

/// The session's shared state for `key` ("mutex:/locks/a", ...), made by `make` on first use, so that every
/// lock object of one session on one path shares it. Null with `refusal` set for a moved-from session, or
/// when the one there is not `same` (another object of this session on the path with other options).
template <class State, class Same, class Make>
std::shared_ptr<State> shared_state_for(const std::shared_ptr<session_impl>& s, const std::string& key, Same same,
                                        Make make, error_code& refusal)
{
    if (!s) {
        refusal = zklock::error::no_session;
        return nullptr;
    }
    auto& states = registry_of(*s).states;
    if (auto it = states.find(key); it != states.end())
        if (auto existing = std::static_pointer_cast<State>(it->second.lock())) {
            if (same(*existing)) return existing;
            refusal = zklock::error::conflicting_options;
            return nullptr;
        }
    std::shared_ptr<State> made = make();  // may add other keys (a semaphore's internal lock): look up again
    if (!made) return nullptr;
    made->subscribe();
    states[key] = made;
    return made;
}

/// Forgets `key`'s shared state in the session (its destructor calls this), unless a newer one took it.
inline void forget_shared_state(session_impl& s, const std::string& key)
{
    auto& states = registry_of(s).states;
    if (auto it = states.find(key); it != states.end() && it->second.expired()) states.erase(it);
}

/// Says in the session's log why a lock path was refused with error::schema_mismatch.
inline void log_schema_refusal(const session_impl& s, const std::string& path, std::string_view found)
{
    s.log->write(log_level::warning, "zklock: refused " + path + ": it holds the nodes of " + std::string(found));
}

/// Deletes a node, again after a reconnect if the connection was lost, until ZooKeeper confirms it is gone
/// (or the session ends, which removes an ephemeral node anyway). `done` may be empty.
void delete_node(const std::shared_ptr<session_impl>& s, std::string node, handler<> done);

/// Binds the handler's cancellation slot here, on the caller's thread: that is where its owner emits the
/// signal, and a slot may only be touched there. The cancellation hops onto the session's executor, and
/// the state is reached (weakly) only there.
template <class State, class... Args, class Fn>
void bind_cancellation(handler<Args...>& h, const std::shared_ptr<State>& q, Fn on_cancel)
{
    if (auto slot = asio::get_associated_cancellation_slot(h); slot.is_connected())
        slot.assign([w = std::weak_ptr<State>(q), ex = q->s->ex, on_cancel](asio::cancellation_type) {
            asio::post(ex, [w, on_cancel] {
                if (auto self = w.lock()) on_cancel(*self);
            });
        });
}

/// Drops a reference on the session's executor, so that the last one is never dropped elsewhere.
template <class State>
void drop_state_on_executor(std::shared_ptr<State> q) noexcept
{
    if (!q) return;
    try {
        auto ex = q->s->ex;
        asio::dispatch(ex, [q = std::move(q)]() mutable { q.reset(); });
    } catch (...) {  // out of memory in a destructor: nothing can be posted, and the reference goes here,
                     // off the executor (if it was the last one, the state's destructor runs here too)
    }
}

}  // namespace zklock::detail
