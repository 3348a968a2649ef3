// An ensemble whose membership changes at run time (ZooKeeper's reconfig): a session that follows
// /zookeeper/config moves with it, keeps its id and its locks, and the requests it has out when the C
// client leaves a removed member fail only with connection loss, never out of order.
#include "log_capture.hpp"
#include "test_util.hpp"

#include <zklock/testing/cluster.hpp>

#include <algorithm>
#include <future>
#include <stdexcept>

BOOST_AUTO_TEST_SUITE(membership_tests)

using namespace test;
using zklock::mutex;
using zklock::session;
using zklock::session_state;

namespace {

/// Runs `fn` on a thread of its own and waits for it without blocking the loop (a member's JVM takes
/// seconds to start; the sessions under test must go on meanwhile).
asio::awaitable<void> off_loop(std::function<void()> fn)
{
    auto done = std::async(std::launch::async, std::move(fn));
    while (done.wait_for(std::chrono::seconds(0)) != std::future_status::ready) co_await pause(20ms);
    done.get();  // rethrows
}

}  // namespace

// A fourth server is added, then two of the first three are removed and stopped, while a session that was
// given only those two holds a lock and keeps eight requests out at all times.
BOOST_AUTO_TEST_CASE(a_session_moves_with_a_reconfigured_ensemble)
{
    zklock::testing::server_options opts;
    opts.tick_ms = 500;  // session timeouts up to 10 s: a move under a loaded machine stays within the loss grace
    opts.reconfig_enabled = true;
    zklock::testing::cluster cl(3, opts);
    auto address = [&](std::size_t i) { return "127.0.0.1:" + std::to_string(cl.client_port(i)); };
    auto log = std::make_shared<log_capture>();
    auto cfg = config_for(address(0) + "," + address(1));
    cfg.session_timeout = 10s;
    cfg.log = log_capture::sink(log);
    asio::io_context ioc;
    session s(ioc, cfg);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await s.async_connect(use_awaitable);
        const auto id = s.id();
        mutex m(s, unique_path("reconfig"));
        auto g = co_await m.acquire(5s, use_awaitable);

        // Traffic: eight reads out at all times. Connection loss is what a moved session may see; any
        // other error (runtime_inconsistency: answers matched to the wrong requests) is a defect.
        bool stop = false;
        int running = 0, reads = 0;
        std::vector<zklock::error_code> wrong;
        for (int i = 0; i < 8; ++i) {
            ++running;
            asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
                while (!stop) {
                    auto [ec, there] = co_await s.async_exists(g.node(), tuple_awaitable);
                    if (!ec) {
                        ++reads;
                        if (!there) wrong.push_back(zklock::error::lock_node_deleted);
                    } else if (ec != zklock::zk_errc::connection_loss && ec != zklock::zk_errc::operation_timeout) {
                        wrong.push_back(ec);
                    }
                    if (ec) co_await pause(10ms);  // disconnected: no need to spin
                }
                --running;
            }, asio::detached);
        }

        const auto fourth = cl.size();
        co_await off_loop([&] {
            if (cl.add_member() != fourth) throw std::logic_error("the new member's index is not size()");
            cl.reconfigure({fourth}, {});
        });
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return log->said(address(fourth)); }, 15s));
        co_await off_loop([&] { cl.reconfigure({}, {0, 1}); });
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return log->said("now at " + address(2) + "," + address(3) + " ") ||
                log->said("now at " + address(3) + "," + address(2) + " ");
        }, 15s));
        cl.stop(0);
        cl.stop(1);
        const int before = reads;
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return s.state() == session_state::connected && reads > before + 100;
        }, 20s));
        stop = true;
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return running == 0; }));
        BOOST_TEST(s.id() == id);  // the same session throughout
        BOOST_TEST(!g.lost(), g.lost().message());
        BOOST_TEST(wrong.empty(), "unexpected errors: " << wrong.size() << ", first: " << (wrong.empty() ? "" : wrong[0].message()));
        BOOST_TEST_MESSAGE("reads done: " << reads << "; the C client left a member under the session: "
                                          << log->said("closed under the session"));
        co_await g.release(use_awaitable);
        co_await s.async_close(use_awaitable);
    }, 180s);
}

BOOST_AUTO_TEST_SUITE_END()  // membership_tests
