// Shared helpers for the integration tests: a ZooKeeper per test binary, running a coroutine to completion
// with a deadline, polling a condition with a deadline.
#pragma once

#include <zklock/mutex.hpp>
#include <zklock/session.hpp>
#include <zklock/testing/server.hpp>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <ostream>
#include <sstream>
#include <future>
#include <memory>
#include <string>

// So that Boost.Test can print what it compares.
namespace zklock {
inline std::ostream& operator<<(std::ostream& o, error e) { return o << make_error_code(e).message(); }
inline std::ostream& operator<<(std::ostream& o, zk_errc e) { return o << make_error_code(e).message(); }
}  // namespace zklock

namespace test {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::use_awaitable;
using boost::system::error_code;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

/// One ZooKeeper server shared by the tests of a binary (started on first use). Tests that stop their
/// server make their own.
inline zklock::testing::server& shared_server()
{
    static zklock::testing::server s;
    return s;
}

inline zklock::session_config config_for(const std::string& hosts)
{
    zklock::session_config c;
    c.hosts = hosts;
    c.session_timeout = 4s;
    c.connect_timeout = 10s;
    if (const char* level = std::getenv("ZKLOCK_TEST_LOG")) {  // e.g. ZKLOCK_TEST_LOG=4 for the C client's debug
        c.log = zklock::stderr_log_sink();
        c.log_threshold = static_cast<zklock::log_level>(std::atoi(level));
    }
    return c;
}

/// Runs the coroutine `fn()` on `ex` and waits for it from this thread, which must not be one of ex's.
template <class Executor, class Fn>
auto on(const Executor& ex, Fn fn)
{
    return asio::co_spawn(ex, fn(), asio::use_future).get();
}

/// Lets the executor run whatever else is ready, then resumes.
inline asio::awaitable<void> yield() { co_await asio::post(co_await asio::this_coro::executor, use_awaitable); }

/// Sessions on the shared server (connect() connects them all).
struct sessions {
    asio::io_context& ioc;
    std::vector<std::unique_ptr<zklock::session>> all;
    sessions(asio::io_context& io, std::size_t n) : ioc(io)
    {
        for (std::size_t i = 0; i < n; ++i)
            all.push_back(std::make_unique<zklock::session>(ioc, config_for(shared_server().connect_string())));
    }
    asio::awaitable<void> connect()
    {
        for (auto& s : all) co_await s->async_connect(use_awaitable);
    }
    zklock::session& operator[](std::size_t i) { return *all[i]; }
    std::size_t size() const { return all.size(); }
};

/// An io_context run by four threads, and `n` sessions on strands of their own, connected (the thread tests).
/// Close the sessions on their strands (and drop what uses them there) before the end; the destructor then
/// joins the threads.
struct threaded_sessions {
    asio::io_context ioc{4};
    asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(ioc);
    std::vector<std::thread> threads;
    std::vector<asio::strand<asio::io_context::executor_type>> strands;
    std::vector<std::unique_ptr<zklock::session>> all;

    explicit threaded_sessions(std::size_t n)
    {
        for (int i = 0; i < 4; ++i) threads.emplace_back([this] { ioc.run(); });
        for (std::size_t i = 0; i < n; ++i) {
            strands.push_back(asio::make_strand(ioc));
            all.push_back(std::make_unique<zklock::session>(strands.back(), config_for(shared_server().connect_string())));
            on(strands.back(), [&]() -> asio::awaitable<void> { co_await all.back()->async_connect(use_awaitable); });
        }
    }
    ~threaded_sessions()
    {
        work.reset();
        for (auto& s : all)
            if (s) ioc.stop();  // a test that failed half-way: do not wait for its sessions
        for (auto& t : threads) t.join();
    }
};

/// A path no other test uses.
inline std::string unique_path(const std::string& what)
{
    static std::atomic<int> n{0};
    return "/test/" + what + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

/// Runs `fn()` as a coroutine on `ioc` until it finishes; fails the test if it takes longer than `limit`
/// or throws.
inline void run(asio::io_context& ioc, std::function<asio::awaitable<void>()> fn, std::chrono::seconds limit = 60s)
{
    bool done = false;
    std::exception_ptr failure;
    asio::co_spawn(ioc, fn(), [&](std::exception_ptr e) {
        failure = e;
        done = true;
    });
    ioc.restart();
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done && std::chrono::steady_clock::now() < deadline) ioc.run_one_for(100ms);
    BOOST_REQUIRE_MESSAGE(done, "the test coroutine did not finish within " << limit.count() << " s");
    if (failure) std::rethrow_exception(failure);
}

/// Suspends until `pred()` holds, checking every few milliseconds; false if `limit` passes first.
inline asio::awaitable<bool> eventually(std::function<asio::awaitable<bool>()> pred, std::chrono::milliseconds limit = 10s)
{
    asio::steady_timer t(co_await asio::this_coro::executor);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        if (co_await pred()) co_return true;
        if (std::chrono::steady_clock::now() >= deadline) co_return false;
        t.expires_after(20ms);
        co_await t.async_wait(use_awaitable);
    }
}

/// Lets time pass on the executor (for scenarios that are about time, such as a deadline or a downtime).
inline asio::awaitable<void> pause(std::chrono::milliseconds d)
{
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(use_awaitable);
}

inline asio::awaitable<std::vector<std::string>> children(zklock::session& s, const std::string& path)
{
    auto [ec, names, st] = co_await s.async_get_children(path, tuple_awaitable);
    if (ec && ec != zklock::zk_errc::no_node) BOOST_FAIL("get_children " << path << ": " << ec.message());
    co_return names;
}

/// The OS threads of this process (from /proc/self/status).
inline int thread_count()
{
    std::ifstream f("/proc/self/status");
    std::string key;
    while (f >> key) {
        if (key == "Threads:") {
            int n = 0;
            f >> n;
            return n;
        }
    }
    return -1;
}

inline std::string hex_id(std::int64_t id)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(id));
    return buf;
}

/// The paths a session watches, from the server's `wchc` (a session line, then one tab-indented path per
/// watch; a session whose watches were all removed may still be listed, with no path), but for the
/// watch on /zookeeper/config that following the ensemble keeps.
inline std::vector<std::string> watched_paths(const std::string& wchc, std::int64_t session_id)
{
    std::vector<std::string> out;
    std::istringstream in(wchc);
    std::string line;
    bool mine = false;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        if (line[0] != '\t') {
            mine = line == hex_id(session_id);
            continue;
        }
        // Every session following the ensemble (session_config::follow_ensemble) watches its configuration.
        if (mine && line != "\t/zookeeper/config") out.push_back(line.substr(1));
    }
    return out;
}

}  // namespace test
