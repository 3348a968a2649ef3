// Cooperative revocation against a real ZooKeeper: a request reaches the holder (mutex, read/write lock,
// lease), a request made earlier is heard at once, the wait ends with a release or a cancellation, and a
// lingering node nobody holds goes at once. Curator's side: test_interop_recipes.cpp.
#include "test_util.hpp"

#include <zklock/zklock.hpp>

#include <memory>

BOOST_AUTO_TEST_SUITE(revocation_tests)

using namespace test;
using zklock::guard;
using zklock::mutex;
using zklock::session;

namespace {

/// `g`'s revocation wait, started now; `done` once it completed, with `ec`.
struct revocation_wait {
    bool done = false;
    zklock::error_code ec;
    asio::cancellation_signal sig;
    void start(asio::io_context& ioc, guard& g)
    {
        asio::co_spawn(ioc, [this, &g]() -> asio::awaitable<void> {
            auto [e] = co_await g.async_wait_revoked(asio::bind_cancellation_slot(sig.slot(), tuple_awaitable));
            ec = e;
            done = true;
        }, asio::detached);
    }
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_request_reaches_the_holder_which_lets_go)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("revoke");
        mutex a(ss[0], path), b(ss[1], path);
        auto g = co_await a.acquire(5s, use_awaitable);
        revocation_wait w;
        w.start(ioc, g);
        co_await pause(100ms);
        BOOST_TEST(!w.done);  // nobody asked yet
        guard waiting;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { waiting = co_await b.acquire(10s, use_awaitable); },
                       asio::detached);
        co_await zklock::async_request_revoke(ss[1], g.node(), use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return w.done; }));
        BOOST_TEST(!w.ec);
        BOOST_TEST(!g.lost());  // a request, not a loss: the holder still holds
        auto [again] = co_await g.async_wait_revoked(tuple_awaitable);  // already asked: at once
        BOOST_TEST(!again);
        co_await g.release(use_awaitable);  // the holder decides to let go
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return waiting.owns_lock(); }));
        co_await waiting.release(use_awaitable);
        auto [gone] = co_await zklock::async_request_revoke(ss[1], g.node(), tuple_awaitable);
        BOOST_TEST(gone == zklock::zk_errc::no_node);
        // The root is never a lock node: it is refused, and its data stays as it was.
        auto [bec, before, before_stat] = co_await ss[1].async_get_data("/", tuple_awaitable);
        auto [root] = co_await zklock::async_request_revoke(ss[1], "/", tuple_awaitable);
        BOOST_TEST(root == zklock::error::invalid_path);
        auto [aec, after, after_stat] = co_await ss[1].async_get_data("/", tuple_awaitable);
        BOOST_TEST((!bec && !aec));
        BOOST_TEST(after_stat.version == before_stat.version);
    });
}

BOOST_AUTO_TEST_CASE(the_wait_ends_with_a_release_or_a_cancellation)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        mutex m(ss[0], unique_path("revoke-wait"));
        auto g = co_await m.acquire(5s, use_awaitable);
        revocation_wait cancelled, released;
        cancelled.start(ioc, g);
        released.start(ioc, g);
        co_await pause(50ms);
        cancelled.sig.emit(asio::cancellation_type::terminal);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return cancelled.done; }));
        BOOST_TEST(cancelled.ec == asio::error::operation_aborted);
        BOOST_TEST(!released.done);
        co_await g.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return released.done; }));
        BOOST_TEST(released.ec == asio::error::operation_aborted);
        auto [ec] = co_await g.async_wait_revoked(tuple_awaitable);
        BOOST_TEST(ec == zklock::error::not_held);
    });
}

BOOST_AUTO_TEST_CASE(readers_writers_and_permits_hear_it_too)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        zklock::shared_mutex rw(ss[0], unique_path("revoke-rw"));
        auto r1 = co_await rw.acquire_shared(5s, use_awaitable);
        auto r2 = co_await rw.acquire_shared(5s, use_awaitable);  // the same read node
        revocation_wait w1, w2;
        w1.start(ioc, r1);
        w2.start(ioc, r2);
        co_await zklock::async_request_revoke(ss[1], r1.node(), use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return w1.done && w2.done; }));
        BOOST_TEST((!w1.ec && !w2.ec));
        co_await r1.release(use_awaitable);
        co_await r2.release(use_awaitable);

        zklock::semaphore sem(ss[0], unique_path("revoke-sem"), 2);
        auto permit = co_await sem.acquire(5s, use_awaitable);
        revocation_wait wl;
        wl.start(ioc, permit);
        co_await zklock::async_request_revoke(ss[1], permit.node(), use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return wl.done; }));
        BOOST_TEST(!wl.ec);
        co_await permit.release(use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(a_lingering_node_nobody_holds_goes_at_once)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("revoke-linger");
        mutex m(ss[0], path, {.local_handoff_limit = 10, .linger = true, .acl = zklock::open_acl()});
        auto g = co_await m.acquire(5s, use_awaitable);
        const auto node = g.node();
        co_await g.release(use_awaitable);
        BOOST_TEST((co_await children(ss[1], path)).size() == 1u);  // it lingers
        co_await zklock::async_request_revoke(ss[1], node, use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(ss[1], path)).empty();
        }));
    });
}

BOOST_AUTO_TEST_SUITE_END()  // revocation_tests
