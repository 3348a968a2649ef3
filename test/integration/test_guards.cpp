// A guard's release as an Asio operation: nothing happens until it is initiated, so a deferred release that
// is dropped unawaited leaves the guard (a lock's, a lease's, a multi_lock's) holding, on a real ZooKeeper.
#include "test_util.hpp"

#include <zklock/multi_lock.hpp>
#include <zklock/semaphore.hpp>

BOOST_AUTO_TEST_SUITE(guard_tests)

using namespace test;
using zklock::guard;
using zklock::mutex;

BOOST_AUTO_TEST_CASE(a_deferred_release_acts_when_awaited_and_not_before)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("deferred-release");
        mutex m0(ss[0], path), m1(ss[1], path);

        auto g = co_await m0.acquire(5s, use_awaitable);
        {
            [[maybe_unused]] auto never_awaited = g.release();  // the default token: deferred
            BOOST_TEST(g.owns_lock(), "making the release operation emptied the guard");
        }
        BOOST_TEST(g.owns_lock());
        BOOST_TEST(!g.lost());
        // The guard still holds, so its destructor releases: the other session gets the lock.
        { auto drop = std::move(g); }
        auto [ec, g1] = co_await m1.acquire(5s, tuple_awaitable);
        BOOST_TEST_REQUIRE(!ec, "the lock stayed held after an unawaited release: " << ec.message());

        // Awaited later, it releases then; ZooKeeper has deleted the node when it completes.
        auto later = g1.release();
        BOOST_TEST(g1.owns_lock());
        const auto node = g1.node();
        auto [rec] = co_await std::move(later)(tuple_awaitable);
        BOOST_TEST(!rec);
        BOOST_TEST(!g1.owns_lock());
        BOOST_TEST((co_await children(ss[0], path)).empty(), node << " is still there");

        // A second release of the same guard: not_held, and nothing else happens.
        auto [again] = co_await g1.release(tuple_awaitable);
        BOOST_TEST(again == zklock::error::not_held);
    });
}

BOOST_AUTO_TEST_CASE(a_dropped_deferred_release_of_a_lease_leaves_it_held)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("deferred-release-lease");
        zklock::semaphore s0(ss[0], path, 1), s1(ss[1], path, 1);
        auto lease = co_await s0.acquire(5s, use_awaitable);
        { [[maybe_unused]] auto never_awaited = lease.release(); }
        BOOST_TEST(lease.owns_lock());
        { auto drop = std::move(lease); }
        auto [ec, other] = co_await s1.acquire(5s, tuple_awaitable);
        BOOST_TEST(!ec, "the lease stayed held after an unawaited release: " << ec.message());
        co_await other.release(use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(a_dropped_deferred_release_of_a_multi_guard_leaves_it_held)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto a = unique_path("deferred-multi-a"), b = unique_path("deferred-multi-b");
        zklock::multi_lock both(mutex(ss[0], a), mutex(ss[0], b));
        auto held = co_await both.acquire(5s, use_awaitable);
        { [[maybe_unused]] auto never_awaited = held.release(); }
        BOOST_TEST(held.owns_lock(), "making the release operation emptied the multi_guard");
        BOOST_TEST(held.guards().size() == 2u);
        mutex other_a(ss[1], a), other_b(ss[1], b);
        auto [busy_a, none_a] = co_await other_a.try_acquire(tuple_awaitable);
        auto [busy_b, none_b] = co_await other_b.try_acquire(tuple_awaitable);
        BOOST_TEST(busy_a == zklock::error::timeout);
        BOOST_TEST(busy_b == zklock::error::timeout);

        co_await held.release(use_awaitable);
        BOOST_TEST(!held.owns_lock());
        BOOST_TEST((co_await children(ss[0], a)).empty());
        BOOST_TEST((co_await children(ss[0], b)).empty());
        auto g = co_await other_a.acquire(5s, use_awaitable);
        co_await g.release(use_awaitable);
    });
}

BOOST_AUTO_TEST_SUITE_END()  // guard_tests
