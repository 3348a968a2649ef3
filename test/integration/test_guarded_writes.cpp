// Guarded writes against a real ZooKeeper: a holder writes only while its lock node exists. A holder
// whose node was deleted, or whose session expired, gets an error and its write does not land.
#include "test_util.hpp"

#include <zklock/multi_lock.hpp>
#include <zklock/testing/server.hpp>

#include <memory>

BOOST_AUTO_TEST_SUITE(guarded_write_tests)

using namespace test;
using zklock::create_mode;
using zklock::guard;
using zklock::mutex;
using zklock::session;

namespace {

asio::awaitable<std::string> data_of(session& s, const std::string& path)
{
    auto [ec, data, st] = co_await s.async_get_data(path, tuple_awaitable);
    co_return ec ? "<" + ec.message() + ">" : data;
}

asio::awaitable<std::string> make_data_node(session& s, const std::string& what)
{
    co_await s.async_create("/test", "", create_mode::persistent, tuple_awaitable);
    const auto path = unique_path(what);
    co_await s.async_create(path, "before", create_mode::persistent, use_awaitable);
    co_return path;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_holder_writes_while_it_holds)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto data = co_await make_data_node(ss[0], "guarded-data");
        mutex m(ss[0], unique_path("guarded"));
        auto g = co_await m.acquire(5s, use_awaitable);
        auto [ec] = co_await g.async_guarded_set_data(data, "after", -1, tuple_awaitable);
        BOOST_TEST(!ec);
        BOOST_TEST(co_await data_of(ss[0], data) == "after");
        std::vector<zklock::multi_op> ops;
        ops.emplace_back(zklock::op::set_data{data, "again", -1});
        ops.emplace_back(zklock::op::create{data + "/child", "x", create_mode::persistent, zklock::open_acl()});
        auto [ec2, results] = co_await g.async_guarded_multi(std::move(ops), tuple_awaitable);
        BOOST_TEST(!ec2);
        BOOST_TEST(results.size() == 2u);  // the check's result is left out
        BOOST_TEST(results[1].path == data + "/child");
        co_await g.release(use_awaitable);
        auto [ec3] = co_await g.async_guarded_set_data(data, "released", -1, tuple_awaitable);
        BOOST_TEST(ec3 == zklock::error::not_held);
        BOOST_TEST(co_await data_of(ss[0], data) == "again");
    });
}

BOOST_AUTO_TEST_CASE(a_holder_whose_node_was_deleted_cannot_write)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto data = co_await make_data_node(ss[0], "broken-data");
        mutex m(ss[0], unique_path("broken"));
        auto g = co_await m.acquire(5s, use_awaitable);
        // An operator breaks the lock; the holder writes before it has heard (the server refuses) ...
        co_await ss[1].async_remove(g.node(), -1, use_awaitable);
        auto [ec] = co_await g.async_guarded_set_data(data, "stale write", -1, tuple_awaitable);
        BOOST_TEST(ec == zklock::error::lock_node_deleted);
        BOOST_TEST(co_await data_of(ss[1], data) == "before");
        // ... and after it has heard (nothing is sent).
        auto [wec, why] = co_await g.async_wait_lost(tuple_awaitable);
        BOOST_TEST(why == zklock::error::lock_node_deleted);
        auto [ec2] = co_await g.async_guarded_set_data(data, "stale write", -1, tuple_awaitable);
        BOOST_TEST(ec2 == zklock::error::lock_node_deleted);
        BOOST_TEST(co_await data_of(ss[1], data) == "before");
        co_await g.release(tuple_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(a_holder_whose_session_expired_cannot_write)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto data = co_await make_data_node(ss[1], "expired-data");
        mutex m(ss[0], unique_path("expired"));
        auto g = co_await m.acquire(5s, use_awaitable);
        zklock::testing::kill_session(ss[0]);  // expires it on the server, as a long partition would
        auto [ec] = co_await g.async_guarded_set_data(data, "stale write", -1, tuple_awaitable);
        BOOST_TEST(ec);  // session_expired (or the node's deletion, whichever is known first)
        BOOST_TEST(co_await data_of(ss[1], data) == "before");
    });
}

BOOST_AUTO_TEST_CASE(leases_and_multi_guards_guard_their_writes_too)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto data = co_await make_data_node(ss[0], "multi-data");
        zklock::semaphore sem(ss[0], unique_path("guarded-sem"), 2);
        auto lease = co_await sem.acquire(5s, use_awaitable);
        auto [ec] = co_await lease.async_guarded_set_data(data, "by lease", -1, tuple_awaitable);
        BOOST_TEST(!ec);
        co_await lease.release(use_awaitable);

        const auto a = unique_path("guarded-a"), b = unique_path("guarded-b");
        zklock::multi_lock both(mutex(ss[0], a), mutex(ss[0], b));
        auto g = co_await both.acquire(5s, use_awaitable);
        co_await ss[1].async_remove(g.guards()[1].node(), -1, use_awaitable);  // one of the two is broken
        std::vector<zklock::multi_op> ops;
        ops.emplace_back(zklock::op::set_data{data, "by both", -1});
        auto [ec2, r] = co_await g.async_guarded_multi(std::move(ops), tuple_awaitable);
        BOOST_TEST(ec2 == zklock::error::lock_node_deleted);
        BOOST_TEST(co_await data_of(ss[1], data) == "by lease");
        co_await g.release(tuple_awaitable);
        guard empty;
        auto [ec3] = co_await empty.async_guarded_set_data(data, "nobody", -1, tuple_awaitable);
        BOOST_TEST(ec3 == zklock::error::not_held);
    });
}

// Under a chroot (host:port/app) every path a guarded write or a multi gives back is the caller's, relative
// to the chroot: the C client strips the prefix from a create's answer, and zklock must not leave it in a
// multi's results (one C-client replacement names exactly that as a reason it was written).
BOOST_AUTO_TEST_CASE(paths_under_a_chroot_come_back_without_it)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    const auto root = unique_path("guarded-chroot");
    session rooted(ioc, config_for(shared_server().connect_string() + root));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        co_await ss[0].async_create("/test", "", create_mode::persistent, tuple_awaitable);
        co_await ss[0].async_create(root, "", create_mode::persistent, use_awaitable);  // ZooKeeper does not make it
        co_await rooted.async_connect(use_awaitable);
        co_await rooted.async_create("/data", "before", create_mode::persistent, use_awaitable);
        mutex m(rooted, "/lock");
        auto g = co_await m.acquire(5s, use_awaitable);
        BOOST_TEST(g.node().rfind("/lock/", 0) == 0u, g.node());
        std::vector<zklock::multi_op> ops;
        ops.emplace_back(zklock::op::create{"/data/child", "x", create_mode::persistent, zklock::open_acl()});
        ops.emplace_back(zklock::op::set_data{"/data", "after", -1});
        ops.emplace_back(zklock::op::create{"/data/seq-", "", create_mode::persistent_sequential, zklock::open_acl()});
        auto [ec, results] = co_await g.async_guarded_multi(std::move(ops), tuple_awaitable);
        BOOST_TEST(!ec, ec.message());
        BOOST_REQUIRE(results.size() == 3u);
        BOOST_TEST(results[0].path == "/data/child");
        BOOST_TEST(results[2].path.rfind("/data/seq-", 0) == 0u, results[2].path);
        // The same through the session's own multi, and the writes landed under the chroot.
        std::vector<zklock::multi_op> plain;
        plain.emplace_back(zklock::op::create{"/data/other", "", create_mode::persistent, zklock::open_acl()});
        auto [ec2, r2] = co_await rooted.async_multi(std::move(plain), tuple_awaitable);
        BOOST_TEST(!ec2, ec2.message());
        BOOST_REQUIRE(r2.size() == 1u);
        BOOST_TEST(r2[0].path == "/data/other");
        BOOST_TEST(co_await data_of(ss[0], root + "/data") == "after");
        BOOST_TEST(co_await data_of(ss[0], root + "/data/child") == "x");
        co_await g.release(use_awaitable);
        co_await rooted.async_close(use_awaitable);
    });
}

BOOST_AUTO_TEST_SUITE_END()  // guarded_write_tests
