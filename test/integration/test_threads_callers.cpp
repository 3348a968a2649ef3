// Callers that are not on the session's executor: an io_context whose only work is an acquire on a session
// that runs elsewhere, plain threads polling guard::lost() while the session's thread loses the lock, lock
// objects and their unstarted operations dropped on a plain thread, statistics read from plain threads, and
// a drain started from a plain thread.
// Run under ThreadSanitizer by scripts/test.sh.
#include "test_util.hpp"

#include <zklock/semaphore.hpp>
#include <zklock/shared_mutex.hpp>

#include <array>
#include <atomic>
#include <functional>
#include <future>
#include <optional>
#include <thread>

BOOST_AUTO_TEST_SUITE(thread_caller_tests)

using namespace test;
using zklock::guard;
using zklock::mutex;

namespace {

/// Two sessions on strands of their own (threaded_sessions), and what the test made on each strand.
template <class OnA, class OnB>
struct two_sessions : threaded_sessions {
    std::optional<OnA> on_a;
    std::optional<OnB> on_b;
    two_sessions(std::function<OnA(zklock::session&)> make_a, std::function<OnB(zklock::session&)> make_b)
        : threaded_sessions(2)
    {
        on(strands[0], [&]() -> asio::awaitable<void> { on_a.emplace(make_a(*all[0])); co_return; });
        on(strands[1], [&]() -> asio::awaitable<void> { on_b.emplace(make_b(*all[1])); co_return; });
    }
    zklock::session& b() { return *all[1]; }
    /// Drops what was made on each strand, and closes its session there.
    void close()
    {
        close_on(strands[0], all[0], on_a);
        close_on(strands[1], all[1], on_b);
    }

private:
    template <class Made>
    void close_on(asio::strand<asio::io_context::executor_type> strand, std::unique_ptr<zklock::session>& s, Made& made)
    {
        on(strand, [&]() -> asio::awaitable<void> {
            made.reset();
            co_await s->async_close(use_awaitable);
            s.reset();
        });
    }
};

struct nothing {};

}  // namespace

// An io_context that has nothing to do but wait for a grant must not run out of work (and return from
// run()) while the acquire is pending: the completion tracks work on the handler's executor, as Asio's
// own operations do. Checked for a plain callback bound to that context and for a coroutine there.
BOOST_AUTO_TEST_CASE(a_context_that_only_waits_for_a_grant_keeps_running_until_it)
{
    // Two locks, so that the coroutine's grant never waits for the callback's.
    const auto one = unique_path("other-context"), two = unique_path("other-context");
    using mutexes = std::pair<mutex, mutex>;
    two_sessions<mutexes, mutexes> service([&](zklock::session& s) { return mutexes(mutex(s, one), mutex(s, two)); },
                                           [&](zklock::session& s) { return mutexes(mutex(s, one), mutex(s, two)); });
    auto& ma = service.on_a;
    auto& mb = service.on_b;
    auto held_one = ma->first.acquire(10s, asio::use_future).get();
    auto held_two = ma->second.acquire(10s, asio::use_future).get();

    // Each context's own thread writes its flag; it is read after the join.
    asio::io_context callback_ctx, coroutine_ctx;
    bool callback_granted = false, coroutine_granted = false;
    mb->first.acquire(30s, asio::bind_executor(callback_ctx, [&](zklock::error_code ec, guard g) {
        callback_granted = !ec && g.owns_lock();  // released in the background as g goes
    }));
    asio::co_spawn(coroutine_ctx, [&]() -> asio::awaitable<void> {
        auto [ec, g] = co_await mb->second.acquire(30s, tuple_awaitable);
        coroutine_granted = !ec && g.owns_lock();
        if (g) co_await g.release(tuple_awaitable);
    }, asio::detached);
    // Nothing is ready in either context: run() would return now if nothing tracked the pending acquires.
    callback_ctx.poll();
    coroutine_ctx.poll();
    BOOST_TEST(!callback_ctx.stopped(), "the callback's context ran out of work while its acquire was pending");
    BOOST_TEST(!coroutine_ctx.stopped(), "the coroutine's context ran out of work while its acquire was pending");

    std::thread callback_thread([&] { callback_ctx.run(); });
    std::thread coroutine_thread([&] { coroutine_ctx.run(); });
    held_one.release(asio::use_future).get();
    held_two.release(asio::use_future).get();
    callback_thread.join();  // each run() returns once its grant has completed (or at once, when broken)
    coroutine_thread.join();
    BOOST_TEST(callback_granted);
    BOOST_TEST(coroutine_granted);

    service.close();
}

// guard::lost() polled from plain threads that hold their guards through use_future, while the sessions'
// threads lose the locks (another session deletes the nodes): every poller sees the loss, and
// ThreadSanitizer sees no race between the polls and the recipes' state.
BOOST_AUTO_TEST_CASE(lost_may_be_polled_from_plain_threads_while_the_lock_goes)
{
    const auto mutex_path = unique_path("poll-lost"), sem_path = unique_path("poll-lost-lease");
    using locks = std::pair<mutex, zklock::semaphore>;
    two_sessions<locks, nothing> service(
        [&](zklock::session& s) { return locks(mutex(s, mutex_path), zklock::semaphore(s, sem_path, 2)); },
        [](zklock::session&) { return nothing{}; });
    auto& la = service.on_a;
    auto held = la->first.acquire(10s, asio::use_future).get();
    auto lease = la->second.acquire(10s, asio::use_future).get();

    constexpr int pollers = 4;
    std::atomic<int> polling{0};
    std::array<zklock::error_code, pollers> seen;  // each written by its own poller, read after the join
    std::vector<std::thread> threads;
    for (int i = 0; i < pollers; ++i)
        threads.emplace_back([&, i] {
            const guard& g = i % 2 ? lease : held;
            ++polling;
            const auto until = std::chrono::steady_clock::now() + 20s;
            while (!(seen[i] = g.lost()) && std::chrono::steady_clock::now() < until) std::this_thread::yield();
        });
    while (polling.load() < pollers) std::this_thread::yield();  // all of them poll before the loss
    on(service.strands[1], [&]() -> asio::awaitable<void> {
        co_await service.b().async_remove(held.node(), -1, use_awaitable);
        co_await service.b().async_remove(lease.node(), -1, use_awaitable);
    });
    for (auto& t : threads) t.join();
    for (int i = 0; i < pollers; ++i)
        BOOST_TEST(seen[i] == zklock::error::lock_node_deleted, "poller " << i << " saw " << seen[i].message());

    held = {};  // released in the background (the nodes are gone already)
    lease = {};
    service.close();
}

// Lock objects copied, assigned and destroyed on a plain thread, and deferred operations made from them and
// dropped there unstarted after every lock object has gone (so that they hold the last references): each
// reference to the session-side state is let go on the session's executor. ThreadSanitizer would see a
// state's destructor on this thread race with the session's; the locks work afterwards.
BOOST_AUTO_TEST_CASE(lock_objects_and_unstarted_operations_may_be_dropped_on_plain_threads)
{
    const auto mutex_path = unique_path("drop-anywhere"), rw_path = unique_path("drop-anywhere-rw"),
               sem_path = unique_path("drop-anywhere-lease");
    using locks = std::tuple<mutex, zklock::shared_mutex, zklock::semaphore>;
    auto make = [&](zklock::session& s) {
        return locks(mutex(s, mutex_path), zklock::shared_mutex(s, rw_path), zklock::semaphore(s, sem_path, 1));
    };
    two_sessions<locks, nothing> service(make, [](zklock::session&) { return nothing{}; });
    // Meanwhile the session's strand keeps making and dropping lock objects of its own (their states come
    // and go in the session's registry), so that a state destroyed here would race with it.
    std::atomic<bool> stop_churn{false};
    auto churned = asio::co_spawn(service.strands[0], [&]() -> asio::awaitable<int> {
        int n = 0;
        for (; !stop_churn.load(); ++n) {
            mutex m(*service.all[0], mutex_path + "-churn-" + std::to_string(n % 4));
            auto [ec, g] = co_await m.try_acquire(tuple_awaitable);
            if (!ec) co_await g.release(use_awaitable);
        }
        co_return n;
    }, asio::use_future);
    for (int round = 0; round < 20; ++round) {
        if (!service.on_a) on(service.strands[0], [&]() -> asio::awaitable<void> {
            service.on_a.emplace(make(*service.all[0]));
            co_return;
        });
        auto unstarted = [&] {
            auto [m, rw, sem] = *service.on_a;  // copies, made here
            auto m2 = m;
            m2 = m;  // an assignment lets a reference go here
            auto rw2 = rw;
            rw2 = rw;
            return std::make_tuple(m.acquire(1s), m2.async_wait_place(0), rw.acquire_shared(1s), rw2.acquire(1s),
                                   sem.acquire(1s), sem.acquire_many(1, 1s));
        }();  // the copies go here
        on(service.strands[0], [&]() -> asio::awaitable<void> {
            service.on_a.reset();  // the originals go on their executor: the operations hold the last references
            co_return;
        });
    }
    stop_churn = true;
    BOOST_TEST(churned.get() > 0);
    // The paths still work, and nothing was left on them.
    on(service.strands[0], [&]() -> asio::awaitable<void> {
        auto& s = *service.all[0];
        auto [m, rw, sem] = make(s);
        auto g = co_await m.acquire(5s, use_awaitable);
        co_await g.release(use_awaitable);
        auto r = co_await rw.acquire_shared(5s, use_awaitable);
        co_await r.release(use_awaitable);
        auto l = co_await sem.acquire(5s, use_awaitable);
        co_await l.release(use_awaitable);
        BOOST_TEST((co_await children(s, mutex_path)).empty());
        BOOST_TEST((co_await children(s, rw_path)).empty());
        BOOST_TEST((co_await children(s, sem_path + "/leases")).empty());
    });
    service.close();
}

// session::async_stats from plain threads while the session's strand takes and releases a lock: each
// snapshot is taken on the strand (ThreadSanitizer sees no race with the counting), every snapshot is
// consistent (the grants so far, each released or held), and the counts only grow.
BOOST_AUTO_TEST_CASE(stats_may_be_read_from_plain_threads_while_locks_run)
{
    const auto path = unique_path("stats-threads");
    two_sessions<mutex, nothing> service([&](zklock::session& s) { return mutex(s, path); },
                                         [](zklock::session&) { return nothing{}; });
    constexpr int cycles = 200;
    std::atomic<bool> running{true};
    auto& s = *service.all[0];
    std::vector<std::thread> readers;
    std::array<int, 2> consistent{}, snapshots{};  // each written by its own reader, read after the join
    for (int i = 0; i < 2; ++i)
        readers.emplace_back([&, i] {
            std::uint64_t last = 0;
            while (running.load()) {
                const auto st = s.async_stats(asio::use_future).get();
                ++snapshots[i];
                const auto& l = st.locks;
                if (l.granted >= last && l.hold.count + l.holders == l.granted && l.wait.count == l.granted)
                    ++consistent[i];
                last = l.granted;
            }
        });
    on(service.strands[0], [&]() -> asio::awaitable<void> {
        for (int k = 0; k < cycles; ++k) {
            auto g = co_await service.on_a->acquire(5s, use_awaitable);
            co_await g.release(use_awaitable);
        }
    });
    running = false;
    for (auto& t : readers) t.join();
    for (int i = 0; i < 2; ++i) BOOST_TEST(consistent[i] == snapshots[i], "reader " << i);
    const auto st = s.async_stats(asio::use_future).get();
    BOOST_TEST(st.locks.granted == std::uint64_t{cycles});
    BOOST_TEST(st.locks.hold.count == std::uint64_t{cycles});
    service.close();
}

// session::async_drain started from a plain thread with use_future (the thread that waits for SIGTERM,
// say), while the session's strand holds a lock and lets it go when asked: the drain hops onto the strand,
// asks the holder, which releases, and completes with success once the server has ended the session; the
// other session takes the lock at once. ThreadSanitizer sees no race between the drain's start on this
// thread and the session's work on its strand.
BOOST_AUTO_TEST_CASE(a_drain_may_be_started_from_a_plain_thread)
{
    const auto path = unique_path("drain-thread");
    two_sessions<mutex, mutex> service([&](zklock::session& s) { return mutex(s, path); },
                                       [&](zklock::session& s) { return mutex(s, path); });
    std::promise<void> holding;
    std::promise<zklock::error_code> asked, released;
    asio::co_spawn(service.strands[0], [&]() -> asio::awaitable<void> {
        auto g = co_await service.on_a->acquire(5s, use_awaitable);
        holding.set_value();
        auto [ec] = co_await g.async_wait_revoked(tuple_awaitable);
        asked.set_value(ec);
        auto [rec] = co_await g.release(tuple_awaitable);
        released.set_value(rec);
    }, asio::detached);
    holding.get_future().wait();
    auto& a = *service.all[0];
    auto drained = a.async_drain(20s, asio::use_future);  // started here, on this plain thread
    BOOST_TEST(!asked.get_future().get());
    BOOST_TEST(!released.get_future().get());
    BOOST_CHECK_NO_THROW(drained.get());  // every holder released in time: success
    auto g = service.on_b->acquire(5s, asio::use_future).get();  // the other session's turn, at once
    BOOST_TEST(g.owns_lock());
    g.release(asio::use_future).get();
    service.close();
}

BOOST_AUTO_TEST_SUITE_END()  // thread_caller_tests
