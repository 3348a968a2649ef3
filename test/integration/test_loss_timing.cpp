// The loss signal's promise in its worst case: a holder whose only server is a follower that stops
// answering right after its last request must be told ownership_uncertain before any other client can
// hold the lock. The leader expires sessions and hears of a follower's touches only when it pings it, so
// it may count from a touch older than the holder's newest exchange (docs/DESIGN.md, "Loss timing").
#define BOOST_TEST_MODULE zklock loss timing
#include "test_util.hpp"

#include <cstdlib>
#include <iostream>
#include <random>

using namespace test;
using zklock::mutex;
using zklock::session;
using zklock::session_state;
using clock_type = std::chrono::steady_clock;

namespace {

std::string only(std::uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

int rounds_wanted()
{
    const char* env = std::getenv("ZKLOCK_LOSS_ROUNDS");
    return env ? std::max(1, std::atoi(env)) : 20;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_holder_on_a_frozen_follower_is_told_before_anyone_else_holds_the_lock)
{
    zklock::testing::server_options opts;
    opts.tick_ms = 200;
    zklock::testing::cluster cl(3, opts);
    std::mt19937 rng(20261122);
    const int rounds = rounds_wanted();
    int told_first = 0;
    auto min_margin = std::chrono::milliseconds::max();
    for (int round = 0; round < rounds; ++round) {
        const auto leader = cl.leader();
        const auto follower = (leader + 1 + static_cast<std::size_t>(round % 2)) % 3;
        const auto bystander = 3 - leader - follower;
        asio::io_context ioc;
        auto hcfg = config_for(only(cl.client_port(follower)));
        hcfg.session_timeout = 4s;
        auto ocfg = config_for(only(cl.client_port(leader)) + "," + only(cl.client_port(bystander)));
        session holder(ioc, hcfg), other(ioc, ocfg);
        // Even rounds: frozen right after answering the holder's own request. Odd: at a random moment.
        const bool right_after_answer = round % 2 == 0;
        const auto random_pause = std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 1500)(rng));
        run(ioc, [&]() -> asio::awaitable<void> {
            co_await holder.async_connect(use_awaitable);
            co_await other.async_connect(use_awaitable);
            BOOST_REQUIRE_EQUAL(holder.negotiated_timeout().count(), 4000);
            const auto path = unique_path("frozen-follower");
            mutex hm(holder, path), om(other, path);
            auto g = co_await hm.acquire(10s, use_awaitable);
            std::optional<clock_type::time_point> warned, other_holds;
            zklock::guard og;
            asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
                auto [ec, why] = co_await g.async_wait_lost(tuple_awaitable);
                if (!ec) warned = clock_type::now();
            }, asio::detached);
            asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
                auto [ec, got] = co_await om.acquire(30s, tuple_awaitable);
                if (!ec) {
                    other_holds = clock_type::now();
                    og = std::move(got);
                }
            }, asio::detached);
            BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> {
                co_return (co_await children(other, path)).size() == 2u;
            }));
            if (right_after_answer) co_await holder.async_exists("/", use_awaitable);
            else co_await pause(random_pause);
            cl.freeze(follower);  // synchronous: nothing sent after this is answered
            const auto frozen_at = clock_type::now();
            BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return other_holds.has_value(); }, 20s));
            BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return warned.has_value(); }, 5s));
            const auto ms = [&](clock_type::time_point t) {
                return std::chrono::duration_cast<std::chrono::milliseconds>(t - frozen_at).count();
            };
            const auto margin = std::chrono::duration_cast<std::chrono::milliseconds>(*other_holds - *warned);
            BOOST_TEST_MESSAGE("round " << round << (right_after_answer ? " (after an answer)" : " (random)")
                                        << ": holder told at " << ms(*warned) << " ms, other holds at "
                                        << ms(*other_holds) << " ms, margin " << margin.count() << " ms");
            BOOST_TEST((*warned < *other_holds), "round " << round << ": another client held the lock first");
            if (*warned < *other_holds) ++told_first;
            min_margin = std::min(min_margin, margin);
            co_await og.release(tuple_awaitable);
            cl.thaw(follower);
            co_await holder.async_close(tuple_awaitable);
            co_await other.async_close(tuple_awaitable);
        }, 90s);
        // The thawed follower rejoins before the next round puts a holder on it.
        const auto deadline = clock_type::now() + 60s;
        while (cl.four_letter(follower, "srvr").find("Mode: follower") == std::string::npos &&
               clock_type::now() < deadline)
            std::this_thread::sleep_for(50ms);  // polling a server process from outside any event loop
    }
    std::cout << "loss timing: holder told first in " << told_first << " of " << rounds
              << " rounds; smallest margin " << min_margin.count() << " ms" << std::endl;
    BOOST_TEST(told_first == rounds);
}

// The leader pauses for longer than the holder's session timeout (and less than the followers' syncLimit):
// the holder's follower keeps answering reads, but only the leader expires sessions, and it may do so the
// moment it runs again. So the holder must be told while the leader is still paused.
BOOST_AUTO_TEST_CASE(a_holder_on_a_follower_is_told_while_the_leader_is_paused)
{
    zklock::testing::server_options opts;
    opts.tick_ms = 200;
    zklock::testing::cluster cl(3, opts);
    const int rounds = std::max(1, rounds_wanted() / 4);
    int told_in_time = 0;
    for (int round = 0; round < rounds; ++round) {
        const auto leader = cl.leader();
        const auto follower = (leader + 1 + static_cast<std::size_t>(round % 2)) % 3;
        asio::io_context ioc;
        auto hcfg = config_for(only(cl.client_port(follower)));
        hcfg.session_timeout = 2s;
        session holder(ioc, hcfg);
        run(ioc, [&]() -> asio::awaitable<void> {
            co_await holder.async_connect(use_awaitable);
            mutex hm(holder, unique_path("paused-leader"));
            auto g = co_await hm.acquire(10s, use_awaitable);
            std::optional<clock_type::time_point> warned;
            asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
                auto [ec, why] = co_await g.async_wait_lost(tuple_awaitable);
                if (!ec) warned = clock_type::now();
            }, asio::detached);
            cl.freeze(leader);
            const auto frozen_at = clock_type::now();
            co_await pause(3s);  // the pause itself: longer than the holder's T = 2 s
            const bool in_time = warned.has_value();
            cl.thaw(leader);
            BOOST_TEST(in_time, "round " << round << ": the holder heard nothing while the leader was paused");
            if (in_time) {
                ++told_in_time;
                BOOST_TEST_MESSAGE("paused leader, round " << round << ": told "
                                   << std::chrono::duration_cast<std::chrono::milliseconds>(*warned - frozen_at).count()
                                   << " ms into the pause");
            }
            co_await g.release(tuple_awaitable);
            co_await holder.async_close(tuple_awaitable);
        }, 60s);
        const auto deadline = clock_type::now() + 60s;
        while (cl.four_letter(leader, "srvr").find("Mode: ") == std::string::npos && clock_type::now() < deadline)
            std::this_thread::sleep_for(50ms);  // polling a server process from outside any event loop
    }
    std::cout << "loss timing, paused leader: holder told during the pause in " << told_in_time << " of " << rounds
              << " rounds" << std::endl;
    BOOST_TEST(told_in_time == rounds);
}
