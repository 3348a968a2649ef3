// zklock, Apache Curator and kazoo queue for the same lock on the same path.
#include "test_util.hpp"
#include "interop_util.hpp"

#include <zklock/revoke.hpp>
#include "process_util.hpp"

BOOST_AUTO_TEST_SUITE(interop_tests)

using namespace test;
using zklock::mutex;
using zklock::session;

namespace {


/// A peer client (Curator or kazoo) running one of the scripts in test/interop.
std::vector<std::string> peer(const std::string& which, const std::string& path, const std::string& mode,
                              const std::string& dir)
{
    const std::string hosts = shared_server().connect_string();
    if (which == "curator") {
        auto argv = interop::curator_java(std::string(ZKLOCK_TEST_DIR) + "/interop/CuratorLock.java");
        argv.insert(argv.end(), {hosts, path, mode, dir});
        return argv;
    }
    // Debian's python3, which has python3-kazoo (a python3 earlier in PATH may not).
    return {"/usr/bin/python3", std::string(ZKLOCK_TEST_DIR) + "/interop/kazoo_lock.py", hosts, path, mode, dir};
}

asio::awaitable<bool> file_appears(const std::string& f, std::chrono::seconds limit = 60s)
{
    co_return co_await eventually([&]() -> asio::awaitable<bool> { co_return tools_test::file_exists(f); }, limit);
}

/// The peer holds the lock: zklock must wait, then get it once the peer lets go.
void peer_holds_then_zklock_gets_it(const std::string& which)
{
    asio::io_context ioc;
    session s(ioc, config_for(shared_server().connect_string()));
    tools_test::temp_dir dir;
    const auto path = unique_path(which + "-holds");
    tools_test::process holder(peer(which, path, "hold", dir.path().string()));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await s.async_connect(use_awaitable);
        BOOST_REQUIRE_MESSAGE(co_await file_appears(dir.path().string() + "/held"), which << " never got the lock");
        mutex m(s, path);
        auto [ec, g] = co_await m.acquire(300ms, tuple_awaitable);
        BOOST_TEST(ec == zklock::error::timeout, which << " holds the lock, yet zklock got it");
        std::ofstream(dir.path().string() + "/release") << "go";
        auto g2 = co_await m.acquire(60s, use_awaitable);
        BOOST_TEST(g2.owns_lock());
        co_await g2.release(use_awaitable);
    }, 120s);
    BOOST_TEST((holder.wait_for(60s) == std::optional<int>(0)));
}

/// zklock holds the lock: the peer's try must fail, then succeed once zklock lets go.
void zklock_holds_then_peer_gets_it(const std::string& which)
{
    asio::io_context ioc;
    session s(ioc, config_for(shared_server().connect_string()));
    tools_test::temp_dir busy_dir, free_dir;
    const auto path = unique_path(which + "-waits");
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await s.async_connect(use_awaitable);
        mutex m(s, path);
        auto g = co_await m.acquire(5s, use_awaitable);
        tools_test::process busy(peer(which, path, "try", busy_dir.path().string()));
        BOOST_REQUIRE(co_await file_appears(busy_dir.path().string() + "/result"));
        BOOST_TEST(tools_test::read_file(busy_dir.path().string() + "/result") == "busy", which << " got a lock zklock holds");
        BOOST_TEST((busy.wait_for(60s) == std::optional<int>(0)), which << "'s try did not exit cleanly");
        co_await g.release(use_awaitable);
        tools_test::process free(peer(which, path, "try", free_dir.path().string()));
        BOOST_REQUIRE(co_await file_appears(free_dir.path().string() + "/result"));
        BOOST_TEST(tools_test::read_file(free_dir.path().string() + "/result") == "acquired");
        BOOST_TEST((free.wait_for(60s) == std::optional<int>(0)), which << "'s try did not exit cleanly");
    }, 120s);
}

}  // namespace

// Revocation across clients: Curator's Revoker reaches a zklock holder, and zklock's request reaches a
// Curator holder whose lock was made revocable (it then lets go and zklock gets the lock).
BOOST_AUTO_TEST_CASE(curator_revokes_a_zklock_holder_and_zklock_revokes_a_curator_holder)
{
    asio::io_context ioc;
    session s(ioc, config_for(shared_server().connect_string()));
    tools_test::temp_dir to_zklock, to_curator;
    const auto path = unique_path("revoke-interop");
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await s.async_connect(use_awaitable);
        mutex m(s, path);
        auto g = co_await m.acquire(5s, use_awaitable);
        std::ofstream(to_zklock.path().string() + "/node") << g.node();
        tools_test::process revoker(peer("curator", path, "revoke", to_zklock.path().string()));
        auto [ec] = co_await g.async_wait_revoked(tuple_awaitable);
        BOOST_TEST(!ec);  // Curator's request reached zklock's holder
        BOOST_TEST((revoker.wait_for(60s) == std::optional<int>(0)));
        co_await g.release(use_awaitable);

        tools_test::process holder(peer("curator", path, "hold-revocable", to_curator.path().string()));
        BOOST_REQUIRE(co_await file_appears(to_curator.path().string() + "/held"));
        const auto node = tools_test::read_file(to_curator.path().string() + "/held");  // a full path
        auto [busy, none] = co_await m.acquire(200ms, tuple_awaitable);
        BOOST_TEST(busy == zklock::error::timeout);
        co_await zklock::async_request_revoke(s, node, use_awaitable);
        auto g2 = co_await m.acquire(60s, use_awaitable);  // Curator let go
        BOOST_TEST(tools_test::file_exists(to_curator.path().string() + "/revoked"));
        co_await g2.release(use_awaitable);
        BOOST_TEST((holder.wait_for(60s) == std::optional<int>(0)));
    }, 120s);
}

BOOST_AUTO_TEST_CASE(curator_holds_zklock_waits) { peer_holds_then_zklock_gets_it("curator"); }
BOOST_AUTO_TEST_CASE(zklock_holds_curator_waits) { zklock_holds_then_peer_gets_it("curator"); }
BOOST_AUTO_TEST_CASE(kazoo_holds_zklock_waits) { peer_holds_then_zklock_gets_it("kazoo"); }
BOOST_AUTO_TEST_CASE(zklock_holds_kazoo_waits) { zklock_holds_then_peer_gets_it("kazoo"); }

BOOST_AUTO_TEST_SUITE_END()  // interop_tests
