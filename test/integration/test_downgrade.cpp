// A read/write lock's downgrade against a real ZooKeeper: once the write guard goes, readers (of other
// sessions and of the same one) read beside the downgraded reader, while a writer still waits; before it
// goes, nobody else reads; a writer that queued before the downgrade keeps its turn. Every section counts
// who is inside, and a writer beside anyone is a failure.
#include "test_util.hpp"

#include <zklock/shared_mutex.hpp>

BOOST_AUTO_TEST_SUITE(downgrade_tests)

using namespace test;
using zklock::guard;
using zklock::shared_mutex;

namespace {

/// Readers and writers inside one read/write lock's sections; a writer beside anyone is an overlap.
struct sections {
    int readers = 0, writers = 0, overlaps = 0;
    void read()
    {
        if (writers > 0) ++overlaps;
        ++readers;
    }
    void write()
    {
        if (readers > 0 || writers > 0) ++overlaps;
        ++writers;
    }
};

std::size_t count_with(const std::vector<std::string>& names, const std::string& marker)
{
    std::size_t n = 0;
    for (const auto& c : names) n += c.find(marker) != std::string::npos;
    return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(readers_join_a_downgraded_read_lock_and_a_writer_waits)
{
    asio::io_context ioc;
    sessions ss(ioc, 3);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("downgrade-join");
        shared_mutex a(ss[0], path), b(ss[1], path), c(ss[2], path);
        sections in;
        auto w = co_await a.acquire(5s, use_awaitable);
        in.write();
        // Another session's reader queues behind the write node.
        guard rb;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            rb = co_await b.acquire_shared(10s, use_awaitable);
            in.read();
        }, asio::detached);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return count_with(co_await children(ss[0], path), "__READ__") == 1;
        }));
        auto r = co_await a.acquire_shared(w, use_awaitable);
        BOOST_TEST(r.node().find("__READ__") != std::string::npos);
        BOOST_TEST(!rb.owns_lock());  // not while the writer's coroutine still writes
        in.writers = 0;
        in.read();
        co_await w.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return rb.owns_lock(); }));
        // The same session's second reader gets in too.
        auto r2 = co_await a.acquire_shared(5s, use_awaitable);
        in.read();
        // A writer of a third session queues behind the readers, and waits for all of them.
        guard wc;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            wc = co_await c.acquire(10s, use_awaitable);
            in.write();
        }, asio::detached);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return count_with(co_await children(ss[0], path), "__WRIT__") == 1;
        }));
        BOOST_TEST(!wc.owns_lock());
        BOOST_TEST(!r.lost());
        for (auto* g : {&r, &r2, &rb}) {
            --in.readers;
            co_await g->release(use_awaitable);
        }
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return wc.owns_lock(); }));
        BOOST_TEST(in.overlaps == 0);
        co_await wc.release(use_awaitable);
        BOOST_TEST((co_await children(ss[0], path)).empty());
    });
}

BOOST_AUTO_TEST_CASE(before_the_write_guard_goes_no_other_reader_of_the_session_reads)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("downgrade-local");
        shared_mutex a(ss[0], path);
        auto w = co_await a.acquire(5s, use_awaitable);
        auto r = co_await a.acquire_shared(w, use_awaitable);
        guard other;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { other = co_await a.acquire_shared(10s, use_awaitable); },
                       asio::detached);
        // Its read node is listed behind the write node, which it waits for.
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return count_with(co_await children(ss[0], path), "__READ__") == 2;
        }));
        BOOST_TEST(!other.owns_lock());
        co_await w.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return other.owns_lock(); }));
        BOOST_TEST(r.owns_lock());
        co_await other.release(use_awaitable);
        co_await r.release(use_awaitable);
        BOOST_TEST((co_await children(ss[0], path)).empty());
    });
}

// A writer of another session queued while we wrote: a read node of ours would sort behind it, and it would
// get the lock beside our reader once the write node goes. So the read guard keeps the write node.
BOOST_AUTO_TEST_CASE(a_writer_that_queued_before_the_downgrade_keeps_its_turn)
{
    asio::io_context ioc;
    sessions ss(ioc, 3);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("downgrade-writer-first");
        shared_mutex a(ss[0], path), b(ss[1], path), c(ss[2], path);
        sections in;
        auto w = co_await a.acquire(5s, use_awaitable);
        guard wb;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            wb = co_await b.acquire(10s, use_awaitable);
            in.write();
        }, asio::detached);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return count_with(co_await children(ss[0], path), "__WRIT__") == 2;
        }));
        auto r = co_await a.acquire_shared(w, use_awaitable);
        BOOST_TEST(r.node() == w.node());  // the write node, held twice
        in.read();
        co_await w.release(use_awaitable);
        BOOST_TEST((co_await children(ss[0], path)).size() == 2u);  // kept for the reader; no read node left
        auto [ec, none] = co_await c.try_acquire_shared(tuple_awaitable);  // behind the waiting writer
        BOOST_TEST(ec == zklock::error::timeout);
        BOOST_TEST(!wb.owns_lock());
        --in.readers;
        co_await r.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return wb.owns_lock(); }));
        BOOST_TEST(in.overlaps == 0);
        co_await wb.release(use_awaitable);
        BOOST_TEST((co_await children(ss[0], path)).empty());
    });
}

BOOST_AUTO_TEST_CASE(a_downgrade_of_a_guard_that_does_not_write_here_is_refused)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("downgrade-refused");
        shared_mutex a(ss[0], path), other(ss[0], unique_path("downgrade-other"));
        auto r = co_await a.acquire_shared(5s, use_awaitable);
        auto [e1, g1] = co_await a.acquire_shared(r, tuple_awaitable);  // a read guard
        BOOST_TEST(e1 == zklock::error::not_held);
        auto w = co_await other.acquire(5s, use_awaitable);
        auto [e2, g2] = co_await a.acquire_shared(w, tuple_awaitable);  // another lock's
        BOOST_TEST(e2 == zklock::error::not_held);
        guard none;
        auto [e3, g3] = co_await a.acquire_shared(none, tuple_awaitable);
        BOOST_TEST(e3 == zklock::error::not_held);
        co_await r.release(use_awaitable);
        co_await w.release(use_awaitable);
        BOOST_TEST((co_await children(ss[0], path)).empty());

        // A write guard that lost its lock (its node deleted by someone else): refused, and no read node is
        // made for it.
        auto lost = co_await a.acquire(5s, use_awaitable);
        co_await ss[0].async_remove(lost.node(), -1, use_awaitable);
        auto [wec, why] = co_await lost.async_wait_lost(tuple_awaitable);
        BOOST_TEST(!wec);
        BOOST_TEST(why == zklock::error::lock_node_deleted);
        auto [e4, g4] = co_await a.acquire_shared(lost, tuple_awaitable);
        BOOST_TEST(e4 == zklock::error::not_held, e4.message());
        BOOST_TEST(!g4.owns_lock());
        BOOST_TEST((co_await children(ss[0], path)).empty());
    });
}

BOOST_AUTO_TEST_CASE(a_cancelled_downgrade_leaves_the_write_guard_and_no_read_node)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("downgrade-cancelled");
        shared_mutex a(ss[0], path);
        auto w = co_await a.acquire(5s, use_awaitable);
        for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                          asio::cancellation_type::total}) {
            // The server is frozen: the read node's create gets no answer before the signal, which comes
            // while it is out (or still queued in the client: either way it must be undone).
            shared_server().freeze();
            asio::cancellation_signal stop;
            auto op = a.acquire_shared(w, asio::bind_cancellation_slot(stop.slot(), tuple_awaitable));
            asio::steady_timer soon(ioc, 20ms);
            soon.async_wait([&](error_code) { stop.emit(type); });
            auto [ec, r] = co_await std::move(op);
            shared_server().thaw();
            BOOST_TEST(ec == asio::error::operation_aborted);
            BOOST_TEST(!r.owns_lock());
            // The create is answered before this sync (one session's requests are answered in order), and
            // the read node it made is deleted in the background.
            co_await ss[0].async_sync(path, use_awaitable);
            BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
                co_return (co_await children(ss[0], path)).size() == 1;  // the write node only
            }));
        }
        BOOST_TEST(!w.lost());
        auto r = co_await a.acquire_shared(w, use_awaitable);  // the session still downgrades
        co_await w.release(use_awaitable);
        co_await r.release(use_awaitable);
        BOOST_TEST((co_await children(ss[0], path)).empty());
    });
}

BOOST_AUTO_TEST_SUITE_END()  // downgrade_tests
