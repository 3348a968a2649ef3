// A semaphore's leases as the participants list tells them, on a real ZooKeeper: the lease nodes of a run
// that waits for room (acquire_many's several, beside its session's leases already held) are listed as
// waiting, and deleting every node listed as holding (what `zklock break` does) leaves the waiter's.
#include "test_util.hpp"

#include <zklock/participants.hpp>
#include <zklock/semaphore.hpp>

BOOST_AUTO_TEST_SUITE(participants_lease_tests)

using namespace test;
using zklock::guard;
using zklock::participant;
using zklock::semaphore;

namespace {

asio::awaitable<std::vector<participant>> participants_of(zklock::session& s, const std::string& path)
{
    auto [ec, list] = co_await zklock::async_participants(s, path, tuple_awaitable);
    BOOST_TEST_REQUIRE(!ec, path << ": " << ec.message());
    co_return list;
}

}  // namespace

BOOST_AUTO_TEST_CASE(an_acquire_many_waiters_leases_are_listed_as_waiting_and_survive_a_break)
{
    asio::io_context ioc;
    sessions ss(ioc, 3);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("participants-many");
        semaphore s0(ss[0], path, 3), s1(ss[1], path, 3);
        // Session 0 holds one lease, session 1 one; then session 1 wants two more, which it waits for.
        auto first = co_await s0.acquire(5s, use_awaitable);
        auto own = co_await s1.acquire(5s, use_awaitable);
        std::vector<guard> many;
        bool granted = false;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [ec, got] = co_await s1.acquire_many(2, 30s, tuple_awaitable);
            BOOST_TEST(!ec, ec.message());
            many = std::move(got);
            granted = true;
        }, asio::detached);
        std::vector<participant> list;
        BOOST_TEST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> {
            list = co_await participants_of(ss[2], path);
            co_return list.size() == 5;  // four leases, and the waiter's node in the internal lock
        }));
        BOOST_TEST((list[0].node == first.node() && list[0].holds));
        BOOST_TEST((list[1].node == own.node() && list[1].holds), "a lease the waiting session already held");
        for (std::size_t i : {2u, 3u}) {
            BOOST_TEST(list[i].role == "permit");
            BOOST_TEST(!list[i].holds, "lease " << i << " of the waiting acquire_many is listed as holding");
            BOOST_TEST(list[i].session_id == ss[1].id());
        }
        BOOST_TEST((list[4].role == "waiter" && !list[4].holds && list[4].session_id == ss[1].id()));
        const std::vector<std::string> waiting{list[2].node, list[3].node};

        // An operator breaks the semaphore: every node listed as holding goes; the waiter's leases stay,
        // and with room made they are the ones it is granted.
        for (const auto& p : list)
            if (p.holds) co_await ss[2].async_remove(p.node, -1, use_awaitable);
        BOOST_TEST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return granted; }));
        BOOST_TEST_REQUIRE(many.size() == 2u);
        BOOST_TEST((std::vector<std::string>{many[0].node(), many[1].node()} == waiting));
        BOOST_TEST((!many[0].lost() && !many[1].lost()));
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return first.lost() == zklock::error::lock_node_deleted && own.lost() == zklock::error::lock_node_deleted;
        }));
        list = co_await participants_of(ss[2], path);
        BOOST_TEST_REQUIRE(list.size() == 2u);
        BOOST_TEST((list[0].holds && list[1].holds));
        for (auto& g : many) co_await g.release(use_awaitable);
    });
}

BOOST_AUTO_TEST_SUITE_END()  // participants_lease_tests
