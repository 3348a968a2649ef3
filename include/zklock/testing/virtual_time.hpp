// Virtual time for zklock on one thread: the first piece of the deterministic simulation (issue 50).
#pragma once

#include <zklock/clock.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <queue>
#include <vector>

namespace zklock::testing::simulation {

/// While it lives, zklock::clock on the constructing thread reads this object's time instead of
/// steady_clock, and zklock's timers on that thread wait for it: every deadline, lease, loss clock,
/// keepalive and timeout of the sessions and locks whose io_context that thread runs. Time stands still
/// until run_until, run_for or advance_to moves it, so an hour of leases and timeouts takes the
/// milliseconds its handlers take, and the same steps give the same times.
///
/// Run the io_context with run_until or run_for, not io_context::run: time moves only between handlers,
/// when none is ready. What is not on zklock::clock keeps real time: the ZooKeeper C client and a real
/// server (a session to a real server stays connected by the client's own pings), Asio's steady_timer,
/// and the user's own timers unless they are timers on zklock::clock.
///
/// Thread-safety: use it on the thread that constructed it, which must run the io_context; other
/// threads keep real time. Instances nest (the destructor restores the one before).
class virtual_time final : zklock::detail::time_source {
public:
    /// Installs virtual time on the calling thread, starting at `start` (by default a day after
    /// steady_clock's epoch: never the zero time_point, which some code reads as "unset").
    explicit virtual_time(clock::time_point start = clock::time_point(std::chrono::hours(24)));
    ~virtual_time();
    virtual_time(const virtual_time&) = delete;
    virtual_time& operator=(const virtual_time&) = delete;

    /// The virtual time now (what zklock::clock::now() reads on this thread).
    clock::time_point now() const noexcept override { return now_; }

    /// Moves time to `t` (never back), without running anything: run_until does both. The timers due by
    /// then run at the next run_until or run_for (which tell Asio's reactor that time moved).
    void advance_to(clock::time_point t) noexcept;

    /// The earliest time, later than now, that a timer of zklock on this thread was set to (a timer since
    /// cancelled or set again may be among them: waking for it runs nothing).
    std::optional<clock::time_point> next_wake();

    /// Runs `io`'s handlers until none is ready, then moves time to the next wake, and again, until the
    /// next wake is after `until`; then time stands at `until` and whatever is ready there has run.
    /// Returns the number of handlers run. A stopped `io` is restarted first.
    std::size_t run_until(boost::asio::io_context& io, clock::time_point until);
    /// run_until(io, now() + d).
    std::size_t run_for(boost::asio::io_context& io, clock::duration d);

private:
    void wake_at(clock::time_point at) noexcept override;
    std::size_t run_ready(boost::asio::io_context& io);

    clock::time_point now_;
    clock::time_point told_at_ = clock::time_point::min();  // the time the reactor was last told of (run_ready)
    std::priority_queue<clock::time_point, std::vector<clock::time_point>, std::greater<>> wakes_;
    zklock::detail::time_source* previous_;
};

}  // namespace zklock::testing::simulation
