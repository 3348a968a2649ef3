// Hold-time limits (leases) against a real ZooKeeper: a holder whose code is stuck loses the lock when its
// lease runs out, is told `lease_expired`, cannot write any more, and the next contender (another session,
// or a coroutine of the same one) gets the lock; a lease can be extended; the deadline and the owner are
// in the lock node's data; the read/write lock's and the semaphore's holds have leases too.
#include "test_util.hpp"

#include <zklock/zklock.hpp>

#include "recipes/core/node_data.hpp"
#include "session/session_impl.hpp"

BOOST_AUTO_TEST_SUITE(lease_tests)

using namespace test;
using zklock::guard;
using zklock::lease;
using zklock::mutex;

namespace {

using wall = std::chrono::system_clock;

std::int64_t wall_ms() { return std::chrono::duration_cast<std::chrono::milliseconds>(wall::now().time_since_epoch()).count(); }

/// The lock node's data as zklock reads it back.
asio::awaitable<zklock::detail::node_data> data_of(zklock::session& s, const std::string& node)
{
    auto [ec, data, st] = co_await s.async_get_data(node, tuple_awaitable);
    BOOST_TEST_REQUIRE(!ec, node << ": " << ec.message());
    co_return zklock::detail::decode_node_data(data);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_stuck_holder_loses_the_lock_when_its_lease_runs_out)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("lease");
        const auto data_path = path + "-data";
        mutex a(ss[0], path), b(ss[1], path);
        const auto t0 = std::chrono::steady_clock::now();  // the lease starts a little later, at the grant
        auto g = co_await a.acquire(5s, lease(800ms), use_awaitable);
        co_await ss[0].async_create(data_path, "before", zklock::create_mode::persistent, use_awaitable);
        // The holder's code is stuck: it waits for something that never comes. Only the library acts.
        bool told = false;
        zklock::error_code reason;
        std::chrono::steady_clock::time_point told_at{};
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [ec, why] = co_await g.async_wait_lost(tuple_awaitable);
            BOOST_TEST(!ec);
            reason = why;
            told_at = std::chrono::steady_clock::now();
            told = true;
        }, asio::detached);
        asio::steady_timer never(ioc, std::chrono::hours(1));
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { co_await never.async_wait(tuple_awaitable); }, asio::detached);

        auto other = co_await b.acquire(10s, use_awaitable);  // another session gets it when the lease runs out
        const auto acquired_at = std::chrono::steady_clock::now();
        const auto took = acquired_at - t0;
        BOOST_TEST(other.owns_lock());
        BOOST_TEST(took >= 800ms);
        BOOST_TEST(took < 5s);
        BOOST_TEST_REQUIRE(told);  // the old holder was told before the other one could get in
        BOOST_TEST((told_at <= acquired_at));
        BOOST_TEST(reason == zklock::error::lease_expired);
        BOOST_TEST(g.lost() == zklock::error::lease_expired);
        BOOST_TEST((other.token() > g.token()));

        // The expired holder cannot write: nothing is sent, the data is unchanged.
        auto [wec] = co_await g.async_guarded_set_data(data_path, "stale", -1, tuple_awaitable);
        BOOST_TEST(wec == zklock::error::lease_expired);
        auto [gec, data, st] = co_await ss[1].async_get_data(data_path, tuple_awaitable);
        BOOST_TEST(data == "before");
        auto [xec] = co_await g.async_extend_lease(10s, tuple_awaitable);  // too late to extend
        BOOST_TEST(xec == zklock::error::lease_expired);
        auto [rec] = co_await g.release(tuple_awaitable);
        BOOST_TEST(rec == zklock::error::lease_expired);
        BOOST_TEST((co_await children(ss[1], path)).size() == 1u);  // only the other holder's node
        co_await other.release(use_awaitable);
        never.cancel();
        BOOST_TEST((co_await children(ss[1], path)).empty());
    });
}

BOOST_AUTO_TEST_CASE(an_expired_lease_passes_the_lock_to_the_next_coroutine_of_the_session)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        mutex m(ss[0], unique_path("lease-local"));
        auto first = co_await m.acquire(5s, lease(300ms), use_awaitable);
        auto second = co_await m.acquire(5s, use_awaitable);  // waits for the lease to run out
        BOOST_TEST(first.lost() == zklock::error::lease_expired);
        BOOST_TEST(!second.lost());
        BOOST_TEST((second.token() > first.token()));
        BOOST_TEST(second.node() == first.node());  // handed over locally, no round trip
        auto [ec] = co_await first.release(tuple_awaitable);
        BOOST_TEST(ec == zklock::error::lease_expired);
        BOOST_TEST(!second.lost());  // the old guard's release left the new holder alone
        co_await second.release(use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(a_lease_can_be_extended_and_its_deadline_and_owner_are_in_the_node)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("lease-extend");
        mutex a(ss[0], path), b(ss[1], path);
        const auto before = wall_ms();
        auto g = co_await a.acquire(5s, lease(1s), use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await data_of(ss[1], g.node())).lease_until_ms.has_value();
        }));
        auto d = co_await data_of(ss[1], g.node());
        BOOST_TEST(d.owner == zklock::detail::default_owner());  // "host:pid"
        BOOST_TEST(d.owner.substr(d.owner.rfind(':') + 1) == std::to_string(::getpid()));
        BOOST_TEST(*d.lease_until_ms >= before + 1000);
        BOOST_TEST(*d.lease_until_ms <= wall_ms() + 1000);

        co_await g.async_extend_lease(30s, use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await data_of(ss[1], g.node())).lease_until_ms.value_or(0) >= before + 29'000;
        }));
        // Past the first lease's end the lock is still held: the other session times out.
        auto [ec, none] = co_await b.acquire(2s, tuple_awaitable);
        BOOST_TEST(ec == zklock::error::timeout);
        BOOST_TEST(!g.lost());
        auto [bad] = co_await g.async_extend_lease(0s, tuple_awaitable);
        BOOST_TEST(bad == zklock::error::invalid_lease);
        co_await g.release(use_awaitable);
        auto [nh] = co_await g.async_extend_lease(1s, tuple_awaitable);
        BOOST_TEST(nh == zklock::error::not_held);
    });
}

BOOST_AUTO_TEST_CASE(the_owner_identity_is_configurable)
{
    asio::io_context ioc;
    auto cfg = config_for(shared_server().connect_string());
    cfg.owner = "billing-7";
    zklock::session s(ioc, cfg);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await s.async_connect(use_awaitable);
        mutex m(s, unique_path("owner"));
        auto g = co_await m.acquire(5s, use_awaitable);
        auto d = co_await data_of(s, g.node());
        BOOST_TEST(d.owner == "billing-7");
        BOOST_TEST(!d.lease_until_ms.has_value());  // no lease: no deadline line
        co_await g.release(use_awaitable);
        co_await s.async_close(use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(readers_writers_and_semaphore_leases_run_out_too)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto rw_path = unique_path("lease-rw");
        zklock::shared_mutex r(ss[0], rw_path), w(ss[1], rw_path);
        auto reader = co_await r.acquire_shared(5s, lease(500ms), use_awaitable);
        auto writer = co_await w.acquire(10s, use_awaitable);  // gets in when the reader's lease runs out
        BOOST_TEST(reader.lost() == zklock::error::lease_expired);
        BOOST_TEST(writer.owns_lock());
        auto [rec] = co_await reader.release(tuple_awaitable);
        BOOST_TEST(rec == zklock::error::lease_expired);
        co_await writer.release(use_awaitable);

        const auto sem_path = unique_path("lease-sem");
        zklock::semaphore s0(ss[0], sem_path, 1), s1(ss[1], sem_path, 1);
        auto held = co_await s0.acquire(5s, lease(500ms), use_awaitable);
        bool told = false;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [ec, why] = co_await held.async_wait_lost(tuple_awaitable);
            told = !ec && why == zklock::error::lease_expired;
        }, asio::detached);
        auto next = co_await s1.acquire(10s, use_awaitable);  // the only lease went back to the pool
        BOOST_TEST(told);
        BOOST_TEST(next.owns_lock());
        auto [sec] = co_await held.release(tuple_awaitable);
        BOOST_TEST(sec == zklock::error::lease_expired);
        co_await next.release(use_awaitable);
        BOOST_TEST((co_await children(ss[1], sem_path + "/leases")).empty());

        mutex bad(ss[0], unique_path("lease-bad"));
        auto [ec, g] = co_await bad.acquire(1s, lease(0s), tuple_awaitable);
        BOOST_TEST(ec == zklock::error::invalid_lease);
        BOOST_TEST(!g.owns_lock());
    });
}

BOOST_AUTO_TEST_SUITE_END()  // lease_tests
