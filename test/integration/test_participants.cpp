// Who holds and who waits, read from a real ZooKeeper: a held mutex with two waiters (owners, order,
// lease deadline), a read/write lock's readers and writer, a semaphore's leases and queued waiters, a
// Curator-style node without zklock's data, an empty or missing path, and bad input.
#include "test_util.hpp"

#include <zklock/zklock.hpp>

BOOST_AUTO_TEST_SUITE(participants_tests)

using namespace test;
using zklock::guard;
using zklock::lease;
using zklock::mutex;
using zklock::participant;
using namespace boost::asio::experimental::awaitable_operators;

namespace {

std::unique_ptr<zklock::session> session_named(asio::io_context& ioc, const std::string& owner)
{
    auto cfg = config_for(shared_server().connect_string());
    cfg.owner = owner;
    return std::make_unique<zklock::session>(ioc, cfg);
}

asio::awaitable<std::vector<participant>> participants_of(zklock::session& s, const std::string& path)
{
    auto [ec, list] = co_await zklock::async_participants(s, path, tuple_awaitable);
    BOOST_TEST_REQUIRE(!ec, path << ": " << ec.message());
    co_return list;
}

/// Waits until `n` participants are listed at `path`.
asio::awaitable<std::vector<participant>> until_listed(zklock::session& s, const std::string& path, std::size_t n)
{
    std::vector<participant> list;
    BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
        list = co_await participants_of(s, path);
        co_return list.size() == n;
    }));
    co_return list;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_held_mutex_and_two_waiters_in_order_with_owners)
{
    asio::io_context ioc;
    auto a = session_named(ioc, "alpha"), b = session_named(ioc, "beta"), c = session_named(ioc, "gamma");
    run(ioc, [&]() -> asio::awaitable<void> {
        for (auto* s : {a.get(), b.get(), c.get()}) co_await s->async_connect(use_awaitable);
        const auto path = unique_path("participants");
        mutex ma(*a, path), mb(*b, path), mc(*c, path);
        const auto before = std::chrono::system_clock::now();
        auto g = co_await ma.acquire(5s, lease(60s), use_awaitable);
        guard gb, gc;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { gb = co_await mb.acquire(30s, use_awaitable); }, asio::detached);
        co_await until_listed(*a, path, 2);  // beta queued before gamma
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { gc = co_await mc.acquire(30s, use_awaitable); }, asio::detached);
        auto list = co_await until_listed(*a, path, 3);
        BOOST_TEST(list[0].node == g.node());
        BOOST_TEST(list[0].holds);
        BOOST_TEST(list[0].role == "mutex");
        BOOST_TEST(list[0].session_id == a->id());
        BOOST_TEST((list[1].owner == "beta" && list[2].owner == "gamma"));
        BOOST_TEST((!list[1].holds && !list[2].holds));
        BOOST_TEST(!list[1].lease_until.has_value());
        // The lease line comes with a write after the grant.
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await participants_of(*a, path))[0].lease_until.has_value();
        }));
        list = co_await participants_of(*a, path);
        BOOST_TEST(list[0].owner == "alpha");
        BOOST_TEST((*list[0].lease_until >= before + 59s && *list[0].lease_until <= std::chrono::system_clock::now() + 61s));
        BOOST_TEST((list[0].created >= before - 5s && list[0].created <= std::chrono::system_clock::now() + 5s));

        co_await g.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return gb.owns_lock(); }));
        list = co_await until_listed(*a, path, 2);
        BOOST_TEST((list[0].owner == "beta" && list[0].holds && !list[1].holds));
        co_await gb.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return gc.owns_lock(); }));
        co_await gc.release(use_awaitable);
        BOOST_TEST((co_await participants_of(*a, path)).empty());
        BOOST_TEST((co_await participants_of(*a, path + "/never-made")).empty());
        auto [bad, none] = co_await zklock::async_participants(*a, "no-slash", tuple_awaitable);
        BOOST_TEST(bad == zklock::error::invalid_path);
        for (auto* s : {a.get(), b.get(), c.get()}) co_await s->async_close(use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(readers_writers_semaphores_and_foreign_nodes)
{
    asio::io_context ioc;
    sessions ss(ioc, 3);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto rw_path = unique_path("participants-rw");
        zklock::shared_mutex r0(ss[0], rw_path), r1(ss[1], rw_path), w2(ss[2], rw_path);
        auto g0 = co_await r0.acquire_shared(5s, use_awaitable);
        auto g1 = co_await r1.acquire_shared(5s, use_awaitable);
        guard gw;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { gw = co_await w2.acquire(30s, use_awaitable); }, asio::detached);
        auto list = co_await until_listed(ss[0], rw_path, 3);
        BOOST_TEST((list[0].role == "read" && list[0].holds && list[1].role == "read" && list[1].holds));
        BOOST_TEST((list[2].role == "write" && !list[2].holds));
        co_await g0.release(use_awaitable);
        co_await g1.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return gw.owns_lock(); }));
        list = co_await participants_of(ss[0], rw_path);
        BOOST_TEST_REQUIRE(list.size() == 1u);
        BOOST_TEST((list[0].role == "write" && list[0].holds));
        co_await gw.release(use_awaitable);

        const auto sem_path = unique_path("participants-sem");
        zklock::semaphore s0(ss[0], sem_path, 1), s1(ss[1], sem_path, 1);
        auto l0 = co_await s0.acquire(5s, use_awaitable);
        guard l1;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { l1 = co_await s1.acquire(30s, use_awaitable); }, asio::detached);
        // The waiter made its lease node and watches for room, holding the internal lock meanwhile.
        list = co_await until_listed(ss[0], sem_path, 3);
        BOOST_TEST((list[0].role == "permit" && list[0].holds && list[0].node == l0.node()));
        BOOST_TEST((list[1].role == "permit" && !list[1].holds && list[1].session_id == ss[1].id()));
        BOOST_TEST((list[2].role == "waiter" && !list[2].holds && list[2].session_id == ss[1].id()));
        co_await l0.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return l1.owns_lock(); }));
        list = co_await until_listed(ss[0], sem_path, 1);
        BOOST_TEST((list[0].node == l1.node() && list[0].holds));
        co_await l1.release(use_awaitable);

        // A node another client made (Curator's name, its data the client's address).
        const auto foreign = unique_path("participants-curator");
        co_await ss[0].async_create(foreign, "", zklock::create_mode::persistent, use_awaitable);
        zklock::op::create curator_node;  // named: GCC 12 mishandles a braced temporary across co_await
        curator_node.path = foreign + "/_c_0f0e-lock-";
        curator_node.data = "10.1.2.3";
        curator_node.mode = zklock::create_mode::ephemeral_sequential;
        auto [cec, made, made_stat] = co_await ss[0].async_create(std::move(curator_node), tuple_awaitable);
        BOOST_TEST_REQUIRE(!cec);
        list = co_await participants_of(ss[0], foreign);
        BOOST_TEST_REQUIRE(list.size() == 1u);
        BOOST_TEST((list[0].owner == "10.1.2.3" && list[0].holds && !list[0].lease_until));
    });
}

BOOST_AUTO_TEST_CASE(a_waiter_hears_its_place_change)
{
    asio::io_context ioc;
    sessions ss(ioc, 4);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("place");
        mutex m0(ss[0], path), m1(ss[1], path), m2(ss[2], path), m3(ss[3], path);
        auto g0 = co_await m0.acquire(5s, use_awaitable);
        guard g1, g2, g3;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { g1 = co_await m1.acquire(30s, use_awaitable); }, asio::detached);
        co_await until_listed(ss[0], path, 2);
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { g2 = co_await m2.acquire(30s, use_awaitable); }, asio::detached);
        co_await until_listed(ss[0], path, 3);
        std::vector<std::size_t> places;  // what the last waiter hears
        bool acquired = false;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto report = [&]() -> asio::awaitable<void> {
                for (std::size_t place = 0;;) {
                    place = co_await m3.async_wait_place(place, use_awaitable);
                    places.push_back(place);
                }
            };
            auto r = co_await (m3.acquire(30s, use_awaitable) || report());
            BOOST_TEST(r.index() == 0u);
            g3 = std::move(std::get<0>(r));
            acquired = true;
        }, asio::detached);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return places == std::vector<std::size_t>{3}; }));
        // The holder at the head goes: not the node the last waiter watches, and still it hears it.
        co_await g0.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return places.size() == 2; }));
        BOOST_TEST(places.back() == 2u);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return g1.owns_lock(); }));
        co_await g1.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return g2.owns_lock(); }));
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return places.back() == 1u; }));
        BOOST_TEST(!acquired);
        co_await g2.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return acquired; }));
        BOOST_TEST(g3.owns_lock());
        co_await g3.release(use_awaitable);
    });
}

BOOST_AUTO_TEST_SUITE_END()  // participants_tests
