// The read/write lock against a real ZooKeeper: readers overlap and never overlap a writer (checked here),
// writers queue fairly with readers, local readers share one node, downgrade, schema mismatch.
#include "test_util.hpp"

#include <zklock/shared_mutex.hpp>

#include <memory>
#include <stdexcept>

BOOST_AUTO_TEST_SUITE(shared_mutex_tests)

using namespace test;
using zklock::guard;
using zklock::mutex;
using zklock::session;
using zklock::shared_mutex;

namespace {

/// Who is inside: throws when a writer meets anyone, so the test checks exclusion itself.
struct room {
    int readers = 0, writers = 0, most_readers = 0, reads = 0, writes = 0;
    asio::awaitable<void> read(std::chrono::milliseconds stay)
    {
        if (writers) throw std::runtime_error("a reader inside with a writer");
        most_readers = std::max(most_readers, ++readers);
        ++reads;
        co_await pause(stay);
        if (writers) throw std::runtime_error("a writer came in while a reader was inside");
        --readers;
    }
    asio::awaitable<void> write()
    {
        if (readers || writers) throw std::runtime_error("a writer inside with someone else");
        ++writers;
        ++writes;
        co_await asio::post(co_await asio::this_coro::executor, use_awaitable);
        if (readers || writers != 1) throw std::runtime_error("someone came in while a writer was inside");
        --writers;
    }
};

std::size_t count_with(const std::vector<std::string>& names, const std::string& marker)
{
    std::size_t n = 0;
    for (const auto& c : names) n += c.find(marker) != std::string::npos;
    return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(readers_overlap_and_never_overlap_a_writer)
{
    asio::io_context ioc;
    sessions ss(ioc, 3);
    room r;
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("rw");
        int done = 0;
        for (std::size_t i = 0; i < 3; ++i) {
            for (int c = 0; c < 3; ++c)
                asio::co_spawn(ioc, [&, i]() -> asio::awaitable<void> {
                    shared_mutex rw(ss[i], path);
                    for (int k = 0; k < 6; ++k) {
                        auto g = co_await rw.acquire_shared(60s, use_awaitable);
                        co_await r.read(5ms);
                        co_await g.release(use_awaitable);
                    }
                    ++done;
                }, asio::detached);
            asio::co_spawn(ioc, [&, i]() -> asio::awaitable<void> {
                shared_mutex rw(ss[i], path);
                for (int k = 0; k < 4; ++k) {
                    auto g = co_await rw.acquire(60s, use_awaitable);
                    co_await r.write();
                    co_await g.release(use_awaitable);
                }
                ++done;
            }, asio::detached);
        }
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return done == 12; }, 120s));
        BOOST_TEST(r.reads == 54);
        BOOST_TEST(r.writes == 12);
        BOOST_TEST(r.most_readers >= 2);  // readers did share the lock
        BOOST_TEST((co_await children(ss[0], path)).empty());
    }, 150s);
}

BOOST_AUTO_TEST_CASE(readers_of_two_sessions_hold_together_and_keep_a_writer_out)
{
    asio::io_context ioc;
    sessions ss(ioc, 3);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("rw-pair");
        shared_mutex a(ss[0], path), b(ss[1], path), c(ss[2], path);
        auto ra = co_await a.acquire_shared(5s, use_awaitable);
        auto rb = co_await b.try_acquire_shared(use_awaitable);  // another process's reader: at once
        BOOST_TEST(rb.owns_lock());
        auto [ec, w] = co_await c.try_acquire(tuple_awaitable);
        BOOST_TEST(ec == zklock::error::timeout);
        co_await ra.release(use_awaitable);
        co_await rb.release(use_awaitable);
        auto w2 = co_await c.try_acquire(use_awaitable);
        BOOST_TEST(w2.owns_lock());
        auto [ec2, r2] = co_await a.acquire_shared(200ms, tuple_awaitable);
        BOOST_TEST(ec2 == zklock::error::timeout);  // a writer holds: readers wait
        co_await w2.release(use_awaitable);
        BOOST_TEST((co_await children(ss[0], path)).empty());
    });
}

BOOST_AUTO_TEST_CASE(a_reader_queues_behind_a_waiting_writer)
{
    asio::io_context ioc;
    sessions ss(ioc, 3);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("rw-fair");
        shared_mutex a(ss[0], path), b(ss[1], path), c(ss[2], path);
        auto ra = co_await a.acquire_shared(5s, use_awaitable);
        std::vector<int> order;
        guard wc, rb;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            wc = co_await c.acquire(10s, use_awaitable);
            order.push_back(1);
        }, asio::detached);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return count_with(co_await children(ss[0], path), "__WRIT__") == 1;
        }));
        // A new reader must not pass the writer that waits (no writer starvation).
        auto [ec, none] = co_await b.try_acquire_shared(tuple_awaitable);
        BOOST_TEST(ec == zklock::error::timeout);
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            rb = co_await b.acquire_shared(10s, use_awaitable);
            order.push_back(2);
        }, asio::detached);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return count_with(co_await children(ss[0], path), "__READ__") == 2;
        }));
        co_await ra.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return order.size() == 1; }));
        BOOST_TEST(order[0] == 1);
        co_await wc.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return order.size() == 2; }));
        co_await rb.release(use_awaitable);
        BOOST_TEST((co_await children(ss[0], path)).empty());
    });
}

// A session's readers may join its held read node beyond the hand-off bound only until a writer of another
// session is seen queueing behind it. The node asks who follows at its first join: without that look, a
// session whose readers overlap without pause would keep the writer out for ever.
BOOST_AUTO_TEST_CASE(readers_joining_without_pause_let_a_waiting_writer_in)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("rw-cohort");
        shared_mutex a(ss[0], path), b(ss[1], path);
        auto held = co_await a.acquire_shared(5s, use_awaitable);
        bool writer_in = false, reader_beside_writer = false;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto w = co_await b.acquire(10s, use_awaitable);
            writer_in = true;
            reader_beside_writer = held.owns_lock();
            co_await w.release(use_awaitable);
        }, asio::detached);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return count_with(co_await children(ss[0], path), "__WRIT__") == 1;
        }));
        // Each new reader joins before the one before it leaves: the read node is never free.
        constexpr int most = 200000;
        int joins = 0;
        for (; joins < most; ++joins) {
            auto [ec, next] = co_await a.try_acquire_shared(tuple_awaitable);
            if (ec) {
                BOOST_TEST(ec == zklock::error::timeout);
                break;
            }
            co_await held.release(use_awaitable);
            held = std::move(next);
        }
        BOOST_TEST_MESSAGE("readers joined " << joins << " times before the writer was seen");
        BOOST_TEST(joins < most);  // the writer was seen, and the joins stopped
        BOOST_TEST(joins >= 9);    // within the bound (10 grants a node) joins are never refused
        BOOST_TEST(!writer_in);
        co_await held.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return writer_in; }));
        BOOST_TEST(!reader_beside_writer);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(ss[0], path)).empty();
        }));
    });
}

BOOST_AUTO_TEST_CASE(local_readers_share_one_read_node)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("rw-local");
        shared_mutex rw(ss[0], path);
        std::vector<guard> held;
        for (int i = 0; i < 5; ++i) held.push_back(co_await rw.acquire_shared(5s, use_awaitable));
        const auto kids = co_await children(ss[0], path);
        BOOST_TEST(kids.size() == 1u);
        BOOST_TEST(count_with(kids, "__READ__") == 1u);
        for (auto& g : held) BOOST_TEST(g.node() == held[0].node());
        for (std::size_t i = 1; i < held.size(); ++i) BOOST_TEST((held[i - 1].token() < held[i].token()));
        for (auto& g : held) co_await g.release(use_awaitable);
        BOOST_TEST((co_await children(ss[0], path)).empty());
    });
}

BOOST_AUTO_TEST_CASE(a_writer_downgrades_without_letting_another_writer_in)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("rw-downgrade");
        shared_mutex a(ss[0], path), b(ss[1], path);
        auto w = co_await a.acquire(5s, use_awaitable);
        auto r = co_await a.acquire_shared(w, use_awaitable);  // at once, while writing
        BOOST_TEST(r.owns_lock());
        guard other;
        bool got = false;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            other = co_await b.acquire(10s, use_awaitable);
            got = true;
        }, asio::detached);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return count_with(co_await children(ss[0], path), "__WRIT__") == 2;
        }));
        co_await w.release(use_awaitable);
        co_await pause(300ms);  // time for a wrong grant to show
        BOOST_TEST(!got);
        BOOST_TEST(!r.lost());
        co_await r.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return got; }));
        auto [ec, none] = co_await a.acquire_shared(w, tuple_awaitable);  // w is empty now
        BOOST_TEST(ec == zklock::error::not_held);
        co_await other.release(use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(a_path_of_another_schema_is_refused_and_left_as_it_was)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("rw-schema");
        mutex m(ss[0], path);
        auto g = co_await m.acquire(5s, use_awaitable);
        shared_mutex rw(ss[1], path);
        auto [ec, r] = co_await rw.acquire_shared(5s, tuple_awaitable);
        BOOST_TEST(ec == zklock::error::schema_mismatch);
        auto [ec2, w] = co_await rw.acquire(5s, tuple_awaitable);
        BOOST_TEST(ec2 == zklock::error::schema_mismatch);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(ss[0], path)).size() == 1;  // the mutex's node only
        }));
        co_await g.release(use_awaitable);

        auto wg = co_await rw.acquire(5s, use_awaitable);  // now the path is free: a writer
        auto [ec3, mg] = co_await m.acquire(5s, tuple_awaitable);
        BOOST_TEST(ec3 == zklock::error::schema_mismatch);
        co_await wg.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(ss[0], path)).empty();
        }));
    });
}

BOOST_AUTO_TEST_CASE(timeouts_and_cancellation_leave_no_node)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("rw-timeout");
        shared_mutex a(ss[0], path), b(ss[1], path);
        auto w = co_await a.acquire(5s, use_awaitable);
        auto [ec, r] = co_await b.acquire_shared(150ms, tuple_awaitable);
        BOOST_TEST(ec == zklock::error::timeout);
        // Its node goes in the background (b deletes it once its create is answered): seen gone first, so
        // that the counts below are of the cancelled reader's node, not of this one. After a round trip of
        // b's, its answers to the timed-out acquire are in (one session's answers come in order).
        co_await ss[1].async_exists(path, use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(ss[0], path)).size() == 1;
        }));
        asio::cancellation_signal sig;
        zklock::error_code cec;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [e, g] = co_await b.acquire_shared(asio::bind_cancellation_slot(sig.slot(), tuple_awaitable));
            cec = e;
        }, asio::detached);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(ss[0], path)).size() == 2;
        }));
        sig.emit(asio::cancellation_type::terminal);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(ss[0], path)).size() == 1;
        }));
        BOOST_TEST(cec == asio::error::operation_aborted);
        co_await w.release(use_awaitable);  // completes once ZooKeeper has deleted the node
        BOOST_TEST((co_await children(ss[0], path)).empty());
    });
}

BOOST_AUTO_TEST_SUITE_END()  // shared_mutex_tests
