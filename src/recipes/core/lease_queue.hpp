// The semaphore's local side: the coroutines of one session waiting for leases of one semaphore, as a
// pure state machine (events in, actions out; the shell, recipes/semaphore_queue.cpp, keeps the timers,
// the lease nodes and the completions).
//
// Leases come two ways. A run of Curator SemaphoreV2's protocol (recipes/lease_run.cpp) obtains them from
// ZooKeeper, one run at a time, always for the oldest waiter. And a lease let go by a coroutine of this
// session passes to the oldest waiter here without a round trip (lock cohorting), up to `handoff_limit`
// times in a row, and beyond that while nobody else waits for one.
//
// Fairness, in this session: the oldest waiter is served first, always. A lease that comes free goes to
// it, even while its run is under way (the run then goes on for the next waiter, or is given up); when it
// wants several leases, nothing passes locally until its run has them: freed leases are deleted, so that
// the leases directory shrinks and the run succeeds. Nobody is ever skipped, so no skip escapes the bound.
#pragma once

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace zklock::detail {

using boost::system::error_code;

struct lease_action {
    enum class type {
        start_run,           ///< run the protocol for waiter `id`: `n` leases, one look only if `one_look`
        abandon_run,         ///< give the current run up (what it made is deleted)
        grant_run,           ///< the current run's leases go to waiter `id`
        pass_lease,          ///< the freed lease goes to waiter `id` (a local hand-off)
        delete_lease,        ///< the freed lease's node is deleted (its release hears the answer)
        fail_waiter,         ///< waiter `id` completes with `ec`
        look_for_followers,  ///< list the internal lock's directory, with a watch: does anybody else wait?
    };
    type what{};
    std::uint64_t id = 0;
    std::size_t n = 0;
    bool one_look = false;
    error_code ec{};
    friend bool operator==(const lease_action&, const lease_action&) = default;
};

class lease_queue {
public:
    using actions = std::vector<lease_action>;

    /// `handoff_limit`: local hand-offs in a row before a freed lease goes back to ZooKeeper while
    /// another process waits for one (0: always).
    explicit lease_queue(std::size_t handoff_limit) : limit_(handoff_limit) {}

    /// Set before every event: whether the session is connected now.
    void observe(bool connected) noexcept { connected_ = connected; }

    // From the coroutines (through the shell).
    /// Waiter `id` wants `n` leases (checked by the shell: 1 <= n <= max). A one look is served only when
    /// nobody here waits ahead of it, on a connected session (its run then looks once).
    actions acquire(std::uint64_t id, std::size_t n, bool one_look);
    /// Waiter `id` leaves (cancelled, or its deadline passed) and completes with `why`.
    actions cancel(std::uint64_t id, error_code why);
    /// A held lease was let go (released, or its lease ran out). `usable`: it is still ours to pass on
    /// (not lost, the session connected). The shell completes the release on a pass at once, on a
    /// delete with ZooKeeper's answer.
    actions lease_freed(bool usable);

    // From the current run.
    /// The run ended: `ec` empty when it holds its leases. A retryable error keeps the waiter; the run
    /// starts again once connected.
    actions on_run_done(error_code ec, bool retryable);

    // From the session and the followers' look.
    actions on_connected();
    actions on_session_final(error_code ec);
    /// The session expired and a new one is being opened under it: the run is given up (its nodes went
    /// with the old session); the waiters wait on for a run on the new one (`keep_waiters`, one looks
    /// excepted) or fail with `error::session_expired`.
    actions on_session_renewed(bool keep_waiters);
    /// The look found nobody else waiting; `on_followers_changed`: the directory changed since (or the
    /// look failed): unknown until looked again, so the bound is strict meanwhile.
    actions on_followers_none();
    /// `leases_held`: this session holds leases now (it looks again at once, for the next hand-off).
    actions on_followers_changed(bool leases_held);

    std::uint64_t run_for() const noexcept { return run_for_; }
    bool waiting(std::uint64_t id) const noexcept { return waiters_.count(id) != 0; }
    std::size_t waiters() const noexcept { return waiters_.size(); }
    std::size_t handoffs() const noexcept { return handoffs_; }

private:
    struct waiter {
        std::size_t n = 1;
        bool one_look = false;
    };
    void advance(actions& out);
    void leave(actions& out, std::uint64_t id);
    bool may_pass() const noexcept { return handoffs_ < limit_ || (limit_ > 0 && nobody_waits_); }

    std::size_t limit_;
    bool connected_ = false;
    std::map<std::uint64_t, waiter> waiters_;  // ids grow: begin() is the oldest
    std::uint64_t run_for_ = 0;                // the waiter the current run is for (0: no run)
    std::size_t run_n_ = 0;                    // ... the leases it obtains
    bool run_one_look_ = false;                // ... and whether it looks only once
    std::size_t handoffs_ = 0;                 // local hand-offs since a lease last came from ZooKeeper
    bool looking_ = false;                     // a look at the followers is out, or its watch armed
    bool nobody_waits_ = false;                // it found nobody, and nothing changed since
};

}  // namespace zklock::detail
