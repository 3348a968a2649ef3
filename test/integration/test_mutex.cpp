// The distributed mutex against a real ZooKeeper: mutual exclusion, timeouts, cancellation, no herd,
// local hand-off, fencing, loss, bad input.
#define BOOST_TEST_MODULE zklock mutex
#include "test_util.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <memory>
#include <stdexcept>

using namespace test;
using namespace boost::asio::experimental::awaitable_operators;
using zklock::create_mode;
using zklock::mutex;
using zklock::session;

namespace {

/// Sessions on the shared server, connected.
struct sessions {
    asio::io_context& ioc;
    std::vector<std::unique_ptr<session>> all;
    sessions(asio::io_context& io, std::size_t n) : ioc(io)
    {
        for (std::size_t i = 0; i < n; ++i)
            all.push_back(std::make_unique<session>(ioc, config_for(shared_server().connect_string())));
    }
    asio::awaitable<void> connect()
    {
        for (auto& s : all) co_await s->async_connect(use_awaitable);
    }
    session& operator[](std::size_t i) { return *all[i]; }
    std::size_t size() const { return all.size(); }
};

/// Curator's FakeLimitedResource: throws if two users are inside at once.
struct limited_resource {
    bool in_use = false;
    int uses = 0;
    asio::awaitable<void> use()
    {
        if (in_use) throw std::runtime_error("two users inside the limited resource at once");
        in_use = true;
        ++uses;
        co_await asio::post(co_await asio::this_coro::executor, use_awaitable);  // let others run meanwhile
        in_use = false;
    }
};

/// The seed articles' shop: stock in a znode, bought read-modify-write under the lock, no version check.
asio::awaitable<void> buy_until_sold_out(session& s, std::string lock_path, std::string stock_path, int& sold,
                                         int& below_zero)
{
    mutex m(s, lock_path);
    for (;;) {
        auto g = co_await m.acquire(60s, use_awaitable);
        auto [ec, data, st] = co_await s.async_get_data(stock_path, tuple_awaitable);
        BOOST_REQUIRE(!ec);
        int stock = std::stoi(data);
        if (stock <= 0) {
            if (stock < 0) ++below_zero;
            co_await g.release(use_awaitable);
            co_return;
        }
        co_await asio::post(co_await asio::this_coro::executor, use_awaitable);  // widen the race window
        co_await s.async_set_data(stock_path, std::to_string(stock - 1), -1, use_awaitable);
        ++sold;
        co_await g.release(use_awaitable);
    }
}

asio::awaitable<void> run_shop(sessions& ss, int per_session, int stock, int& sold, int& below_zero)
{
    const auto lock_path = unique_path("shop-lock");
    const auto stock_path = unique_path("shop-stock");
    co_await ss[0].async_create("/test", "", create_mode::persistent, tuple_awaitable);
    co_await ss[0].async_create(stock_path, std::to_string(stock), create_mode::persistent, use_awaitable);
    int finished = 0;
    for (std::size_t i = 0; i < ss.size(); ++i)
        for (int c = 0; c < per_session; ++c)
            asio::co_spawn(ss.ioc, buy_until_sold_out(ss[i], lock_path, stock_path, sold, below_zero),
                           [&](std::exception_ptr e) {
                               ++finished;
                               if (e) std::rethrow_exception(e);
                           });
    const int buyers = static_cast<int>(ss.size()) * per_session;
    bool all = co_await eventually([&]() -> asio::awaitable<bool> { co_return finished == buyers; }, 120s);
    BOOST_TEST(all);
    auto [ec, data, st] = co_await ss[0].async_get_data(stock_path, tuple_awaitable);
    BOOST_TEST(data == "0");
    BOOST_TEST((co_await children(ss[0], lock_path)).empty());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(mutual_exclusion)

BOOST_AUTO_TEST_CASE(fifteen_clients_buy_ten_orders_exactly_once)
{
    asio::io_context ioc;
    sessions ss(ioc, 15);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        int sold = 0, below_zero = 0;
        co_await run_shop(ss, 1, 10, sold, below_zero);
        BOOST_TEST(sold == 10);
        BOOST_TEST(below_zero == 0);
    }, 120s);
}

BOOST_AUTO_TEST_CASE(two_hundred_concurrent_buyers)
{
    asio::io_context ioc;
    sessions ss(ioc, 10);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        int sold = 0, below_zero = 0;
        co_await run_shop(ss, 20, 100, sold, below_zero);
        BOOST_TEST(sold == 100);
        BOOST_TEST(below_zero == 0);
    }, 180s);
}

BOOST_AUTO_TEST_CASE(a_limited_resource_never_sees_two_users)
{
    for (std::size_t limit : {std::size_t{0}, std::size_t{10}}) {
        asio::io_context ioc;
        sessions ss(ioc, 4);
        limited_resource resource;
        run(ioc, [&]() -> asio::awaitable<void> {
            co_await ss.connect();
            const auto path = unique_path("limited");
            int done = 0;
            for (std::size_t i = 0; i < ss.size(); ++i)
                for (int c = 0; c < 5; ++c)
                    asio::co_spawn(
                        ioc,
                        [&, i]() -> asio::awaitable<void> {
                            mutex m(ss[i], path, {.local_handoff_limit = limit, .acl = zklock::open_acl()});
                            for (int k = 0; k < 5; ++k) {
                                auto g = co_await m.acquire(60s, use_awaitable);
                                co_await resource.use();
                                co_await g.release(use_awaitable);
                            }
                        },
                        [&](std::exception_ptr e) {
                            ++done;
                            if (e) std::rethrow_exception(e);
                        });
            BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return done == 20; }, 120s));
            BOOST_TEST(resource.uses == 100);
        }, 180s);
    }
}

BOOST_AUTO_TEST_CASE(a_thousand_coroutines_of_one_session)
{
    for (std::size_t limit : {std::size_t{10}, std::size_t{0}}) {
        asio::io_context ioc;
        session s(ioc, config_for(shared_server().connect_string()));
        run(ioc, [&]() -> asio::awaitable<void> {
            co_await s.async_connect(use_awaitable);
            const auto path = unique_path("thousand");
            bool inside = false;
            int violations = 0, done = 0, max_nodes = 0;
            zklock::fencing_token last{};
            int not_increasing = 0;
            for (int c = 0; c < 1000; ++c)
                asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
                    mutex m(s, path, {.local_handoff_limit = limit, .acl = zklock::open_acl()});
                    auto g = co_await m.acquire(120s, use_awaitable);
                    if (inside) ++violations;
                    if (!(last < g.token())) ++not_increasing;
                    last = g.token();
                    inside = true;
                    co_await asio::post(co_await asio::this_coro::executor, use_awaitable);
                    inside = false;
                    co_await g.release(use_awaitable);
                    ++done;
                }, asio::detached);
            BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
                max_nodes = std::max(max_nodes, static_cast<int>((co_await children(s, path)).size()));
                co_return done == 1000;
            }, 170s));
            BOOST_TEST(violations == 0);
            BOOST_TEST(not_increasing == 0, "fencing tokens must grow with every holder");
            // One session, one path: one contender node at a time, whatever the number of coroutines.
            BOOST_TEST(max_nodes <= 1);
            BOOST_TEST((co_await children(s, path)).empty());
        }, 180s);
    }
}

BOOST_AUTO_TEST_CASE(local_hand_off_is_bounded_so_other_sessions_get_their_turn)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("fair");
        // Session 0 keeps 30 coroutines busy on the lock; session 1 wants it once.
        std::vector<int> order;
        int done = 0;
        auto local = [&]() -> asio::awaitable<void> {
            mutex m(ss[0], path, {.local_handoff_limit = 3, .acl = zklock::open_acl()});
            for (int k = 0; k < 3; ++k) {
                auto g = co_await m.acquire(60s, use_awaitable);
                order.push_back(0);
                co_await pause(1ms);
                co_await g.release(use_awaitable);
            }
            ++done;
        };
        for (int c = 0; c < 30; ++c) asio::co_spawn(ioc, local(), asio::detached);
        co_await eventually([&]() -> asio::awaitable<bool> { co_return !order.empty(); });
        mutex remote(ss[1], path);
        const auto asked_at = static_cast<std::ptrdiff_t>(order.size());
        auto g = co_await remote.acquire(60s, use_awaitable);
        order.push_back(1);
        co_await g.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return done == 30; }, 60s));
        // Once it asked, the other session waited at most for the node then held and, if its create came
        // second, the next one: two turns of at most 1 + 3 local grants each.
        const auto waited = (std::find(order.begin(), order.end(), 1) - order.begin()) - asked_at;
        BOOST_TEST(waited <= 8, "the other session waited behind " << waited << " local grants");
    }, 120s);
}

BOOST_AUTO_TEST_CASE(a_lingering_node_serves_the_next_acquire_and_yields_to_others)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("linger");
        mutex mine(ss[0], path, {.local_handoff_limit = 10, .linger = true, .acl = zklock::open_acl()});
        auto g1 = co_await mine.acquire(5s, use_awaitable);
        const auto node = g1.node();
        const auto t1 = g1.token();
        co_await g1.release(use_awaitable);
        BOOST_TEST((co_await children(ss[0], path)).size() == 1u);  // it lingers
        const auto requests = ss[0].stats().requests;
        auto g2 = co_await mine.acquire(5s, use_awaitable);
        BOOST_TEST(g2.node() == node);
        BOOST_TEST((t1 < g2.token()));
        BOOST_TEST(ss[0].stats().requests == requests);  // no round trip
        co_await g2.release(use_awaitable);

        // Another process queues: the lingering node goes, and it gets the lock.
        mutex theirs(ss[1], path);
        auto [ec, g3] = co_await theirs.acquire(5s, tuple_awaitable);
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST((g2.token() < g3.token()));
        // Ours waits while they hold it.
        auto [ec4, g4] = co_await mine.acquire(200ms, tuple_awaitable);
        BOOST_TEST(ec4 == zklock::error::timeout);
        co_await g3.release(use_awaitable);
        auto g5 = co_await mine.acquire(5s, use_awaitable);
        BOOST_TEST(g5.owns_lock());
    });
}

BOOST_AUTO_TEST_SUITE_END()

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

BOOST_AUTO_TEST_CASE(a_release_wakes_exactly_one_waiter)
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
        auto events_of_others = [&](std::size_t releaser) {
            std::uint64_t n = 0;
            for (std::size_t j = 0; j < ss.size(); ++j)
                if (j != releaser) n += ss[j].stats().watch_events;
            return n;
        };
        for (std::size_t i = 0; i < 50; ++i) {
            const auto before = events_of_others(i);
            co_await holders[i].release(use_awaitable);
            BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return holders[i + 1].owns_lock(); }));
            // The releaser's own-node watch fires too; among the others, exactly one heard of it.
            BOOST_TEST(events_of_others(i) - before == 1u, "release " << i << " woke " << events_of_others(i) - before);
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
