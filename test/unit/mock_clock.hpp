// A clock the time tests move by hand, in the manner of Boost.MySQL's mock_clock (advance_time_by): the
// pure timing rules take `now` as an argument, and the tests pass this clock's reading.
#pragma once

#include <chrono>

namespace clock_test {

using namespace std::chrono_literals;
using clock_time = std::chrono::steady_clock::time_point;

struct mock_clock {
    clock_time t = clock_time{} + 1000h;  // far from steady_clock's epoch, as a real reading is
    clock_time now() const noexcept { return t; }
    void advance_time_by(std::chrono::steady_clock::duration d) noexcept { t += d; }
};

}  // namespace clock_test
