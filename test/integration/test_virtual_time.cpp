// zklock::clock in virtual time (testing::simulation::virtual_time), with sessions on a real server: the
// recipes' leases and deadlines wait for the virtual clock, not for real time, and end exactly when it
// reaches them. The server and the C client keep real time; each test moves real time only to let the
// server answer (run_real), and virtual time only with virtual_time::run_for.
#include "test_util.hpp"

#include <zklock/testing/faults.hpp>
#include <zklock/testing/virtual_time.hpp>
#include <zklock/zklock.hpp>

BOOST_AUTO_TEST_SUITE(virtual_time_tests)

using namespace test;
using zklock::testing::simulation::virtual_time;

namespace virtual_time_test {

/// Runs `ioc` in real time, virtual time standing still, until `done()` (the server's answers arrive);
/// fails the test if 20 s of real time pass first.
void run_real(asio::io_context& ioc, const std::function<bool()>& done)
{
    const auto limit = std::chrono::steady_clock::now() + 20s;
    while (!done() && std::chrono::steady_clock::now() < limit) {
        if (ioc.stopped()) ioc.restart();
        ioc.run_one_for(5ms);
    }
    BOOST_TEST_REQUIRE(done());
}

}  // namespace virtual_time_test

using virtual_time_test::run_real;

BOOST_AUTO_TEST_CASE(a_lease_ends_when_virtual_time_reaches_it)
{
    virtual_time vt;
    asio::io_context ioc;
    sessions ss(ioc, 2);  // 4 s sessions: a loss grace of 2 s, longer than the lease
    const auto path = unique_path("virtual-lease");
    zklock::mutex a(ss[0], path), b(ss[1], path);
    std::optional<zklock::guard> held, next;
    zklock::error_code lost_why;
    bool told = false;
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        held = co_await a.acquire(1s, zklock::lease(1s), use_awaitable);
        auto [ec, why] = co_await held->async_wait_lost(tuple_awaitable);
        BOOST_TEST(!ec);
        lost_why = why;
        told = true;
    }, asio::detached);
    run_real(ioc, [&] { return held.has_value(); });
    const auto granted = vt.now();  // virtual time has not moved: the lease runs from here

    vt.run_for(ioc, 999ms);
    BOOST_TEST(!told);
    BOOST_TEST(!held->lost());
    vt.run_for(ioc, 1ms);  // the lease's end, a second of virtual time after the grant
    BOOST_TEST_REQUIRE(told);
    BOOST_TEST(lost_why == zklock::error::lease_expired);
    BOOST_TEST((vt.now() == granted + 1s));

    // The expired holder's node goes from the server: the other session gets the lock.
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { next = co_await b.acquire(10s, use_awaitable); }, asio::detached);
    run_real(ioc, [&] { return next.has_value(); });
    BOOST_TEST(next->owns_lock());
    BOOST_TEST((next->token() > held->token()));
    bool done = false;
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
        co_await next->release(use_awaitable);
        BOOST_TEST((co_await children(ss[1], path)).empty());
        for (auto& s : ss.all) co_await s->async_close(use_awaitable);
        done = true;
    }, asio::detached);
    run_real(ioc, [&] { return done; });
}

BOOST_AUTO_TEST_CASE(a_timed_acquire_gives_up_when_virtual_time_reaches_its_deadline)
{
    virtual_time vt;
    asio::io_context ioc;
    sessions ss(ioc, 2);
    const auto path = unique_path("virtual-deadline");
    zklock::mutex a(ss[0], path), b(ss[1], path);
    std::optional<zklock::guard> held;
    std::optional<zklock::error_code> waited;
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        held = co_await a.acquire(1s, use_awaitable);
    }, asio::detached);
    run_real(ioc, [&] { return held.has_value(); });

    // b waits behind a for at most 1.5 s of virtual time: queued once its node is on the server.
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
        auto [ec, g] = co_await b.acquire(1500ms, tuple_awaitable);
        waited = ec;
    }, asio::detached);
    std::size_t queued = 0;
    bool asking = false;
    run_real(ioc, [&] {
        if (queued < 2 && !asking) {
            asking = true;
            asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
                queued = (co_await children(ss[0], path)).size();
                asking = false;
            }, asio::detached);
        }
        return queued == 2;
    });
    BOOST_TEST(!waited);  // real time has passed; the deadline is virtual

    vt.run_for(ioc, 1499ms);
    BOOST_TEST(!waited);
    vt.run_for(ioc, 1ms);
    BOOST_TEST_REQUIRE(waited.has_value());
    BOOST_TEST(*waited == zklock::error::timeout);
    BOOST_TEST(!held->lost());  // the holder is untouched

    // b's node goes from the server; a still holds, then releases, and nothing is left.
    bool done = false;
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return (co_await children(ss[0], path)).size() == 1; }));
        co_await held->release(use_awaitable);
        BOOST_TEST((co_await children(ss[0], path)).empty());
        for (auto& s : ss.all) co_await s->async_close(use_awaitable);
        done = true;
    }, asio::detached);
    run_real(ioc, [&] { return done; });
}

// No semaphore guard is handed out already lost. The answer that frees a permit for a waiter arrives with
// a broken connection, and meanwhile more than the loss grace passes (virtual time moved by 3 s; the grace
// is 2 s): counted from the send of the newest answered write, the session may have expired by now. The
// waiter is granted only once the session is connected again and has heard from ZooKeeper, a guard that
// is not lost. (The semaphore grants only while connected, and here a queued request's answer renews the
// touch before the grant; the check in semaphore_queue::grant that holds a permit back when the touch is
// still old is not reached this way: forcing it needs the simulated client of issue 50.)
BOOST_AUTO_TEST_CASE(a_semaphore_permit_freed_across_a_broken_connection_after_the_loss_grace_is_not_granted_lost)
{
    virtual_time vt;
    asio::io_context ioc;
    sessions ss(ioc, 2);  // 4 s sessions: a loss grace of 2 s
    const auto path = unique_path("virtual-held-back");
    zklock::semaphore a(ss[0], path, 1), b(ss[1], path, 1);
    std::optional<zklock::guard> theirs, ours;
    std::optional<zklock::error_code> waited;
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        theirs = co_await b.acquire(5s, use_awaitable);
    }, asio::detached);
    run_real(ioc, [&] { return theirs.has_value(); });

    // a waits for the permit: its lease node is on the server and its listing of the leases answered.
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
        auto [ec, g] = co_await a.acquire(60s, tuple_awaitable);
        waited = ec;
        if (!ec) ours = std::move(g);
    }, asio::detached);
    std::size_t leases = 0;
    bool asking = false;
    run_real(ioc, [&] {
        if (leases < 2 && !asking) {
            asking = true;
            asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
                leases = (co_await children(ss[1], path + "/leases")).size();
                asking = false;
            }, asio::detached);
        }
        return leases == 2 && none_out(ss[0], "get_children") && none_out(ss[0], "create");
    });

    // b lets go; a's next listing, the one that frees its permit, comes with a broken connection, and
    // 3 s of virtual time pass before a reads it.
    const auto before = vt.now();
    bool disconnected = false;
    zklock::testing::disconnect_before_next_answer(ss[0], "get_children", [&] {
        vt.advance_to(vt.now() + 3s);
        disconnected = true;
    });
    bool released = false;
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
        co_await theirs->release(use_awaitable);
        released = true;
    }, asio::detached);
    run_real(ioc, [&] { return released && disconnected && waited.has_value(); });
    BOOST_TEST(!*waited, waited->message());
    BOOST_TEST_REQUIRE(ours.has_value());
    BOOST_TEST((vt.now() >= before + 3s));
    BOOST_TEST(!ours->lost(), ours->lost().message());  // granted once heard from: not lost
    BOOST_TEST(ss[0].state() == zklock::session_state::connected);  // the grant waited for the reconnect

    // Still held a few round trips later (no ownership_uncertain behind the grant), then released: nothing left.
    bool done = false;
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
        co_await ss[0].async_sync("/", use_awaitable);
        co_await ss[0].async_exists("/", use_awaitable);
        BOOST_TEST(!ours->lost(), ours->lost().message());
        co_await ours->release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(ss[1], path + "/leases")).empty();
        }));
        for (auto& s : ss.all) co_await s->async_close(use_awaitable);
        done = true;
    }, asio::detached);
    run_real(ioc, [&] { return done; });
}

BOOST_AUTO_TEST_CASE(virtual_time_is_the_constructing_threads_alone)
{
    const auto before = std::chrono::steady_clock::now();
    std::optional<zklock::clock::time_point> inside, on_another_thread;
    {
        virtual_time vt(zklock::clock::time_point(std::chrono::hours(1)));
        inside = zklock::clock::now();
        std::thread([&] { on_another_thread = zklock::clock::now(); }).join();
    }
    BOOST_TEST((*inside == zklock::clock::time_point(std::chrono::hours(1))));
    BOOST_TEST((*on_another_thread >= before));  // real time there
    BOOST_TEST((zklock::clock::now() >= before));  // and here again once it is gone
}

BOOST_AUTO_TEST_SUITE_END()
