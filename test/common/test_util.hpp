// Shared helpers for the integration tests: a ZooKeeper per test binary, running a coroutine to completion
// with a deadline, polling a condition with a deadline. Declared here, compiled once in test_util.cpp (the
// test_support library): a coroutine defined inline in a header is compiled again in every test that
// includes it, used or not (GCC 12 emits its outlined parts anyway; 10 s of each test's 14 s under the
// sanitizers before they moved; issue 49).
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
#include <thread>
#include <vector>

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
zklock::testing::server& shared_server();

/// A session's configuration for `hosts`, with the tests' timeouts (a 4 s session); ZKLOCK_TEST_LOG=4 in
/// the environment turns on the C client's debug log.
zklock::session_config config_for(const std::string& hosts);

/// Runs the coroutine `fn()` on `ex` and waits for it from this thread, which must not be one of ex's.
template <class Executor, class Fn>
auto on(const Executor& ex, Fn fn)
{
    return asio::co_spawn(ex, fn(), asio::use_future).get();
}

/// Lets the executor run whatever else is ready, then resumes.
asio::awaitable<void> yield();

/// Sessions on the shared server (connect() connects them all).
struct sessions {
    asio::io_context& ioc;
    std::vector<std::unique_ptr<zklock::session>> all;
    sessions(asio::io_context& io, std::size_t n);
    asio::awaitable<void> connect();
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

    explicit threaded_sessions(std::size_t n);
    ~threaded_sessions();
};

/// A path no other test uses.
std::string unique_path(const std::string& what);

/// Runs `fn()` as a coroutine on `ioc` until it finishes; fails the test if it takes longer than `limit`
/// or throws.
void run(asio::io_context& ioc, std::function<asio::awaitable<void>()> fn, std::chrono::seconds limit = 60s);

/// Suspends until `pred()` holds, checking every few milliseconds; false if `limit` passes first.
asio::awaitable<bool> eventually(std::function<asio::awaitable<bool>()> pred, std::chrono::milliseconds limit = 10s);

/// Lets time pass on the executor (for scenarios that are about time, such as a deadline or a downtime).
asio::awaitable<void> pause(std::chrono::milliseconds d);

/// The children of `path` (none if it does not exist); any other error fails the test.
asio::awaitable<std::vector<std::string>> children(zklock::session& s, const std::string& path);

/// Whether every request of `kind` that `s` sent has been answered or has failed (none is out): a test
/// arms a fault for the next request of a kind once the ones before it are settled.
bool none_out(const zklock::session& s, const std::string& kind);

/// The OS threads of this process (from /proc/self/status).
int thread_count();

/// A session id as ZooKeeper's four-letter words print it ("0x" and hex digits).
std::string hex_id(std::int64_t id);

/// The paths a session watches, from the server's `wchc` (a session line, then one tab-indented path per
/// watch; a session whose watches were all removed may still be listed, with no path), but for the
/// watch on /zookeeper/config that following the ensemble keeps.
std::vector<std::string> watched_paths(const std::string& wchc, std::int64_t session_id);

}  // namespace test
