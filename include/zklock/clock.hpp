// zklock's clock: what every deadline, lease, loss clock, keepalive and timeout of the library reads.
#pragma once

#include <chrono>

namespace zklock {

/// The clock of every deadline, lease, loss clock, keepalive and timeout in zklock: std::chrono::steady_clock,
/// with its time_point and duration types (so `m.acquire_until(std::chrono::steady_clock::now() + 5s)` and
/// `m.acquire_until(zklock::clock::now() + 5s)` mean the same), except on a thread that runs a simulation in
/// virtual time (zklock::testing::simulation::virtual_time): there it reads that simulation's time, and the
/// library's timers on that thread wait for it. Code that computes deadlines for zklock and wants to run in
/// such a simulation reads this clock rather than steady_clock.
///
/// Not on this clock: what drives the ZooKeeper C client itself (its pings, its connection and name
/// resolution timers), which runs in real time because the client does.
struct clock {
    using duration = std::chrono::steady_clock::duration;      ///< steady_clock's
    using rep = duration::rep;                                  ///< steady_clock's
    using period = duration::period;                            ///< steady_clock's
    using time_point = std::chrono::steady_clock::time_point;  ///< steady_clock's: deadlines mix freely
    static constexpr bool is_steady = true;                     ///< never goes back, virtual time neither
    /// steady_clock::now(), or the virtual time of a simulation that runs on the calling thread.
    static time_point now() noexcept;
};

namespace detail {

/// The source of virtual time on one thread (testing::simulation::virtual_time installs itself).
class time_source {
public:
    virtual clock::time_point now() const noexcept = 0;
    /// A timer of the library on this thread now expires at `at`: the simulation advances its time there
    /// when nothing else is ready to run.
    virtual void wake_at(clock::time_point at) noexcept = 0;

protected:
    time_source() = default;
    ~time_source() = default;
    time_source(const time_source&) = default;
    time_source& operator=(const time_source&) = default;
};

/// The calling thread's time source (null: real time).
time_source* current_time_source() noexcept;
/// Installs `s` as the calling thread's time source (null: real time); returns the previous one.
time_source* exchange_time_source(time_source* s) noexcept;

}  // namespace detail
}  // namespace zklock
