#include <zklock/clock.hpp>

namespace zklock {
namespace {
// Per thread: a simulation runs on one thread, and a program's other threads keep real time.
thread_local detail::time_source* source = nullptr;
}  // namespace

clock::time_point clock::now() noexcept { return source ? source->now() : std::chrono::steady_clock::now(); }

namespace detail {
time_source* current_time_source() noexcept { return source; }
time_source* exchange_time_source(time_source* s) noexcept
{
    auto* previous = source;
    source = s;
    return previous;
}
}  // namespace detail
}  // namespace zklock
