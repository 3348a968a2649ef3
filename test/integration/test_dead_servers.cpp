// Dead and silent servers: every call keeps its own bound, nothing is left behind, nothing wedges.
#include "log_capture.hpp"
#include "test_util.hpp"

#include <algorithm>
#include <mutex>

#include "recipes/registry.hpp"
#include "session/session_impl.hpp"

BOOST_AUTO_TEST_SUITE(dead_server_tests)

using namespace test;
using namespace boost::asio::experimental::awaitable_operators;
using zklock::mutex;
using zklock::session;
using zklock::session_state;
using clock_type = std::chrono::steady_clock;

namespace {
std::chrono::milliseconds since(clock_type::time_point t0)
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0);
}
}  // namespace

BOOST_AUTO_TEST_CASE(a_one_look_on_a_silent_server_answers_within_its_own_bound)
{
    zklock::testing::server srv;
    asio::io_context ioc;
    session s(ioc, config_for(srv.connect_string()));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await s.async_connect(use_awaitable);
        mutex m(s, unique_path("silent-try"));
        srv.freeze();
        const auto t0 = clock_type::now();
        auto [ec, g] = co_await m.try_acquire(tuple_awaitable);
        const auto took = since(t0);
        BOOST_TEST(ec == zklock::error::timeout);
        BOOST_TEST_MESSAGE("try_acquire on a silent server: " << took.count() << " ms");
        BOOST_TEST(took.count() < 1500);  // min(1 s, T/4); it took 2/3 T before
        srv.thaw();
    });
}

BOOST_AUTO_TEST_CASE(a_release_honours_cancellation_and_the_node_goes_later)
{
    zklock::testing::server srv;
    asio::io_context ioc;
    session s(ioc, config_for(srv.connect_string())), other(ioc, config_for(srv.connect_string()));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await s.async_connect(use_awaitable);
        co_await other.async_connect(use_awaitable);
        const auto path = unique_path("cancel-release");
        mutex m(s, path);
        auto g = co_await m.acquire(5s, use_awaitable);
        srv.freeze();
        asio::steady_timer t(ioc, 500ms);
        const auto t0 = clock_type::now();
        auto r = co_await (g.release(tuple_awaitable) || t.async_wait(tuple_awaitable));
        BOOST_TEST(r.index() == 1u);  // the timer won; the release completed with operation_aborted
        BOOST_TEST(since(t0).count() < 1500);
        BOOST_TEST(!g.owns_lock());
        srv.thaw();
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return (co_await children(other, path)).empty(); }, 20s),
                   "the node was not given up in the background");
    });
}

BOOST_AUTO_TEST_CASE(a_data_child_that_looks_sequential_does_not_block_the_lock)
{
    asio::io_context ioc;
    session s(ioc, config_for(shared_server().connect_string()));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await s.async_connect(use_awaitable);
        const auto path = unique_path("data-child");
        mutex m(s, path);
        auto g = co_await m.acquire(5s, use_awaitable);  // makes the directory
        co_await g.release(use_awaitable);
        co_await s.async_create(path + "/report-0000000000", "data", zklock::create_mode::persistent, use_awaitable);
        auto [ec, g2] = co_await m.acquire(2s, tuple_awaitable);
        BOOST_TEST(!ec, ec.message());
        co_await g2.release(tuple_awaitable);
        co_await s.async_remove(path + "/report-0000000000", -1, use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(closing_and_destroying_a_session_while_a_mutex_lives_lets_run_return)
{
    asio::io_context ioc;
    auto s = std::make_unique<session>(ioc, config_for(shared_server().connect_string()));
    std::optional<mutex> m;
    bool closed = false;
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
        co_await s->async_connect(use_awaitable);
        m.emplace(*s, unique_path("close-destroy"));
        auto g = co_await m->acquire(5s, use_awaitable);
        s->async_close([&](error_code) { closed = true; });
        s.reset();  // the mutex (and the guard) still hold the session's state
    }, asio::detached);
    const auto t0 = clock_type::now();
    ioc.run_for(20s);  // returns as soon as nothing is left to do; it never returned before
    BOOST_TEST(since(t0).count() < 15000, "io_context::run did not return");
    BOOST_TEST(closed);
    m.reset();
}

BOOST_AUTO_TEST_CASE(the_session_forgets_paths_nobody_locks_any_more)
{
    asio::io_context ioc;
    session s(ioc, config_for(shared_server().connect_string()));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await s.async_connect(use_awaitable);
        const auto before = zklock::detail::registry_of(*s.impl()).states.size();
        for (int i = 0; i < 200; ++i) {
            mutex m(s, unique_path("forgotten"));
            auto g = co_await m.acquire(5s, use_awaitable);
            co_await g.release(use_awaitable);
        }
        BOOST_TEST(zklock::detail::registry_of(*s.impl()).states.size() == before);
    });
}

// A member that accepts TCP but never answers (frozen) must not cost a connect its deadline, and an
// acquire's deadline holds whatever the ensemble does.
BOOST_AUTO_TEST_CASE(a_frozen_member_costs_neither_connects_nor_deadlines)
{
    zklock::testing::server_options opts;
    opts.tick_ms = 200;
    zklock::testing::cluster cl(3, opts);
    const auto leader = cl.leader();
    const auto frozen = (leader + 1) % 3;
    cl.freeze(frozen);
    asio::io_context ioc;
    run(ioc, [&]() -> asio::awaitable<void> {
        std::chrono::milliseconds slowest{0};
        for (int i = 0; i < 6; ++i) {
            auto cfg = config_for(cl.connect_string());
            cfg.session_timeout = 10s;  // the C client alone would wait 2/3 of this on the frozen member
            cfg.connect_timeout = 5s;
            session s(ioc, cfg);
            const auto t0 = clock_type::now();
            auto [ec] = co_await s.async_connect(tuple_awaitable);
            BOOST_TEST(!ec, "connect " << i << ": " << ec.message());
            slowest = std::max(slowest, since(t0));
            co_await s.async_close(tuple_awaitable);
        }
        BOOST_TEST_MESSAGE("slowest connect with a frozen member: " << slowest.count() << " ms");
        BOOST_TEST(slowest.count() < 4000);
        cl.thaw(frozen);

        // The leader pauses while another session holds the lock: the waiter's deadline still holds.
        const auto path = unique_path("leader-pause");
        auto other_cfg = config_for(cl.connect_string());
        session holder(ioc, other_cfg), waiter(ioc, other_cfg);
        co_await holder.async_connect(use_awaitable);
        co_await waiter.async_connect(use_awaitable);
        mutex hm(holder, path), wm(waiter, path);
        auto g = co_await hm.acquire(10s, use_awaitable);
        const auto leader_now = cl.leader();
        cl.freeze(leader_now);
        const auto t0 = clock_type::now();
        auto [ec, g2] = co_await wm.acquire(2s, tuple_awaitable);
        const auto took = since(t0);
        cl.thaw(leader_now);
        BOOST_TEST(ec == zklock::error::timeout, ec.message());
        BOOST_TEST_MESSAGE("a 2 s acquire during a leader pause took " << took.count() << " ms");
        BOOST_TEST(took.count() < 2400);
    }, 120s);
}

// Kubernetes brings a ZooKeeper pod back under its name with a new address. A session that resolved the
// name once could then reach no server until it expired (ZOOKEEPER-2184). Here the name "zk.example.test"
// first gives member 0, then member 1 once member 0 is gone: the session follows the name, and keeps its
// id and its lock. (The resolver hook stands in for DNS: nothing outside loopback is ever asked.)
BOOST_AUTO_TEST_CASE(a_session_follows_a_name_to_its_new_address)
{
    zklock::testing::server_options opts;
    opts.tick_ms = 200;
    zklock::testing::cluster cl(3, opts);
    auto member = [&](std::size_t i) { return "127.0.0.1:" + std::to_string(cl.client_port(i)); };
    // The name's record, owned by the resolver too: a lookup may still run after the session is gone.
    struct record {
        std::mutex mu;
        std::string address;
    };
    auto dns = std::make_shared<record>();
    dns->address = member(0);
    auto log = std::make_shared<log_capture>();
    auto cfg = config_for("zk.example.test:2181");
    cfg.session_timeout = 8s;
    cfg.resolver = [dns](const std::string& host, const std::string& port) -> std::vector<std::string> {
        std::lock_guard<std::mutex> l(dns->mu);
        if (host != "zk.example.test" || port != "2181") return {};
        return {dns->address};
    };
    cfg.log = log_capture::sink(log);
    asio::io_context ioc;
    session s(ioc, cfg);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await s.async_connect(use_awaitable);
        const auto id = s.id();
        mutex m(s, unique_path("follow-name"));
        auto g = co_await m.acquire(5s, use_awaitable);
        {
            std::lock_guard<std::mutex> l(dns->mu);
            dns->address = member(1);
        }
        const auto t0 = clock_type::now();
        cl.stop(0);
        auto [ec1, st1] = co_await s.async_wait_state(session_state::connected, tuple_awaitable);
        BOOST_TEST(st1 == session_state::connecting);
        auto [ec2, st2] = co_await s.async_wait_state(session_state::connecting, tuple_awaitable);
        const auto took = since(t0);
        BOOST_TEST(st2 == session_state::connected);
        BOOST_TEST_MESSAGE("reconnected through the name's new address " << took.count() << " ms after the stop");
        BOOST_TEST(s.id() == id);  // the same session: nothing of it was lost
        BOOST_TEST(!g.lost(), g.lost().message());
        auto [eec, there] = co_await s.async_exists(g.node(), tuple_awaitable);
        BOOST_TEST(!eec, eec.message());
        BOOST_TEST(there.has_value());  // the server agrees: the lock node is still there
        co_await g.release(use_awaitable);
        co_await s.async_close(use_awaitable);
    });
    BOOST_TEST(log->said("ZooKeeper is now at " + member(1)), "the change of address was not logged");
}

// A session given one member of three (and a chroot) reads the membership in /zookeeper/config, and
// reaches the others when that member dies: same session, same lock, same chroot. Given the member alone
// it could only wait for it, as a client that does not follow the ensemble does.
BOOST_AUTO_TEST_CASE(a_session_follows_the_ensemble_membership)
{
    zklock::testing::server_options opts;
    opts.tick_ms = 200;
    opts.publish_client_addresses = true;
    zklock::testing::cluster cl(3, opts);
    auto log = std::make_shared<log_capture>();
    const auto member0 = "127.0.0.1:" + std::to_string(cl.client_port(0));
    auto cfg = config_for(member0 + "/followed");
    cfg.follow_ensemble = true;
    cfg.session_timeout = 8s;
    cfg.log = log_capture::sink(log);
    auto logged = [&](const std::string& what) { return log->said(what); };
    asio::io_context ioc;
    session plain(ioc, config_for(cl.connect_string()));
    session s(ioc, cfg);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await plain.async_connect(use_awaitable);
        co_await plain.async_create("/followed", "", zklock::create_mode::persistent, use_awaitable);
        co_await s.async_connect(use_awaitable);
        const auto id = s.id();
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return logged("the ensemble's membership changed");
        }));
        for (std::size_t i = 1; i < 3; ++i) BOOST_TEST(logged("127.0.0.1:" + std::to_string(cl.client_port(i))));
        mutex m(s, unique_path("follow-ensemble"));
        auto g = co_await m.acquire(5s, use_awaitable);
        cl.stop(0);
        // Whether the session had moved already (the C client spreads the load) or must now: it reaches a
        // member it was never given, and the server still has its lock node, under the chroot.
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            auto [ec, there] = co_await s.async_exists(g.node(), tuple_awaitable);
            co_return !ec && there.has_value();
        }, 15s));
        BOOST_TEST(s.state() == session_state::connected);
        BOOST_TEST(s.id() == id);
        BOOST_TEST(!g.lost(), g.lost().message());
        // plain may be on another member than s: a read of s's write after a sync.
        co_await plain.async_sync("/followed", use_awaitable);
        auto [pec, seen] = co_await plain.async_exists("/followed" + g.node(), tuple_awaitable);
        BOOST_TEST(!pec, pec.message());
        BOOST_TEST(seen.has_value());
        co_await g.release(use_awaitable);
        co_await s.async_close(use_awaitable);
        co_await plain.async_close(use_awaitable);
    }, 120s);
}

BOOST_AUTO_TEST_SUITE_END()  // dead_server_tests
