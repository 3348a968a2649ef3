// A lock that one session takes again and again creates its next node without listing the directory,
// when the create's sequence proves the node first (src/recipes/core/sequence_proof.hpp). Against a real
// ZooKeeper: the listing is saved, and every way the proof could be wrong is seen: another process's
// node in between, and the directory deleted and made again with the count run up to the same number.
#define BOOST_TEST_MODULE zklock mutex sequence proof
#include "mutex_util.hpp"

#include <zklock/detail/sequence.hpp>

#include <optional>

using namespace test;
using namespace mutex_test;
using zklock::mutex;

namespace {

std::int32_t sequence_of(const std::string& node)
{
    const auto seq = zklock::detail::parse_sequence(node);
    BOOST_REQUIRE(seq.has_value());
    return *seq;
}

/// Takes and releases `m` `times` times; returns the sequence of the last node held.
asio::awaitable<std::int32_t> cycle(mutex& m, int times)
{
    std::int32_t last = -1;
    for (int i = 0; i < times; ++i) {
        auto g = co_await m.acquire(5s, use_awaitable);
        last = sequence_of(g.node());
        co_await g.release(use_awaitable);
    }
    co_return last;
}

/// Takes the lock on `path` again and again, alone: two warm-up cycles (the second sets the directory
/// watch), then 40 measured. `object_per_cycle`: a new lock object each time (the README's way), else one
/// throughout. Checks that no other node came in between, and that nothing is left; returns the ZooKeeper
/// requests per measured cycle.
asio::awaitable<double> requests_per_cycle(zklock::session& s, const std::string& path, bool object_per_cycle)
{
    std::optional<mutex> kept;
    if (!object_per_cycle) kept.emplace(s, path);
    auto next = [&]() -> mutex {
        return kept ? *kept : mutex(s, path);  // copies share the session's queue on the path
    };
    std::int32_t seq = -1;
    for (int i = 0; i < 2; ++i) {
        auto m = next();
        seq = co_await cycle(m, 1);
    }
    const int cycles = 40;
    const auto before = s.stats().requests;
    for (int i = 0; i < cycles; ++i) {
        auto m = next();
        auto g = co_await m.acquire(5s, use_awaitable);
        BOOST_TEST(sequence_of(g.node()) == seq + 1);  // nobody else created a node in between
        seq = sequence_of(g.node());
        co_await g.release(use_awaitable);
    }
    const auto per_cycle = static_cast<double>(s.stats().requests - before) / cycles;
    BOOST_TEST((co_await children(s, path)).empty());
    co_return per_cycle;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sequence_proof)

// A create and a delete a cycle; a listing would make it three. (A hold the scheduler stretches past
// local_queue::own_watch_delay_ms adds a read of our own node: the bound leaves a margin for a slow machine.)
BOOST_AUTO_TEST_CASE(a_lock_taken_again_and_again_is_not_listed_each_time)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto per_cycle = co_await requests_per_cycle(ss[0], unique_path("again"), false);
        BOOST_TEST(per_cycle < 2.5, "requests per cycle: " << per_cycle);
    });
}

// The README's way: a lock object made for each request. The session remembers the key between them.
BOOST_AUTO_TEST_CASE(a_lock_object_per_cycle_is_not_listed_each_time_either)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto per_cycle = co_await requests_per_cycle(ss[0], unique_path("per-request"), true);
        BOOST_TEST(per_cycle < 2.5, "requests per cycle: " << per_cycle);
    });
}

BOOST_AUTO_TEST_CASE(another_sessions_node_in_between_is_listed_and_waited_for)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("between");
        mutex mine(ss[0], path), theirs(ss[1], path);
        co_await cycle(mine, 3);
        auto g = co_await theirs.acquire(5s, use_awaitable);  // its node comes right after our last one
        auto [ec, g2] = co_await mine.acquire(300ms, tuple_awaitable);
        BOOST_TEST(ec == zklock::error::timeout, ec.message());
        BOOST_TEST(g.owns_lock());
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {  // the timed-out node goes
            co_return (co_await children(ss[1], path)).size() == 1u;
        }));
        co_await g.release(use_awaitable);
        auto g3 = co_await mine.acquire(5s, use_awaitable);
        BOOST_TEST(g3.owns_lock());
        co_await g3.release(use_awaitable);
        co_await cycle(mine, 2);  // and the proof picks up again
    });
}

// The trap the directory watch is there for. Our last node was n, deleted. The directory is then deleted
// (as ZooKeeper reaps an empty container) and made again by another session, whose nodes count up to n
// and which holds the lock with node n. Our next create answers n + 1, the number that would prove it
// first in the old directory. It must wait.
BOOST_AUTO_TEST_CASE(a_directory_made_again_with_the_same_count_is_listed)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("remade");
        mutex mine(ss[0], path), theirs(ss[1], path);
        const auto n = co_await cycle(mine, 4);
        BOOST_TEST_REQUIRE(n >= 2);
        auto [dec] = co_await ss[1].async_remove(path, -1, tuple_awaitable);
        BOOST_TEST_REQUIRE(!dec, dec.message());
        co_await cycle(theirs, n);  // nodes 0 .. n - 1 in the new directory
        auto g = co_await theirs.acquire(5s, use_awaitable);
        BOOST_TEST_REQUIRE(sequence_of(g.node()) == n);
        auto [ec, g2] = co_await mine.acquire(300ms, tuple_awaitable);
        BOOST_TEST(ec == zklock::error::timeout, ec.message());
        BOOST_TEST(!g2.owns_lock());
        BOOST_TEST(g.owns_lock());
        co_await g.release(use_awaitable);
        auto g3 = co_await mine.acquire(5s, use_awaitable);
        BOOST_TEST(g3.owns_lock());
    });
}

BOOST_AUTO_TEST_CASE(dropped_guards_pipeline_the_delete_before_the_next_create)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("dropped");
        mutex mine(ss[0], path), theirs(ss[1], path);
        bool inside = false;
        int overlaps = 0, done = 0;
        // Two sessions drop their guards (the delete goes in the background, ahead of the next create).
        auto worker = [&](mutex& m) -> asio::awaitable<void> {
            for (int i = 0; i < 30; ++i) {
                auto g = co_await m.acquire(10s, use_awaitable);
                if (std::exchange(inside, true)) ++overlaps;
                co_await asio::post(co_await asio::this_coro::executor, use_awaitable);
                inside = false;
            }
            ++done;
        };
        asio::co_spawn(ioc, worker(mine), asio::detached);
        asio::co_spawn(ioc, worker(theirs), asio::detached);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return done == 2; }, 30s));
        BOOST_TEST(overlaps == 0);
        BOOST_TEST(co_await eventually(
            [&]() -> asio::awaitable<bool> { co_return (co_await children(ss[0], path)).empty(); }));
    });
}

BOOST_AUTO_TEST_SUITE_END()
