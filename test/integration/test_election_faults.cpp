// Leader election on a three-server ensemble whose servers fail: the server of the leading candidate is
// frozen (a follower) or killed (ZooKeeper's own leader). The deposed leader must be told before the next
// candidate leads (checked as the loss-timing tests do: both moments on one clock), the next term's token
// must be greater, and an observer on the surviving servers must report the terms in order and never name
// the deposed leader again once it named its successor.
#include "test_util.hpp"

#include <zklock/election.hpp>
#include <zklock/testing/cluster.hpp>

BOOST_AUTO_TEST_SUITE(election_fault_tests)

using namespace test;
using zklock::election;
using zklock::leader_info;
using zklock::leadership;
using zklock::session;
using clock_type = std::chrono::steady_clock;

namespace {

std::string only(std::uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

long long ms_between(clock_type::time_point from, clock_type::time_point to)
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

enum class fault { freeze_follower, kill_leader };

/// One round: the leading candidate's only server suffers `f`; the successor and the observer use the
/// other two.
void deposed_leader_is_told_first(fault f)
{
    zklock::testing::server_options opts;
    opts.tick_ms = 200;
    zklock::testing::cluster cl(3, opts);
    const auto zk_leader = cl.leader();
    const auto victim = f == fault::kill_leader ? zk_leader : (zk_leader + 1) % 3;
    std::string others;
    for (std::size_t m = 0; m < 3; ++m)
        if (m != victim) others += (others.empty() ? "" : ",") + only(cl.client_port(m));

    asio::io_context ioc;
    auto first_cfg = config_for(only(cl.client_port(victim)));
    first_cfg.session_timeout = 4s;
    auto rest_cfg = config_for(others);
    rest_cfg.session_timeout = 4s;
    session first(ioc, first_cfg), second(ioc, rest_cfg), watcher(ioc, rest_cfg);
    const auto path = unique_path("election-fault");
    std::optional<clock_type::time_point> told, led;
    boost::system::error_code told_why;
    std::vector<leader_info> observed;
    bool observing = true;
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await first.async_connect(use_awaitable);
        co_await second.async_connect(use_awaitable);
        co_await watcher.async_connect(use_awaitable);
        election a(first, path, "first"), b(second, path, "second");
        auto la = co_await a.campaign(10s, use_awaitable);
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [ec, why] = co_await la.async_wait_lost(tuple_awaitable);
            if (!ec) {
                told = clock_type::now();
                told_why = why;
            }
        }, asio::detached);
        std::optional<leadership> lb;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [ec, l] = co_await b.campaign(60s, tuple_awaitable);
            BOOST_TEST(!ec, ec.message());
            if (!ec) {
                led = clock_type::now();
                lb = std::move(l);
            }
        }, asio::detached);
        // The observer follows from the first term on, until the second is seen.
        observed.push_back(co_await zklock::async_leader(watcher, path, use_awaitable));
        BOOST_TEST(observed.front().id == "first");
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            while (observing) {
                auto [ec, l] = co_await zklock::async_wait_leader_change(watcher, path, observed.back(), tuple_awaitable);
                if (ec) {
                    BOOST_TEST(!ec, "the observer failed: " << ec.message());
                    break;
                }
                observed.push_back(l);
                if (l.id == "second") break;
            }
        }, asio::detached);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(watcher, path)).size() == 2u;
        }));
        if (f == fault::kill_leader) cl.stop(victim);
        else cl.freeze(victim);
        const auto cut_at = clock_type::now();
        BOOST_REQUIRE_MESSAGE(co_await eventually([&]() -> asio::awaitable<bool> { co_return led.has_value(); }, 60s),
                              "nobody led after the fault");
        BOOST_REQUIRE_MESSAGE(told.has_value(), "the second candidate leads and the first has not been told");
        BOOST_TEST((*told < *led), "told " << ms_between(cut_at, *told) << " ms after the fault, successor led at "
                                             << ms_between(cut_at, *led) << " ms");
        BOOST_TEST((lb->token() > la.token()));
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return observed.back().id == "second"; }, 10s));
        observing = false;
        for (std::size_t i = 1; i < observed.size(); ++i) {
            BOOST_TEST((observed[i] != observed[i - 1]));  // each report is a change
            if (observed[i] && observed[i - 1]) BOOST_TEST((observed[i].token > observed[i - 1].token));
        }
        BOOST_TEST((observed.back().token == lb->token()));
        std::cout << "measured: " << (f == fault::kill_leader ? "kill -9 of ZooKeeper's leader" : "freeze of a follower")
                  << " under the leading candidate (session timeout 4 s): deposed leader told after "
                  << ms_between(cut_at, *told) << " ms (" << told_why.message() << "), successor led after "
                  << ms_between(cut_at, *led) << " ms; the observer reported " << observed.size() << " leaders in order"
                  << std::endl;
        co_await lb->resign(use_awaitable);
        if (f == fault::freeze_follower) cl.thaw(victim);
    }, 120s);
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_leaders_server_frozen)
{
    deposed_leader_is_told_first(fault::freeze_follower);
}

BOOST_AUTO_TEST_CASE(the_leaders_server_killed_and_it_was_zookeepers_leader)
{
    deposed_leader_is_told_first(fault::kill_leader);
}

BOOST_AUTO_TEST_SUITE_END()  // election_fault_tests
