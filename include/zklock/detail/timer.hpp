// The timer of every wait in zklock that reads zklock::clock: an Asio timer on that clock, which tells a
// simulation's virtual time when it is set (so that the simulation knows when to advance) and, on a thread
// in virtual time, never makes the event loop sleep in real time for a virtual wait.
#pragma once

#include <zklock/clock.hpp>

#include <boost/asio/basic_waitable_timer.hpp>

namespace zklock::detail {

/// How long the event loop may sleep for a timer: as Asio's default, except on a thread in virtual time,
/// where nothing is due in real time (the simulation advances the clock, then polls).
struct timer_wait_traits {
    /// On a thread in virtual time, what a timer not yet due asks of the reactor: nothing for a long while.
    /// The reactor then checks the timers only when one is set due, or virtual_time moved the clock and
    /// told it (two system calls each time it looks, so not at every poll).
    static constexpr clock::duration virtual_wait = std::chrono::hours(1);
    static clock::duration to_wait_duration(const clock::duration& d)
    {
        if (current_time_source()) return d > clock::duration::zero() ? virtual_wait : clock::duration::zero();
        return d;
    }
    static clock::duration to_wait_duration(const clock::time_point& t)
    {
        if (current_time_source()) return t > clock::now() ? virtual_wait : clock::duration::zero();
        // A time already past waits nothing. (Asio's own traits compute now + duration::max(), which
        // overflows: not here.) The clock's time is never negative, so t - now fits.
        const auto now = clock::now();
        return t > now ? t - now : clock::duration::zero();
    }
};

/// An Asio timer on zklock::clock. expires_at and expires_after tell the thread's time source, if any,
/// when the timer is due.
class timer : public boost::asio::basic_waitable_timer<clock, timer_wait_traits> {
    using base = boost::asio::basic_waitable_timer<clock, timer_wait_traits>;

public:
    using base::base;
    std::size_t expires_at(const time_point& t)
    {
        const auto n = base::expires_at(t);
        noted();
        return n;
    }
    std::size_t expires_after(const duration& d)
    {
        const auto n = base::expires_after(d);
        noted();
        return n;
    }

private:
    void noted() const noexcept
    {
        if (auto* s = current_time_source(); s && expiry() != time_point::max()) s->wake_at(expiry());
    }
};

}  // namespace zklock::detail
