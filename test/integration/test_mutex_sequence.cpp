// A lock that one session takes again and again creates its next node without listing the directory,
// when the create's sequence proves the node first (src/recipes/core/sequence_proof.hpp). Against a real
// ZooKeeper: the listing is saved, and every way the proof could be wrong is seen: another process's
// node in between, and the directory deleted and made again with the count run up to the same number.
#include "mutex_util.hpp"

#include <zklock/detail/sequence.hpp>
#include <zklock/testing/faults.hpp>

#include <map>
#include <optional>

BOOST_AUTO_TEST_SUITE(mutex_sequence_tests)

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

/// The ZooKeeper requests of `kind` that `s` has sent so far.
std::uint64_t sent(const zklock::session& s, const std::string& kind)
{
    const auto all = s.stats().requests_by_kind;
    const auto it = all.find(kind);
    return it == all.end() ? 0 : it->second.sent;
}

/// The token a holder must have: its node's creation zxid, as the server has it.
asio::awaitable<void> check_token(zklock::session& s, const zklock::guard& g)
{
    auto [ec, st] = co_await s.async_exists(g.node(), tuple_awaitable);
    BOOST_TEST_REQUIRE(!ec, ec.message());
    BOOST_TEST_REQUIRE(st.has_value());
    BOOST_TEST(g.token().zxid == st->czxid, g.node());
}

/// Locks on `n` paths of one session, each taken a few times alone, so that the next create of each is
/// expected first by its sequence (and may go in a multi with the others of its turn).
struct independent_locks {
    std::string base;
    std::vector<mutex> locks;
    independent_locks(zklock::session& s, const std::string& what, std::size_t n) : base(unique_path(what))
    {
        for (std::size_t i = 0; i < n; ++i) locks.emplace_back(s, base + "/r" + std::to_string(i));
    }
    asio::awaitable<void> warm_up()
    {
        for (auto& m : locks) co_await cycle(m, 3);
    }
    std::string path(std::size_t i) const { return base + "/r" + std::to_string(i); }
};

/// Acquires every lock of `l` at once (one coroutine each, started in one turn), checks each holder's
/// token and that it is alone in its path, and releases (counting them in `done`); then checks that every
/// node is gone.
asio::awaitable<void> take_all_at_once(zklock::session& s, independent_locks& l, std::map<std::string, int>& inside,
                                       std::size_t& done)
{
    const auto ex = co_await asio::this_coro::executor;
    for (std::size_t i = 0; i < l.locks.size(); ++i)
        asio::co_spawn(
            ex,
            [&, i]() -> asio::awaitable<void> {
                auto g = co_await l.locks[i].acquire(10s, use_awaitable);
                BOOST_TEST(++inside[l.path(i)] == 1, "two holders in " << l.path(i));
                co_await check_token(s, g);
                --inside[l.path(i)];
                co_await g.release(use_awaitable);
            },
            [&](std::exception_ptr e) {
                ++done;
                if (e) std::rethrow_exception(e);
            });
    BOOST_TEST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return done == l.locks.size(); }));
    for (std::size_t i = 0; i < l.locks.size(); ++i) BOOST_TEST((co_await children(s, l.path(i))).empty());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(batched_creates)

// Independent locks of one session taken in one turn: their creates go as one multi (one transaction),
// and each node's stat, whose czxid is the fencing token, is read right behind it from the name that the
// sequence predicts (an exists each, in the same round trip).
BOOST_AUTO_TEST_CASE(the_creates_of_one_turn_go_as_one_multi_and_each_holder_has_its_token)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        independent_locks l(ss[0], "batch", 6);
        co_await l.warm_up();
        const auto creates = sent(ss[0], "create"), reads = sent(ss[0], "exists");
        std::map<std::string, int> inside;
        std::size_t done = 0;
        co_await take_all_at_once(ss[0], l, inside, done);
        BOOST_TEST(sent(ss[0], "create") - creates == 1u);  // six creates, one request
        // Six reads behind the multi, and the six of check_token.
        BOOST_TEST(sent(ss[0], "exists") - reads == 12u);
    });
}

// One path's predicted name is taken by another session's node: that create's read finds nothing, and its
// node waits in line; its token is read once it holds.
BOOST_AUTO_TEST_CASE(a_create_in_a_multi_that_gets_another_name_waits_and_reads_its_token)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        independent_locks l(ss[0], "batch-between", 4);
        co_await l.warm_up();
        mutex theirs(ss[1], l.path(0));
        auto g = co_await theirs.acquire(5s, use_awaitable);  // its node comes right after our last one there
        std::map<std::string, int> inside;
        ++inside[l.path(0)];
        const auto creates = sent(ss[0], "create");
        bool all_done = false;
        std::size_t done = 0;
        asio::co_spawn(
            co_await asio::this_coro::executor,
            [&]() -> asio::awaitable<void> {
                co_await take_all_at_once(ss[0], l, inside, done);
                all_done = true;
            },
            [](std::exception_ptr e) {
                if (e) std::rethrow_exception(e);
            });
        // The three others are taken and released behind the multi; path 0 waits for `theirs`.
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return done == 3u && (co_await children(ss[1], l.path(0))).size() == 2u;
        }));
        BOOST_TEST(sent(ss[0], "create") - creates == 1u);
        BOOST_TEST(!all_done);
        --inside[l.path(0)];
        co_await g.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return all_done; }));
    });
}

// The multi is applied but its answer is lost with the connection: each contender finds its node by its
// protected name after the reconnect, reads its token, and holds; nothing is left behind.
BOOST_AUTO_TEST_CASE(a_multi_whose_answer_is_lost_finds_its_nodes_and_their_tokens)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        independent_locks l(ss[0], "batch-lost", 4);
        co_await l.warm_up();
        const auto creates = sent(ss[0], "create");
        zklock::testing::lose_next_applied_answer(ss[0], "create");
        std::map<std::string, int> inside;
        std::size_t done = 0;
        co_await take_all_at_once(ss[0], l, inside, done);
        BOOST_TEST(sent(ss[0], "create") - creates == 1u);  // none was made again
        BOOST_TEST(ss[0].stats().connections >= 2u);        // the fault really dropped the connection
    });
}

// A dropped guard's delete is still held when the next acquire creates: both go as one multi, one
// transaction a cycle, and the create is proven first (the delete's answer is known before the create's),
// so no cycle lists the directory.
BOOST_AUTO_TEST_CASE(a_dropped_guards_delete_and_the_next_create_go_as_one_multi)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("dropped-multi");
        mutex m(ss[0], path);
        co_await cycle(m, 3);
        const auto creates = sent(ss[0], "create"), removes = sent(ss[0], "remove"),
                   listings = sent(ss[0], "get_children");
        const int cycles = 20;
        std::optional<zklock::fencing_token> last;
        for (int i = 0; i < cycles; ++i) {
            auto g = co_await m.acquire(5s, use_awaitable);
            co_await check_token(ss[0], g);
            BOOST_TEST((!last || *last < g.token()));  // every tenure's token is greater
            last = g.token();
        }  // dropped: its delete waits for the next create
        {
            auto g = co_await m.acquire(5s, use_awaitable);
            co_await g.release(use_awaitable);
        }
        BOOST_TEST(sent(ss[0], "create") - creates == static_cast<std::uint64_t>(cycles + 1));
        BOOST_TEST(sent(ss[0], "remove") - removes == 1u);  // the last, awaited; the others went with a create
        BOOST_TEST(sent(ss[0], "get_children") - listings == 0u);
        BOOST_TEST((co_await children(ss[0], path)).empty());
    });
}

// Strict FIFO (local_handoff_limit 0): a release with a local waiter deletes the node and creates the
// waiter's, which queues behind another session's. Both writes go as one multi, and the new node's token
// comes with the read that watches it while it waits.
BOOST_AUTO_TEST_CASE(a_contended_release_and_its_next_waiters_node_go_as_one_multi)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("fifo-multi");
        mutex mine(ss[0], path, {.local_handoff_limit = 0}), theirs(ss[1], path);
        {  // ours waits behind theirs once: our next creates go with their listing
            auto g = co_await theirs.acquire(5s, use_awaitable);
            asio::co_spawn(ioc, cycle(mine, 1), asio::detached);
            BOOST_TEST(co_await mine.async_wait_place(0, use_awaitable) == 1u);
            co_await g.release(use_awaitable);
        }
        auto first = co_await mine.acquire(5s, use_awaitable);
        std::vector<std::string> order;  // who held, in turn
        int inside = 0, done = 0;
        auto take = [&](zklock::session& s, mutex& m, std::string who) -> asio::awaitable<void> {
            auto g = co_await m.acquire(5s, use_awaitable);
            BOOST_TEST(++inside == 1, "two holders");
            order.push_back(who);
            co_await check_token(s, g);
            --inside;
            co_await g.release(use_awaitable);
            ++done;
        };
        asio::co_spawn(ioc, take(ss[0], mine, "mine"), asio::detached);  // waits here, behind `first`
        asio::co_spawn(ioc, take(ss[1], theirs, "theirs"), asio::detached);
        BOOST_TEST(co_await theirs.async_wait_place(0, use_awaitable) == 1u);  // queued behind ours
        const auto creates = sent(ss[0], "create"), removes = sent(ss[0], "remove");
        co_await first.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return done == 2; }));
        BOOST_TEST(order == (std::vector<std::string>{"theirs", "mine"}));  // strict FIFO: theirs was ahead
        BOOST_TEST(sent(ss[0], "create") - creates == 1u);  // the multi: our delete and our next node
        BOOST_TEST(sent(ss[0], "remove") - removes == 1u);  // the last release alone
        BOOST_TEST((co_await children(ss[0], path)).empty());
    });
}

BOOST_AUTO_TEST_SUITE_END()

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

// A node that had to wait behind another session's node: that session is likely to create again between
// our creates, so the next create goes with its listing instead of by its sequence (a miss would cost a
// listing all the same, and the reads of the predicted name and of the token besides).
BOOST_AUTO_TEST_CASE(a_node_that_waited_behind_another_makes_the_next_create_with_its_listing)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("waited");
        mutex mine(ss[0], path), theirs(ss[1], path);
        co_await cycle(mine, 3);
        auto listings = sent(ss[0], "get_children");
        co_await cycle(mine, 1);
        BOOST_TEST(sent(ss[0], "get_children") - listings == 0u);  // alone: by its sequence
        auto g = co_await theirs.acquire(5s, use_awaitable);
        bool got = false;
        asio::co_spawn(
            ioc,
            [&]() -> asio::awaitable<void> {
                auto g2 = co_await mine.acquire(5s, use_awaitable);
                got = true;
                co_await g2.release(use_awaitable);
            },
            asio::detached);
        // Ours has found itself behind theirs (not merely created: seen first, it would hold unqueued).
        BOOST_TEST(co_await mine.async_wait_place(0, use_awaitable) == 1u);
        BOOST_TEST(!got);
        co_await g.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return got && (co_await children(ss[1], path)).empty();
        }));
        listings = sent(ss[0], "get_children");
        co_await cycle(mine, 1);
        BOOST_TEST(sent(ss[0], "get_children") - listings == 1u);  // the listing pipelined with the create
    });
}

// Another session that takes the lock between our cycles without ever queueing behind our node (its
// node comes after ours is gone) makes our create by sequence miss, and a miss costs its listing a round
// trip late. So after a miss our creates go with their listing, until one of them shows that the proof
// would have held: then by sequence again.
BOOST_AUTO_TEST_CASE(after_a_miss_the_next_creates_go_with_their_listing_until_the_proof_would_hold)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("missed");
        mutex mine(ss[0], path), theirs(ss[1], path);
        auto listings_in = [&](int cycles) -> asio::awaitable<std::uint64_t> {
            const auto before = sent(ss[0], "get_children");
            const auto seq = co_await cycle(mine, cycles);
            BOOST_TEST(seq >= 0);
            co_return sent(ss[0], "get_children") - before;
        };
        co_await cycle(mine, 3);
        BOOST_TEST(co_await listings_in(1) == 0u);  // alone: by its sequence
        co_await cycle(theirs, 1);                   // in between, never behind us
        BOOST_TEST(co_await listings_in(1) == 1u);  // by sequence, missed, listed after its answer
        BOOST_TEST(co_await listings_in(1) == 1u);  // with its listing, which shows the proof would have held
        BOOST_TEST(co_await listings_in(2) == 0u);  // so by sequence again
        BOOST_TEST((co_await children(ss[1], path)).empty());
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

// Issue 48.11: each memo kept a directory watch on the server until its directory changed, after its lock
// objects were gone, so a session that locked many paths left one watch per path for its life (the
// client's memos were cleared at 4,096, the watches stayed). They are bounded now, whatever the number of
// paths: 1,300 paths, each locked twice with a new lock object each time, leave at most 1,024.
BOOST_AUTO_TEST_CASE(the_directory_watches_a_session_leaves_are_bounded_whatever_the_number_of_paths)
{
    zklock::testing::server zk;  // its own: wchc counts this test's watches only
    asio::io_context ioc;
    zklock::session s(ioc, config_for(zk.connect_string()));
    constexpr int paths = 1300, workers = 16;
    constexpr std::size_t bound = 1024;  // recipe_registry::max_directory_watches, as documented
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await s.async_connect(use_awaitable);
        const auto base = unique_path("dir-watches");
        int done = 0, failed = 0;
        for (int w = 0; w < workers; ++w)
            asio::co_spawn(ioc, [&, w]() -> asio::awaitable<void> {
                for (int p = w; p < paths; p += workers)
                    for (int round = 0; round < 2; ++round) {
                        mutex m(s, base + "/p" + std::to_string(p));  // a new lock object each time
                        auto [ec, g] = co_await m.acquire(10s, tuple_awaitable);
                        if (ec) ++failed;
                        else co_await g.release(tuple_awaitable);
                    }
                ++done;
            }, asio::detached);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return done == workers; }, 120s));
        BOOST_TEST(failed == 0);
        const auto watched = watched_paths(zk.four_letter("wchc"), s.id());
        BOOST_TEST_MESSAGE("directory watches left: " << watched.size() << " for " << paths << " paths");
        BOOST_TEST(watched.size() <= bound);
        BOOST_TEST(watched.size() > 0u);  // the proof is still used
        co_await s.async_close(tuple_awaitable);
    }, 180s);
}

BOOST_AUTO_TEST_SUITE_END()  // mutex_sequence_tests
