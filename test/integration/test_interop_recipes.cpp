// zklock and Apache Curator on the same path, both ways, for the read/write lock (Curator's
// InterProcessReadWriteLock) and the semaphore (Curator's InterProcessSemaphoreV2). The Curator side runs
// test/interop/CuratorReadWrite.java and CuratorSemaphore.java, and talks to the test through files in a
// temporary directory: it publishes "held" or "result", and waits for "release".
#include "test_util.hpp"
#include "interop_util.hpp"
#include "process_util.hpp"

#include <zklock/participants.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/shared_mutex.hpp>

#include <memory>
#include <optional>

BOOST_AUTO_TEST_SUITE(interop_recipes_tests)

using namespace test;
using zklock::guard;
using zklock::semaphore;
using zklock::session;
using zklock::shared_mutex;

namespace {


/// Java starts slowly (a second or two, more on a busy machine): every wait on a Curator peer is long.
constexpr auto peer_limit = 60s;

asio::awaitable<bool> file_appears(const std::string& f)
{
    co_return co_await eventually([&]() -> asio::awaitable<bool> { co_return tools_test::file_exists(f); }, peer_limit);
}

/// One Curator peer: a Java program of test/interop with its own directory for the files it publishes.
class curator {
public:
    /// java ... PROGRAM CONNECT ARGS... DIR
    curator(const std::string& program, const std::vector<std::string>& args)
    {
        std::vector<std::string> argv = interop::curator_java(std::string(ZKLOCK_TEST_DIR) + "/interop/" + program);
        argv.push_back(shared_server().connect_string());
        argv.insert(argv.end(), args.begin(), args.end());
        argv.push_back(dir_.path().string());
        proc_.emplace(argv);
    }
    /// CuratorReadWrite.java: MODE is read-hold, write-hold, read-try or write-try.
    static std::unique_ptr<curator> rw(const std::string& path, const std::string& mode)
    {
        return std::make_unique<curator>("CuratorReadWrite.java", std::vector<std::string>{path, mode});
    }
    /// CuratorSemaphore.java: MODE is hold or try.
    static std::unique_ptr<curator> sem(const std::string& path, std::size_t max_leases, const std::string& mode)
    {
        return std::make_unique<curator>("CuratorSemaphore.java",
                                         std::vector<std::string>{path, std::to_string(max_leases), mode});
    }

    /// True once the peer has published "held" (false if it has not within the peer limit).
    asio::awaitable<bool> holds()
    {
        const std::string held = dir_ / "held";
        const bool appeared = co_await file_appears(held);
        co_return appeared;
    }
    /// Whether "held" is published now (no waiting).
    bool holds_now() const { return tools_test::file_exists(dir_ / "held"); }
    /// The published result of a try ("acquired" or "busy"), or "(none)" if none came within the limit.
    asio::awaitable<std::string> result()
    {
        // Not `if (!co_await file_appears(dir_ / "result"))`: GCC 12 miscompiles a co_await in a condition
        // whose argument is a temporary bound to a reference (the coroutine crashes).
        const std::string file = dir_ / "result";
        const bool appeared = co_await file_appears(file);
        std::string text = appeared ? tools_test::read_file(file) : std::string("(none)");
        co_return text;
    }
    /// Tells a holder to let go.
    void let_go() const { std::ofstream(dir_ / "release") << "go"; }
    /// Waits (without blocking the executor) for the peer to exit: its exit code, or nullopt if it did not.
    asio::awaitable<std::optional<int>> exit_code()
    {
        co_await eventually([&]() -> asio::awaitable<bool> { co_return !proc_->running(); }, peer_limit);
        co_return proc_->wait_for(0ms);
    }
    /// Waits for a clean exit (the peer has released what it held and closed its session).
    asio::awaitable<bool> exits_cleanly()
    {
        const auto code = co_await exit_code();
        co_return code == std::optional<int>(0);
    }

private:
    tools_test::temp_dir dir_;
    std::optional<tools_test::process> proc_;
};

/// True if the peer published the result `expected` (else the check shows what it published).
asio::awaitable<bool> published(const std::unique_ptr<curator>& peer, std::string expected)
{
    const std::string got = co_await peer->result();
    BOOST_TEST(got == expected);
    co_return got == expected;
}

std::size_t count_with(const std::vector<std::string>& names, const std::string& marker)
{
    std::size_t n = 0;
    for (const auto& c : names) n += c.find(marker) != std::string::npos;
    return n;
}

/// Until the children of `path` number `readers` read nodes and `writers` write nodes, and no others.
asio::awaitable<bool> rw_nodes_become(session& s, const std::string& path, std::size_t readers, std::size_t writers)
{
    co_return co_await eventually([&]() -> asio::awaitable<bool> {
        const auto kids = co_await children(s, path);
        co_return kids.size() == readers + writers && count_with(kids, "__READ__") == readers &&
            count_with(kids, "__WRIT__") == writers;
    }, peer_limit);
}

/// Until PATH/leases holds `leases` lease nodes and, if `lock_free`, PATH/locks holds no lock node.
asio::awaitable<bool> sem_nodes_become(session& s, const std::string& path, std::size_t leases, bool lock_free = true)
{
    co_return co_await eventually([&]() -> asio::awaitable<bool> {
        const auto held = co_await children(s, path + "/leases");
        const auto locking = co_await children(s, path + "/locks");
        co_return held.size() == leases && (!lock_free || locking.empty());
    }, peer_limit);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(read_write_lock)

BOOST_AUTO_TEST_CASE(curator_writer_holds_zklock_reader_and_writer_wait)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    const auto path = unique_path("rw-curator-writes");
    auto writer = curator::rw(path, "write-hold");
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        BOOST_REQUIRE_MESSAGE(co_await writer->holds(), "Curator's writer never got the lock");
        BOOST_TEST(co_await rw_nodes_become(ss[0], path, 0, 1));
        shared_mutex r(ss[0], path), w(ss[1], path);
        auto [rec, rnone] = co_await r.acquire_shared(300ms, tuple_awaitable);
        BOOST_TEST(rec == zklock::error::timeout, "Curator writes, yet a zklock reader got in");
        auto [wec, wnone] = co_await w.acquire(300ms, tuple_awaitable);
        BOOST_TEST(wec == zklock::error::timeout, "Curator writes, yet a zklock writer got in");
        BOOST_TEST(co_await rw_nodes_become(ss[0], path, 0, 1));  // the timed-out nodes are gone

        // Both wait (the reader queued first), and get it in turn once Curator lets go.
        guard rg, wg;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { rg = co_await r.acquire_shared(60s, use_awaitable); },
                       asio::detached);
        BOOST_TEST(co_await rw_nodes_become(ss[0], path, 1, 1));
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { wg = co_await w.acquire(60s, use_awaitable); },
                       asio::detached);
        BOOST_TEST(co_await rw_nodes_become(ss[0], path, 1, 2));
        BOOST_TEST(!rg);
        BOOST_TEST(!wg);
        writer->let_go();
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return rg.owns_lock(); }, peer_limit));
        BOOST_TEST(rg.node().find("__READ__") != std::string::npos);
        BOOST_TEST(co_await writer->exits_cleanly());
        BOOST_TEST(co_await rw_nodes_become(ss[0], path, 1, 1));
        BOOST_TEST(!wg);  // behind the zklock reader
        co_await rg.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return wg.owns_lock(); }));
        BOOST_TEST(wg.node().find("__WRIT__") != std::string::npos);
        co_await wg.release(use_awaitable);
        BOOST_TEST((co_await children(ss[0], path)).empty());
    }, 180s);
}

BOOST_AUTO_TEST_CASE(zklock_writer_holds_curator_reader_and_writer_are_busy)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    const auto path = unique_path("rw-zklock-writes");
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        shared_mutex w(ss[0], path);
        auto g = co_await w.acquire(5s, use_awaitable);
        BOOST_TEST(g.node().find("__WRIT__") != std::string::npos);
        {
            auto reader = curator::rw(path, "read-try");
            auto writer = curator::rw(path, "write-try");
            BOOST_TEST(co_await published(reader, "busy"), "Curator's reader got in while zklock writes");
            BOOST_TEST(co_await published(writer, "busy"), "Curator's writer got in while zklock writes");
            BOOST_TEST(co_await reader->exits_cleanly());
            BOOST_TEST(co_await writer->exits_cleanly());
        }
        BOOST_TEST(co_await rw_nodes_become(ss[0], path, 0, 1));  // Curator's timed-out nodes are gone
        BOOST_TEST(!g.lost());
        co_await g.release(use_awaitable);
        auto reader = curator::rw(path, "read-try");
        BOOST_TEST(co_await published(reader, "acquired"));
        BOOST_TEST(co_await reader->exits_cleanly());
        BOOST_TEST((co_await children(ss[0], path)).empty());
    }, 180s);
}

// A downgraded zklock reader lets Curator's readers in once its write guard goes; Curator's writer still
// waits for it.
BOOST_AUTO_TEST_CASE(zklock_downgrades_curator_reader_joins_curator_writer_is_busy)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    const auto path = unique_path("rw-zklock-downgrades");
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        shared_mutex rw(ss[0], path);
        auto w = co_await rw.acquire(5s, use_awaitable);
        auto r = co_await rw.acquire_shared(w, use_awaitable);
        co_await w.release(use_awaitable);
        BOOST_TEST(r.node().find("__READ__") != std::string::npos);  // a read node of its own
        {
            auto reader = curator::rw(path, "read-try");
            BOOST_TEST(co_await published(reader, "acquired"), "Curator's reader stayed out of a downgraded read lock");
            BOOST_TEST(co_await reader->exits_cleanly());
        }
        {
            // One after the other: a writer queued ahead of Curator's reader would rightly keep it out.
            auto writer = curator::rw(path, "write-try");
            BOOST_TEST(co_await published(writer, "busy"), "Curator's writer got in beside a downgraded reader");
            BOOST_TEST(co_await writer->exits_cleanly());
        }
        BOOST_TEST(!r.lost());
        co_await r.release(use_awaitable);
        auto writer = curator::rw(path, "write-try");
        BOOST_TEST(co_await published(writer, "acquired"));
        BOOST_TEST(co_await writer->exits_cleanly());
        BOOST_TEST((co_await children(ss[0], path)).empty());
    }, 180s);
}

// Curator's own downgrade (write, then read, then the write released): zklock's reader joins it, zklock's
// writer waits for its read lock.
BOOST_AUTO_TEST_CASE(curator_downgrades_zklock_reader_joins_zklock_writer_waits)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    const auto path = unique_path("rw-curator-downgrades");
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        auto peer = curator::rw(path, "downgrade-hold");
        BOOST_TEST(co_await peer->holds());
        BOOST_TEST(co_await rw_nodes_become(ss[0], path, 1, 0));
        shared_mutex rw(ss[0], path);
        auto r = co_await rw.acquire_shared(5s, use_awaitable);  // beside Curator's downgraded reader
        BOOST_TEST(r.owns_lock());
        co_await r.release(use_awaitable);
        auto [ec, none] = co_await rw.acquire(500ms, tuple_awaitable);
        BOOST_TEST(ec == zklock::error::timeout);
        peer->let_go();
        BOOST_TEST(co_await peer->exits_cleanly());
        auto w = co_await rw.acquire(5s, use_awaitable);
        co_await w.release(use_awaitable);
        BOOST_TEST((co_await children(ss[0], path)).empty());
    }, 180s);
}

BOOST_AUTO_TEST_CASE(curator_reader_holds_zklock_reader_shares_it_zklock_writer_waits)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    const auto path = unique_path("rw-curator-reads");
    auto reader = curator::rw(path, "read-hold");
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        BOOST_REQUIRE_MESSAGE(co_await reader->holds(), "Curator's reader never got the lock");
        shared_mutex r(ss[0], path), w(ss[1], path);
        auto [rec, rg] = co_await r.try_acquire_shared(tuple_awaitable);  // readers overlap across clients
        BOOST_TEST(!rec, "a zklock reader could not join Curator's reader: " << rec.message());
        BOOST_TEST(rg.owns_lock());
        BOOST_TEST(co_await rw_nodes_become(ss[0], path, 2, 0));
        auto [wec, wnone] = co_await w.acquire(300ms, tuple_awaitable);
        BOOST_TEST(wec == zklock::error::timeout, "a zklock writer got in with two readers inside");
        co_await rg.release(use_awaitable);
        // Curator's reader alone still keeps the zklock writer out.
        auto [wec2, wnone2] = co_await w.acquire(300ms, tuple_awaitable);
        BOOST_TEST(wec2 == zklock::error::timeout, "a zklock writer got in with Curator's reader inside");
        BOOST_TEST(co_await rw_nodes_become(ss[0], path, 1, 0));
        guard wg;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { wg = co_await w.acquire(60s, use_awaitable); },
                       asio::detached);
        BOOST_TEST(co_await rw_nodes_become(ss[0], path, 1, 1));
        BOOST_TEST(!wg);
        reader->let_go();
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return wg.owns_lock(); }, peer_limit));
        BOOST_TEST(co_await reader->exits_cleanly());
        co_await wg.release(use_awaitable);
        BOOST_TEST((co_await children(ss[0], path)).empty());
    }, 180s);
}

BOOST_AUTO_TEST_CASE(zklock_reader_holds_curator_reader_acquires_curator_writer_is_busy)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    const auto path = unique_path("rw-zklock-reads");
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        shared_mutex r(ss[0], path);
        auto g = co_await r.acquire_shared(5s, use_awaitable);
        BOOST_TEST(g.node().find("__READ__") != std::string::npos);
        {
            auto reader = curator::rw(path, "read-try");
            BOOST_TEST(co_await published(reader, "acquired"), "Curator's reader could not join zklock's reader");
            BOOST_TEST(co_await reader->exits_cleanly());
        }
        {
            // One after the other: a writer queued ahead of Curator's reader would rightly keep it out.
            auto writer = curator::rw(path, "write-try");
            BOOST_TEST(co_await published(writer, "busy"), "Curator's writer got in while zklock reads");
            BOOST_TEST(co_await writer->exits_cleanly());
        }
        BOOST_TEST(co_await rw_nodes_become(ss[0], path, 1, 0));
        BOOST_TEST(!g.lost());
        co_await g.release(use_awaitable);
        auto writer = curator::rw(path, "write-try");
        BOOST_TEST(co_await published(writer, "acquired"));
        BOOST_TEST(co_await writer->exits_cleanly());
        BOOST_TEST((co_await children(ss[0], path)).empty());
    }, 180s);
}

BOOST_AUTO_TEST_CASE(a_zklock_reader_queues_behind_a_waiting_curator_writer)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    const auto path = unique_path("rw-queue");
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        shared_mutex a(ss[0], path), b(ss[1], path);
        auto ra = co_await a.acquire_shared(5s, use_awaitable);
        auto writer = curator::rw(path, "write-hold");
        BOOST_TEST(co_await rw_nodes_become(ss[0], path, 1, 1));  // Curator's writer waits behind zklock's reader
        BOOST_TEST(!writer->holds_now());
        // A reader of another session must not pass the writer that waits.
        auto [ec, none] = co_await b.try_acquire_shared(tuple_awaitable);
        BOOST_TEST(ec == zklock::error::timeout, "a zklock reader passed Curator's waiting writer");
        BOOST_TEST(co_await rw_nodes_become(ss[0], path, 1, 1));
        guard rb;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { rb = co_await b.acquire_shared(90s, use_awaitable); },
                       asio::detached);
        BOOST_TEST(co_await rw_nodes_become(ss[0], path, 2, 1));
        BOOST_TEST(!rb);
        BOOST_TEST(!writer->holds_now());
        co_await ra.release(use_awaitable);
        BOOST_REQUIRE_MESSAGE(co_await writer->holds(), "Curator's writer never got the lock");
        BOOST_TEST(!rb, "a zklock reader got in while Curator writes");
        writer->let_go();
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return rb.owns_lock(); }, peer_limit));
        BOOST_TEST(co_await writer->exits_cleanly());
        co_await rb.release(use_awaitable);
        BOOST_TEST((co_await children(ss[0], path)).empty());
    }, 180s);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(semaphore_of_two)

BOOST_AUTO_TEST_CASE(curator_and_zklock_fill_it_and_a_zklock_waiter_gets_curators_lease)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    const auto path = unique_path("sem-curator-holds");
    auto holder = curator::sem(path, 2, "hold");
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        BOOST_REQUIRE_MESSAGE(co_await holder->holds(), "Curator never got a lease");
        BOOST_TEST(co_await sem_nodes_become(ss[0], path, 1));
        semaphore a(ss[0], path, 2), b(ss[1], path, 2);
        auto ga = co_await a.acquire(5s, use_awaitable);  // the second lease
        BOOST_TEST(ga.node().find("/leases/") != std::string::npos);
        auto [ec, none] = co_await b.try_acquire(tuple_awaitable);
        BOOST_TEST(ec == zklock::error::timeout, "a third holder in a semaphore of two (zklock)");
        {
            auto third = curator::sem(path, 2, "try");
            BOOST_TEST(co_await published(third, "busy"), "a third holder in a semaphore of two (Curator)");
            BOOST_TEST(co_await third->exits_cleanly());
        }
        BOOST_TEST(co_await sem_nodes_become(ss[0], path, 2));  // the tries left nothing behind

        guard gb;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { gb = co_await b.acquire(90s, use_awaitable); },
                       asio::detached);
        BOOST_TEST(co_await sem_nodes_become(ss[0], path, 3, false));  // b waits with its lease node
        BOOST_TEST(!gb);
        holder->let_go();
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return gb.owns_lock(); }, peer_limit));
        BOOST_TEST(co_await holder->exits_cleanly());
        BOOST_TEST(co_await sem_nodes_become(ss[0], path, 2));
        co_await ga.release(use_awaitable);
        co_await gb.release(use_awaitable);
        BOOST_TEST(co_await sem_nodes_become(ss[0], path, 0));
    }, 180s);
}

BOOST_AUTO_TEST_CASE(zklock_holds_both_leases_and_a_curator_waiter_gets_one)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    const auto path = unique_path("sem-zklock-holds");
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        semaphore a(ss[0], path, 2);
        auto both = co_await a.acquire_many(2, 5s, use_awaitable);
        BOOST_REQUIRE(both.size() == 2u);
        {
            auto third = curator::sem(path, 2, "try");
            BOOST_TEST(co_await published(third, "busy"), "Curator got a lease while zklock holds both");
            BOOST_TEST(co_await third->exits_cleanly());
        }
        BOOST_TEST(co_await sem_nodes_become(ss[0], path, 2));
        auto waiter = curator::sem(path, 2, "hold");
        BOOST_TEST(co_await sem_nodes_become(ss[0], path, 3, false));  // Curator waits with its lease node
        BOOST_TEST(!waiter->holds_now());
        // The participants list tells the waiting lease from the held ones (and `zklock break` leaves it).
        auto [pec, list] = co_await zklock::async_participants(ss[0], path, tuple_awaitable);
        BOOST_TEST_REQUIRE(list.size() == 4u);  // three leases, and Curator's node in the internal lock
        BOOST_TEST((list[0].node == both[0].node() && list[0].holds && list[1].node == both[1].node() && list[1].holds));
        BOOST_TEST((list[2].role == "permit" && !list[2].holds), "Curator's waiting lease is listed as holding");
        BOOST_TEST((list[3].role == "waiter" && list[3].session_id == list[2].session_id));
        co_await both[0].release(use_awaitable);
        BOOST_REQUIRE_MESSAGE(co_await waiter->holds(), "Curator never got the lease zklock released");
        BOOST_TEST(co_await sem_nodes_become(ss[0], path, 2));
        std::tie(pec, list) = co_await zklock::async_participants(ss[0], path, tuple_awaitable);
        BOOST_TEST_REQUIRE(list.size() == 2u);
        BOOST_TEST((list[0].holds && list[1].holds), "Curator's lease, granted, is listed as waiting");
        // Full again (Curator + zklock): a zklock try fails.
        auto [ec, none] = co_await a.try_acquire(tuple_awaitable);
        BOOST_TEST(ec == zklock::error::timeout, "a third holder in a semaphore of two (zklock)");
        waiter->let_go();
        BOOST_TEST(co_await waiter->exits_cleanly());
        BOOST_TEST(co_await sem_nodes_become(ss[0], path, 1));
        co_await both[1].release(use_awaitable);
        BOOST_TEST(co_await sem_nodes_become(ss[0], path, 0));
    }, 180s);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // interop_recipes_tests
