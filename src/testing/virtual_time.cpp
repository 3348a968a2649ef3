#include <zklock/testing/virtual_time.hpp>

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
    // poll() runs the reactor, which collects the timers due at the current virtual time (timer_wait_traits
    // keeps Asio's timerfd ready on this thread, so the reactor looks at the timers every time).
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
