// The usual multi-threaded Asio service: an io_context on four threads, the sessions on strands, each
// simulated connection on a strand of its own, cancelling acquires with ||, with a signal and by timeout,
// and releasing from plain threads through use_future. Run under ThreadSanitizer by scripts/test.sh.
#include "test_util.hpp"

#include <future>
#include <random>
#include <thread>

BOOST_AUTO_TEST_SUITE(thread_tests)

using namespace test;
using namespace boost::asio::experimental::awaitable_operators;
using zklock::mutex;
using zklock::session;

namespace {

struct counters {
    std::atomic<int> inside{0}, violations{0}, sections{0}, cancelled{0}, timeouts{0}, errors{0};
};

/// The critical section: nobody else may be inside, whatever thread runs it.
void enter(counters& c)
{
    if (c.inside.fetch_add(1) != 0) ++c.violations;
    ++c.sections;
}
void leave(counters& c) { c.inside.fetch_sub(1); }

asio::awaitable<void> connection(mutex m, counters& c, int id, int iterations)
{
    auto strand = co_await asio::this_coro::executor;
    std::mt19937 rng(static_cast<unsigned>(id));
    auto jitter = [&] { return std::chrono::microseconds(std::uniform_int_distribution<int>(0, 3000)(rng)); };
    for (int k = 0; k < iterations; ++k) {
        std::optional<zklock::guard> got;
        switch ((k + id) % 4) {
        case 0: {  // cancelled by ||
            asio::steady_timer t(strand, jitter());
            auto r = co_await (m.acquire(tuple_awaitable) || t.async_wait(tuple_awaitable));
            if (r.index() == 0) {
                auto [ec, g] = std::move(std::get<0>(r));
                if (!ec) got = std::move(g);
                else ++c.errors;
            } else {
                ++c.cancelled;
            }
            break;
        }
        case 1: {  // cancelled by a signal emitted on this strand
            // Shared: the timer's handler may still be queued when the acquire has completed.
            auto sig = std::make_shared<asio::cancellation_signal>();
            asio::steady_timer t(strand, jitter());
            t.async_wait([sig](error_code ec) {
                if (!ec) sig->emit(asio::cancellation_type::terminal);
            });
            auto [ec, g] = co_await m.acquire(asio::bind_cancellation_slot(sig->slot(), tuple_awaitable));
            t.cancel();
            if (!ec) got = std::move(g);
            else if (ec == asio::error::operation_aborted) ++c.cancelled;
            else ++c.errors;
            break;
        }
        case 2: {  // a short timeout
            auto [ec, g] = co_await m.acquire(std::chrono::duration_cast<std::chrono::milliseconds>(jitter()) + 1ms,
                                              tuple_awaitable);
            if (!ec) got = std::move(g);
            else if (ec == zklock::error::timeout) ++c.timeouts;
            else ++c.errors;
            break;
        }
        default: {  // acquired here, worked on and released by a plain thread through use_future
            auto [ec, g] = co_await m.acquire(30s, tuple_awaitable);
            if (ec) {
                ++c.errors;
                break;
            }
            std::atomic<bool> done{false};
            std::thread worker([&c, &done, g = std::move(g)]() mutable {
                enter(c);
                std::this_thread::yield();
                leave(c);
                auto f = g.release(asio::use_future);
                try {
                    f.get();
                } catch (const std::exception&) {
                    ++c.errors;
                }
                done = true;
            });
            co_await eventually([&]() -> asio::awaitable<bool> { co_return done.load(); }, 30s);
            worker.join();
            continue;
        }
        }
        if (!got) continue;
        enter(c);
        co_await yield();
        leave(c);
        if (k % 2) co_await got->release(tuple_awaitable);
        else got.reset();  // the destructor, on this strand, releases in the background
    }
}

}  // namespace

BOOST_AUTO_TEST_CASE(strands_cancel_and_futures_release_without_races)
{
    threaded_sessions service(2);
    auto& ioc = service.ioc;
    auto strand_a = service.strands[0], strand_b = service.strands[1];
    auto& a = service.all[0];
    auto& b = service.all[1];
    const auto path = unique_path("threads");
    // Mutexes are made on their session's executor; copies may be used anywhere.
    using maybe_mutex = std::optional<mutex>;
    auto ma = *on(strand_a, [&]() -> asio::awaitable<maybe_mutex> { co_return mutex(*a, path, {.local_handoff_limit = 4}); });
    auto mb = *on(strand_b, [&]() -> asio::awaitable<maybe_mutex> { co_return mutex(*b, path, {.local_handoff_limit = 4}); });

    counters c;
    constexpr int connections = 8, iterations = 40;
    std::vector<std::future<void>> running;
    for (int i = 0; i < connections; ++i)
        running.push_back(asio::co_spawn(asio::make_strand(ioc), connection(i % 2 ? ma : mb, c, i, iterations),
                                         asio::use_future));
    // Plain threads that acquire and release through futures alone.
    std::vector<std::thread> plain;
    for (int i = 0; i < 2; ++i)
        plain.emplace_back([&, m = i ? ma : mb]() mutable {
            for (int k = 0; k < 20; ++k) {
                try {
                    auto g = m.acquire(30s, asio::use_future).get();
                    enter(c);
                    leave(c);
                    g.release(asio::use_future).get();
                } catch (const std::exception&) {
                    ++c.errors;
                }
            }
        });
    for (auto& f : running) BOOST_CHECK_NO_THROW(f.get());
    for (auto& t : plain) t.join();

    BOOST_TEST_MESSAGE("sections " << c.sections << ", cancelled " << c.cancelled << ", timeouts " << c.timeouts
                                   << ", errors " << c.errors);
    BOOST_TEST(c.violations == 0);
    BOOST_TEST(c.errors == 0);
    BOOST_TEST(c.sections > 100);
    BOOST_TEST(c.cancelled > 0);
    const auto left = on(strand_a, [&]() -> asio::awaitable<std::size_t> {
        co_await eventually([&]() -> asio::awaitable<bool> { co_return (co_await children(*a, path)).empty(); });
        co_return (co_await children(*a, path)).size();
    });
    BOOST_TEST(left == 0u, "lock nodes were left behind");

    // The sessions (and the mutexes' shared state) go on their own strands.
    on(strand_a, [&]() -> asio::awaitable<void> {
        { auto drop = std::move(ma); }
        co_await a->async_close(use_awaitable);
        a.reset();
    });
    on(strand_b, [&]() -> asio::awaitable<void> {
        { auto drop = std::move(mb); }
        co_await b->async_close(use_awaitable);
        b.reset();
    });
}

BOOST_AUTO_TEST_SUITE_END()  // thread_tests
