// What the simulation's tests share: the library's real sessions on testing::simulation::model, in virtual
// time, with no server (so that they build and run in every tier, the Release one included).
#pragma once

#include <zklock/detail/timer.hpp>
#include <zklock/testing/simulation.hpp>
#include <zklock/testing/virtual_time.hpp>
#include <zklock/zklock.hpp>

#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <vector>

namespace sim_test {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::use_awaitable;
using zklock::testing::simulation::model;
using zklock::testing::simulation::virtual_time;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

/// Waits `d` of zklock::clock's time (virtual on a thread in virtual time).
inline asio::awaitable<void> pause_on_clock(std::chrono::milliseconds d)
{
    zklock::detail::timer t(co_await asio::this_coro::executor);
    t.expires_after(d);
    co_await t.async_wait(use_awaitable);
}

}  // namespace sim_test
