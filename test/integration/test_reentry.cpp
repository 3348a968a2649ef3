// Explicit re-entry against a real ZooKeeper: acquire(held_guard) gives a second guard on the same node at
// once; the lock goes only when both are released; a guard of another lock, or one that holds nothing,
// is refused. (A plain second acquire stays an ordinary waiter: test_mutex.cpp.)
#include "test_util.hpp"

#include <zklock/shared_mutex.hpp>

#include <memory>

BOOST_AUTO_TEST_SUITE(reentry_tests)

using namespace test;
using zklock::guard;
using zklock::mutex;
using zklock::session;

BOOST_AUTO_TEST_CASE(a_holder_reenters_and_the_lock_goes_with_the_last_guard)
{
    asio::io_context ioc;
    session a(ioc, config_for(shared_server().connect_string()));
    session b(ioc, config_for(shared_server().connect_string()));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await a.async_connect(use_awaitable);
        co_await b.async_connect(use_awaitable);
        const auto path = unique_path("reentry");
        mutex m(a, path), other(b, path);
        auto outer = co_await m.acquire(5s, use_awaitable);
        auto inner = co_await m.acquire(outer, use_awaitable);  // at once
        BOOST_TEST(inner.node() == outer.node());
        BOOST_TEST((outer.token() < inner.token()));
        co_await outer.release(use_awaitable);  // the inner guard still holds
        auto [busy, none] = co_await other.acquire(200ms, tuple_awaitable);
        BOOST_TEST(busy == zklock::error::timeout);
        BOOST_TEST(!inner.lost());
        co_await inner.release(use_awaitable);
        auto g = co_await other.acquire(5s, use_awaitable);
        BOOST_TEST(g.owns_lock());
        co_await g.release(use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(only_a_holding_guard_of_the_same_lock_reenters)
{
    asio::io_context ioc;
    session a(ioc, config_for(shared_server().connect_string()));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await a.async_connect(use_awaitable);
        mutex m(a, unique_path("reentry-a")), n(a, unique_path("reentry-b"));
        auto g = co_await m.acquire(5s, use_awaitable);
        auto [e1, x1] = co_await n.acquire(g, tuple_awaitable);  // another lock's guard
        BOOST_TEST(e1 == zklock::error::not_held);
        guard empty;
        auto [e2, x2] = co_await m.acquire(empty, tuple_awaitable);
        BOOST_TEST(e2 == zklock::error::not_held);
        zklock::shared_mutex rw(a, unique_path("reentry-rw"));
        auto [e3, x3] = co_await rw.acquire_shared(g, tuple_awaitable);  // not a write guard of rw
        BOOST_TEST(e3 == zklock::error::not_held);
        auto r = co_await rw.acquire_shared(5s, use_awaitable);
        auto [e4, x4] = co_await rw.acquire_shared(r, tuple_awaitable);  // a read guard is no write guard
        BOOST_TEST(e4 == zklock::error::not_held);
        co_await r.release(use_awaitable);
        auto kept = std::move(g);
        co_await kept.release(use_awaitable);
        auto [e5, x5] = co_await m.acquire(kept, tuple_awaitable);  // released
        BOOST_TEST(e5 == zklock::error::not_held);
    });
}

BOOST_AUTO_TEST_SUITE_END()  // reentry_tests
