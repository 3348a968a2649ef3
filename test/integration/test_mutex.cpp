// The distributed mutex against a real ZooKeeper: mutual exclusion, among sessions and among the coroutines
// of one session, local hand-off, lingering. (Waiting, cancellation, no herd, fencing, loss, bad input:
// test_mutex_waiting.cpp.)
#include "mutex_util.hpp"

#include <memory>
#include <stdexcept>

BOOST_AUTO_TEST_SUITE(mutex_tests)

using namespace test;
using namespace mutex_test;
using zklock::create_mode;
using zklock::mutex;
using zklock::session;

namespace {

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
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return !order.empty(); }));
        mutex remote(ss[1], path);
        // Counted from the moment the other session's node is queued (it hears its place), not from the
        // call: its permission probe and its create come first.
        std::optional<std::ptrdiff_t> asked_at;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [ec, place] = co_await remote.async_wait_place(0, tuple_awaitable);
            if (!ec && place > 0) asked_at = static_cast<std::ptrdiff_t>(order.size());
        }, asio::detached);
        auto g = co_await remote.acquire(60s, use_awaitable);
        order.push_back(1);
        co_await g.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return done == 30; }, 60s));
        // Once it queued, session 0 hears of it by one watch notification and then lets at most 3 more local
        // grants go before its node goes (the bound counts from the node's first grant).
        BOOST_TEST_REQUIRE(asked_at.has_value());
        const auto waited = (std::find(order.begin(), order.end(), 1) - order.begin()) - *asked_at;
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

BOOST_AUTO_TEST_SUITE_END()  // mutex_tests
