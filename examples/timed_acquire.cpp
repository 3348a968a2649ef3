// Timed acquisition, and an acquisition given up because its own request was cancelled.
//
//   timed_acquire [--hosts HOSTS]
//
// A "holder" session keeps the lock while a "client" session tries three ways to stop waiting:
//   1. a deadline given to acquire itself:          m.acquire(300ms)               -> error::timeout
//   2. a race with a timer (awaitable operators):   m.acquire() || timer.async_wait() -> the timer wins,
//      and the losing acquire is cancelled
//   3. the request's own cancellation signal:       the client's caller hangs up, emits the signal bound
//      to the acquire, which completes with operation_aborted
// Each time the client's queue node is withdrawn: only the holder's node is left under the lock path.
// Then the holder releases and the client gets the lock. Without --hosts it starts its own ZooKeeper.
#include <zklock/mutex.hpp>
#include <zklock/session.hpp>
#include <zklock/testing/server.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using namespace std::chrono_literals;
using boost::system::error_code;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

void expect(bool ok, const std::string& what)
{
    std::cout << (ok ? "  ok: " : "  FAILED: ") << what << std::endl;
    if (!ok) throw std::runtime_error(what);
}

/// Waits (with a deadline) until `path` has exactly `n` children: cancelled acquires delete their node
/// in the background.
asio::awaitable<bool> children_become(zklock::session& s, const std::string& path, std::size_t n)
{
    asio::steady_timer t(co_await asio::this_coro::executor);
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    for (;;) {
        auto [ec, names, st] = co_await s.async_get_children(path, use_tuple);
        if (!ec && names.size() == n) co_return true;
        if (std::chrono::steady_clock::now() > deadline) co_return false;
        t.expires_after(20ms);
        co_await t.async_wait(use_tuple);
    }
}

asio::awaitable<void> demo(std::string hosts)
{
    auto ex = co_await asio::this_coro::executor;
    zklock::session_config cfg;
    cfg.hosts = hosts;
    zklock::session holder_session(ex, cfg), client_session(ex, cfg);
    co_await holder_session.async_connect(asio::use_awaitable);
    co_await client_session.async_connect(asio::use_awaitable);

    const std::string path = "/zklock-demo/timed";
    zklock::mutex held(holder_session, path);
    zklock::guard holder_guard = co_await held.acquire(5s, asio::use_awaitable);
    std::cout << "holder has " << holder_guard.node() << std::endl;

    zklock::mutex m(client_session, path);

    // 1. The deadline is part of the request.
    {
        std::cout << "1. acquire(300ms) while someone else holds the lock" << std::endl;
        const auto t0 = std::chrono::steady_clock::now();
        auto [ec, g] = co_await m.acquire(300ms, use_tuple);
        expect(ec == zklock::error::timeout, "completes with error::timeout: " + ec.message());
        expect(std::chrono::steady_clock::now() - t0 >= 300ms, "after the 300 ms");
        expect(co_await children_become(client_session, path, 1), "the client's node is gone");
    }

    // 2. A race with a timer. `||` waits for the first operation to *succeed* and cancels the other, so
    //    the acquire (which fails only if something is wrong) loses to the timer and is cancelled.
    {
        std::cout << "2. co_await (m.acquire(use_awaitable) || timer.async_wait(use_awaitable))" << std::endl;
        asio::steady_timer timer(ex, 300ms);
        auto r = co_await (m.acquire(asio::use_awaitable) || timer.async_wait(asio::use_awaitable));
        expect(r.index() == 1, "the timer won; the acquire was cancelled");
        expect(co_await children_become(client_session, path, 1), "the client's node is gone");
    }

    // 3. The request is cancelled by whoever issued it: here a "caller" that hangs up after 200 ms
    //    emits the cancellation signal bound to the acquire.
    {
        std::cout << "3. an acquire bound to a cancellation_signal, emitted by the caller" << std::endl;
        asio::cancellation_signal hang_up;
        asio::steady_timer caller(ex, 200ms);
        caller.async_wait([&](error_code ec) {
            if (!ec) hang_up.emit(asio::cancellation_type::terminal);
        });
        auto [ec, g] = co_await m.acquire(asio::bind_cancellation_slot(hang_up.slot(), use_tuple));
        expect(ec == asio::error::operation_aborted, "completes with operation_aborted: " + ec.message());
        expect(!g, "and holds nothing");
        expect(co_await children_become(client_session, path, 1), "the client's node is gone");
    }

    // 4. The holder leaves; now the client gets the lock in time.
    {
        std::cout << "4. the holder releases; acquire(5s) succeeds" << std::endl;
        asio::steady_timer later(ex, 100ms);
        later.async_wait([&](error_code) { holder_guard.release([](error_code) {}); });
        auto [ec, g] = co_await m.acquire(5s, use_tuple);
        expect(!ec && g.owns_lock(), "acquired " + g.node() + ", fencing token " + g.token().to_string());
        co_await g.release(asio::use_awaitable);
    }

    co_await client_session.async_close(use_tuple);
    co_await holder_session.async_close(use_tuple);
}

}  // namespace

int main(int argc, char** argv)
{
    std::string hosts;
    if (argc == 3 && std::string(argv[1]) == "--hosts") hosts = argv[2];
    else if (argc != 1) {
        std::cerr << "usage: timed_acquire [--hosts HOSTS]\n";
        return 64;
    }
    try {
        std::unique_ptr<zklock::testing::server> local;
        if (hosts.empty()) {
            local = std::make_unique<zklock::testing::server>();
            hosts = local->connect_string();
        }
        asio::io_context ioc;
        std::exception_ptr failure;
        asio::co_spawn(ioc, demo(hosts), [&](std::exception_ptr e) { failure = e; });
        ioc.run();
        if (failure) std::rethrow_exception(failure);
        std::cout << "timed_acquire: all done" << std::endl;
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "timed_acquire: " << e.what() << "\n";
        return 1;
    }
}
