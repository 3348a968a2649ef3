// The distributed mutex against a real ZooKeeper: waiting and its timeouts, cancellation, no herd, fencing,
// loss, bad input, callbacks and futures. (Mutual exclusion and local hand-off: test_mutex.cpp.)
#include "mutex_util.hpp"
#include "recipes/core/contender_machine.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <set>

BOOST_AUTO_TEST_SUITE(mutex_wait_tests)

using namespace test;
using namespace mutex_test;
using namespace boost::asio::experimental::awaitable_operators;
using zklock::create_mode;
using zklock::mutex;
using zklock::session;

BOOST_AUTO_TEST_SUITE(waiting)

BOOST_AUTO_TEST_CASE(a_waiter_times_out_within_its_deadline_and_leaves_no_node)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("timeout");
        mutex a(ss[0], path), b(ss[1], path);
        auto held = co_await a.acquire(10s, use_awaitable);
        const auto t0 = std::chrono::steady_clock::now();
        auto [ec, g] = co_await b.acquire(500ms, tuple_awaitable);
        const auto took = std::chrono::steady_clock::now() - t0;
        BOOST_TEST(ec == zklock::error::timeout);
        BOOST_TEST(ec != asio::error::operation_aborted);
        BOOST_TEST(!g.owns_lock());
        BOOST_TEST(took >= 500ms);
        BOOST_TEST(took < 1500ms);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(ss[0], path)).size() == 1u;
        }));
        // A zero timeout is one look.
        auto [ec0, g0] = co_await b.try_acquire(tuple_awaitable);
        BOOST_TEST(ec0 == zklock::error::timeout);
        co_await held.release(use_awaitable);
        auto [ec1, g1] = co_await b.try_acquire(tuple_awaitable);
        BOOST_TEST(!ec1);
        BOOST_TEST(g1.owns_lock());
        co_await g1.release(use_awaitable);
        BOOST_TEST((co_await children(ss[0], path)).empty());
    });
}

BOOST_AUTO_TEST_CASE(a_try_behind_a_local_waiter_is_one_look)
{
    asio::io_context ioc;
    session s(ioc, config_for(shared_server().connect_string()));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await s.async_connect(use_awaitable);
        mutex m(s, unique_path("one-look"));
        zklock::guard first;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { first = co_await m.acquire(10s, use_awaitable); },
                       asio::detached);
        co_await asio::post(ioc, use_awaitable);  // the first acquire is under way
        const auto t0 = std::chrono::steady_clock::now();
        auto [ec, g] = co_await m.try_acquire(tuple_awaitable);
        BOOST_TEST(ec == zklock::error::timeout);
        BOOST_TEST((std::chrono::steady_clock::now() - t0 < 1s));
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return first.owns_lock(); }));
        co_await first.release(use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(cancellation_by_or_and_by_signal_leaves_no_node_and_no_watch)
{
    asio::io_context ioc;
    sessions ss(ioc, 3);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("cancel");
        mutex holder(ss[0], path), by_or(ss[1], path), by_signal(ss[2], path);
        auto held = co_await holder.acquire(10s, use_awaitable);

        asio::steady_timer t(ioc, 300ms);
        auto r = co_await (by_or.acquire(use_awaitable) || t.async_wait(use_awaitable));
        BOOST_TEST(r.index() == 1u);

        asio::cancellation_signal sig;
        auto op = by_signal.acquire(asio::bind_cancellation_slot(sig.slot(), tuple_awaitable));
        asio::steady_timer t2(ioc, 300ms);
        t2.async_wait([&](error_code) { sig.emit(asio::cancellation_type::terminal); });
        auto [ec, g] = co_await std::move(op);
        BOOST_TEST(ec == asio::error::operation_aborted);
        BOOST_TEST(!g.owns_lock());

        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(ss[0], path)).size() == 1u;
        }), "the cancelled waiters' nodes are still there");
        // The waiters' watches on the holder's node are forgotten by the client; the server drops them
        // when that node goes (the C client cannot remove them earlier), and none is delivered.
        const auto events = ss[1].stats().watch_events + ss[2].stats().watch_events;
        co_await held.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            const auto w = shared_server().four_letter("wchc");
            co_return watched_paths(w, ss[1].id()).empty() && watched_paths(w, ss[2].id()).empty();
        }), "a watch of a cancelled waiter is left on the server");
        BOOST_TEST(ss[1].stats().watch_events + ss[2].stats().watch_events == events);
        BOOST_TEST((co_await children(ss[0], path)).empty());

        // The lock still works for them afterwards.
        auto again = co_await by_or.acquire(5s, use_awaitable);
        BOOST_TEST(again.owns_lock());
    });
}

// No herd: a waiter watches every node ahead only while there are at most max_watched_ahead of them, so a
// release wakes at most that many (those that do not hold yet count down, and send nothing: the machine's
// table tests show that).
BOOST_AUTO_TEST_CASE(a_release_wakes_at_most_max_watched_ahead_waiters)
{
    asio::io_context ioc;
    sessions ss(ioc, 51);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("herd");
        std::vector<zklock::guard> holders(51);
        int acquired = 0;
        mutex first(ss[0], path);
        holders[0] = co_await first.acquire(10s, use_awaitable);
        for (std::size_t i = 1; i < 51; ++i) {
            asio::co_spawn(ioc, [&, i]() -> asio::awaitable<void> {
                mutex m(ss[i], path);
                holders[i] = co_await m.acquire(120s, use_awaitable);
                ++acquired;
            }, asio::detached);
            // Queue them in order, so that each release has a known successor.
            BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> {
                co_return (co_await children(ss[0], path)).size() == i + 1;
            }));
        }
        // Every waiter has set its watches: on each node ahead and its own while at most max_watched_ahead
        // are ahead, else on the one just ahead.
        using zklock::detail::max_watched_ahead;
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> {
            const auto w = shared_server().four_letter("wchc");
            for (std::size_t j = 1; j < ss.size(); ++j)
                if (watched_paths(w, ss[j].id()).size() != (j <= max_watched_ahead ? j + 1 : 1)) co_return false;
            co_return true;
        }));
        // The watch events of the sessions other than the releaser and the next holder.
        auto events_of_others = [&](std::size_t releaser) {
            std::uint64_t n = 0;
            for (std::size_t j = 0; j < ss.size(); ++j)
                if (j != releaser && j != releaser + 1) n += ss[j].stats().watch_events;
            return n;
        };
        for (std::size_t i = 0; i < 50; ++i) {
            const auto events = events_of_others(i);
            co_await holders[i].release(use_awaitable);
            BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return holders[i + 1].owns_lock(); }));
            // Those still waiting that had at most max_watched_ahead ahead when they queued hear of it.
            const std::uint64_t watching = i + 1 < max_watched_ahead ? max_watched_ahead - 1 - i : 0;
            BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
                co_return events_of_others(i) - events == watching;
            }), "release " << i << " woke " << events_of_others(i) - events);
        }
        co_await holders[50].release(use_awaitable);
        BOOST_TEST(acquired == 50);
    }, 180s);
}

BOOST_AUTO_TEST_CASE(fencing_tokens_grow_across_sessions_and_hand_offs)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("fence");
        mutex a(ss[0], path), b(ss[1], path);
        auto g1 = co_await a.acquire(5s, use_awaitable);
        const auto t1 = g1.token();
        BOOST_TEST(t1.zxid > 0);
        BOOST_TEST(g1.node().rfind(path + "/_c_", 0) == 0u);
        BOOST_TEST(g1.node().find("-lock-") != std::string::npos);
        co_await g1.release(use_awaitable);
        auto g2 = co_await b.acquire(5s, use_awaitable);
        BOOST_TEST((t1 < g2.token()));
        co_await g2.release(use_awaitable);
    });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(loss_and_bad_input)

BOOST_AUTO_TEST_CASE(the_holder_learns_when_another_client_deletes_its_node)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("deleted");
        mutex m(ss[0], path);
        auto g = co_await m.acquire(5s, use_awaitable);
        BOOST_TEST(!g.lost());
        co_await ss[1].async_remove(g.node(), -1, use_awaitable);
        asio::steady_timer limit(ioc, 10s);
        auto r = co_await (g.async_wait_lost(use_awaitable) || limit.async_wait(use_awaitable));
        BOOST_REQUIRE(r.index() == 0u);
        BOOST_TEST(std::get<0>(r) == zklock::error::lock_node_deleted);
        BOOST_TEST(g.lost() == zklock::error::lock_node_deleted);
        auto [ec] = co_await g.release(tuple_awaitable);
        BOOST_TEST(ec == zklock::error::lock_node_deleted);
        // The lock is usable again.
        auto g2 = co_await m.acquire(5s, use_awaitable);
        BOOST_TEST(g2.owns_lock());
    });
}

// Nobody listens here: the node is watched once held a moment (local_queue::own_watch_delay_ms), so a holder
// that only polls lost() hears of the deletion too, whether it came before the watch or after.
BOOST_AUTO_TEST_CASE(a_holder_that_only_polls_hears_of_a_deletion_too)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        for (const bool at_once : {true, false}) {
            mutex m(ss[0], unique_path("polled"));
            auto g = co_await m.acquire(5s, use_awaitable);
            asio::steady_timer step(ioc);
            if (!at_once) {  // long enough for the watch to be set before the deletion
                step.expires_after(50ms);
                co_await step.async_wait(use_awaitable);
            }
            co_await ss[1].async_remove(g.node(), -1, use_awaitable);
            const auto deadline = std::chrono::steady_clock::now() + 10s;
            while (!g.lost() && std::chrono::steady_clock::now() < deadline) {
                step.expires_after(5ms);  // a poll with a deadline, as such a holder would
                co_await step.async_wait(use_awaitable);
            }
            BOOST_TEST(g.lost() == zklock::error::lock_node_deleted, (at_once ? "at once" : "after 50 ms"));
            auto [ec] = co_await g.release(tuple_awaitable);
            BOOST_TEST(ec == zklock::error::lock_node_deleted);
        }
    });
}

BOOST_AUTO_TEST_CASE(bad_input_gets_a_clear_error_and_leaves_nothing)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    run(ioc, [&]() -> asio::awaitable<void> {
        {
            mutex m(ss[0], "/test/early");
            auto [ec, g] = co_await m.acquire(1s, tuple_awaitable);
            BOOST_TEST(ec == zklock::error::not_connected);
        }
        co_await ss.connect();
        for (std::string p : {"", "relative/path", "/trailing/", "/"}) {
            mutex m(ss[0], p);
            auto [ec, g] = co_await m.acquire(1s, tuple_awaitable);
            BOOST_TEST(ec == zklock::error::invalid_path, "'" << p << "' gave " << ec.message());
        }
        // A lock under a node we may not write.
        const auto locked = unique_path("readonly");
        zklock::op::create ro{locked, "", create_mode::persistent, zklock::read_only_acl()};
        co_await ss[0].async_create("/test", "", create_mode::persistent, tuple_awaitable);
        co_await ss[0].async_create(ro, use_awaitable);
        mutex m(ss[0], locked + "/lock");
        auto [ec, g] = co_await m.acquire(5s, tuple_awaitable);
        BOOST_TEST(ec == zklock::zk_errc::no_auth);
        BOOST_TEST(ec.message().find("ACL") != std::string::npos);
        BOOST_TEST((co_await children(ss[0], locked)).empty());

        // Acquire on a closed session.
        ss[0].close();
        mutex after(ss[0], unique_path("closed"));
        auto [ec2, g2] = co_await after.acquire(1s, tuple_awaitable);
        BOOST_TEST(ec2 == zklock::error::session_closed);
        // An empty guard's release says so.
        zklock::guard empty;
        auto [ec3] = co_await empty.release(tuple_awaitable);
        BOOST_TEST(ec3 == zklock::error::not_held);
    });
}

BOOST_AUTO_TEST_CASE(callbacks_and_futures_work_too)
{
    asio::io_context ioc;
    session s(ioc, config_for(shared_server().connect_string()));
    std::thread runner;
    bool called = false;
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await s.async_connect(use_awaitable);
        mutex m(s, unique_path("tokens"));
        m.acquire(5s, [&](error_code ec, zklock::guard g) {
            called = !ec && g.owns_lock();
        });
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return called; }));
    });
    // use_future, from a thread that is not the io_context's: acquire and release are carried over to
    // the executor. (The mutex itself is made before the io_context runs: objects are not thread-safe.)
    mutex fm(s, unique_path("future"));
    auto work = asio::make_work_guard(ioc);
    ioc.restart();
    runner = std::thread([&] { ioc.run(); });
    {
        std::future<zklock::guard> f = fm.acquire(5s, asio::use_future);
        auto g = f.get();
        BOOST_TEST(g.owns_lock());
        std::future<void> released = g.release(asio::use_future);
        BOOST_CHECK_NO_THROW(released.get());
    }
    asio::post(ioc, [&] { s.close(); });
    work.reset();
    runner.join();
}

BOOST_AUTO_TEST_SUITE_END()

// Lock cohorting bounded by real contention: while no other process waits, the session's node stays far
// beyond local_handoff_limit; once one queues, it gets the lock within the bound's grants (the watch
// notification is all it waits for). Exclusion across both sessions is checked throughout.
BOOST_AUTO_TEST_CASE(the_handoff_bound_applies_once_another_process_waits)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("cohort");
        constexpr std::size_t limit = 5;
        mutex a(ss[0], path, {.local_handoff_limit = limit, .linger = false, .acl = zklock::open_acl()});
        mutex b(ss[1], path);
        int inside = 0, violations = 0, finished = 0;
        std::size_t grants = 0;
        bool stop = false;
        std::set<std::string> nodes;  // session a's lock nodes
        auto worker = [&]() -> asio::awaitable<void> {
            while (!stop) {
                auto g = co_await a.acquire(30s, use_awaitable);
                if (inside++ != 0) ++violations;
                ++grants;
                nodes.insert(g.node());
                asio::steady_timer work(ioc, 2ms);  // the critical section's work
                co_await work.async_wait(use_awaitable);
                --inside;
                co_await g.release(use_awaitable);
            }
            ++finished;
        };
        for (int i = 0; i < 4; ++i) asio::co_spawn(ioc, worker(), asio::detached);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return grants >= 10 * limit; }));
        BOOST_TEST(nodes.size() == 1u);  // nobody else waited: one node for all those grants

        // Counted from the moment b's node is queued (b hears its place), not from the call: its create
        // and the server's fsync come first.
        std::optional<std::size_t> queued_at;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [ec, place] = co_await b.async_wait_place(0, tuple_awaitable);
            if (!ec && place > 0) queued_at = grants;
        }, asio::detached);
        auto gb = co_await b.acquire(30s, use_awaitable);
        BOOST_TEST_REQUIRE(queued_at.has_value());
        const auto during = grants - *queued_at;
        BOOST_TEST(during <= limit, during << " local grants while another process waited");
        if (inside != 0) ++violations;
        asio::steady_timer work(ioc, 2ms);
        co_await work.async_wait(use_awaitable);
        if (inside != 0) ++violations;
        co_await gb.release(use_awaitable);
        stop = true;
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return finished == 4; }));
        BOOST_TEST(violations == 0);
        BOOST_TEST(nodes.size() >= 2u);  // the node went for b, and a made another
        BOOST_TEST((co_await children(ss[1], path)).empty());
    });
}

// A place wait ends with the session: once it is over, no place changes again, so a waiter of the place
// hears the session's end (and one that starts afterwards hears it at once), instead of waiting forever.
BOOST_AUTO_TEST_CASE(a_place_wait_ends_with_the_session)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("place-end");
        mutex held(ss[0], path), queued(ss[1], path);
        auto g = co_await held.acquire(5s, use_awaitable);
        std::optional<error_code> acquire_ec;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [ec, w] = co_await queued.acquire(30s, tuple_awaitable);
            acquire_ec = ec;
        }, asio::detached);
        const auto place = co_await queued.async_wait_place(0, use_awaitable);
        BOOST_TEST(place == 1u);  // behind the holder
        std::optional<std::pair<error_code, std::size_t>> heard;
        queued.async_wait_place(place, [&](error_code ec, std::size_t p) { heard.emplace(ec, p); });
        ss[1].close();
        BOOST_TEST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return heard.has_value(); }));
        BOOST_TEST(heard->first == zklock::error::session_closed);
        BOOST_TEST(heard->second == place);  // the last place it had
        auto [late, late_place] = co_await queued.async_wait_place(place, tuple_awaitable);
        BOOST_TEST(late == zklock::error::session_closed);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return acquire_ec.has_value(); }));
        BOOST_TEST(*acquire_ec == zklock::error::session_closed);
        co_await g.release(use_awaitable);
        BOOST_TEST((co_await children(ss[0], path)).empty());
    });
}

BOOST_AUTO_TEST_SUITE_END()  // mutex_wait_tests
