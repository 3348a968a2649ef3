#include <zklock/testing/virtual_time.hpp>

#include <zklock/detail/timer.hpp>

namespace zklock::testing::simulation {

virtual_time::virtual_time(clock::time_point start) : now_(start), previous_(zklock::detail::exchange_time_source(this)) {}

virtual_time::~virtual_time() { zklock::detail::exchange_time_source(previous_); }

void virtual_time::advance_to(clock::time_point t) noexcept
{
    if (t > now_) now_ = t;
}

void virtual_time::wake_at(clock::time_point at) noexcept
{
    if (at > now_) wakes_.push(at);  // a timer due now is run by the next poll
}

std::optional<clock::time_point> virtual_time::next_wake()
{
    while (!wakes_.empty() && wakes_.top() <= now_) wakes_.pop();
    if (wakes_.empty()) return std::nullopt;
    return wakes_.top();
}

std::size_t virtual_time::run_ready(boost::asio::io_context& io)
{
    // poll() runs the reactor, which collects the timers due when it has been told that one may be
    // (timer_wait_traits asks it to wait long for one not due yet). Once time has moved, a timer set due
    // (at the earliest instant there is: first in its queue) makes it look at once.
    if (told_at_ != now_) {
        told_at_ = now_;
        zklock::detail::timer look(io);
        look.expires_at(clock::time_point::min());
        look.async_wait([](const boost::system::error_code&) {});
    }
    std::size_t total = 0;
    for (;;) {
        if (io.stopped()) io.restart();
        const auto n = io.poll();
        if (n == 0) return total;
        total += n;
    }
}

std::size_t virtual_time::run_until(boost::asio::io_context& io, clock::time_point until)
{
    std::size_t total = run_ready(io);
    for (auto next = next_wake(); next && *next <= until; next = next_wake()) {
        now_ = *next;
        total += run_ready(io);
    }
    advance_to(until);
    return total + run_ready(io);
}

std::size_t virtual_time::run_for(boost::asio::io_context& io, clock::duration d)
{
    const auto room = clock::time_point::max() - now_;  // saturated, as Asio's timers are
    return run_until(io, d >= room ? clock::time_point::max() : now_ + d);
}

}  // namespace zklock::testing::simulation
