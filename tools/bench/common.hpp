// What zklock_bench's scenarios share: the options, the clocks and percentiles, sessions made as the peers
// make theirs, and a pool of worker coroutines whose first failure ends the run.
#pragma once

#include <zklock/mutex.hpp>
#include <zklock/session.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace zklock_bench {

namespace asio = boost::asio;
using clk = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A single acquire that takes this long is a hang, not a figure: fail loudly instead of waiting forever.
inline constexpr auto lock_timeout = 120s;
// The same for a whole contended run or drain, which waits on many acquires at once.
inline constexpr auto run_timeout = 600s;

struct usage_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct options {
    std::string hosts;  // empty: start a local server
    std::size_t local_handoff_limit = zklock::mutex_options{}.local_handoff_limit;
    bool linger = false;
    std::size_t sessions = 0;       // rw and semaphore: 0 = one session per worker, as the peers
    std::size_t hold_us = 0;        // rw and semaphore: how long a section lasts (0: one turn of the loop)
    bool lock_statistics = true;    // --no-stats: session_config::lock_statistics off, for the overhead's pair
    std::vector<std::string> args;  // the scenario and its arguments
};

inline std::int64_t micros(clk::duration d) { return std::chrono::duration_cast<std::chrono::microseconds>(d).count(); }
inline double seconds(clk::duration d) { return std::chrono::duration<double>(d).count(); }

// The peers' percentile: the element at index p*n of the sorted sample.
inline std::int64_t pct(std::vector<std::int64_t> v, double p)
{
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

// A path of its own per run, as the peers do, so runs on one server never meet.
inline std::string fresh_path() { return "/bench/zklock-" + std::to_string(clk::now().time_since_epoch().count()); }

inline zklock::session make_session(const asio::any_io_executor& ex, const options& o)
{
    zklock::session_config cfg;
    cfg.hosts = o.hosts;
    cfg.lock_statistics = o.lock_statistics;
    cfg.session_timeout = 30s;  // as the peers ask
    cfg.log = zklock::stderr_log_sink();
    cfg.log_threshold = zklock::log_level::error;
    return zklock::session(ex, std::move(cfg));
}

// A session connected to the run's server, as the peers make theirs.
inline asio::awaitable<zklock::session> connected_session(const options& o)
{
    auto s = make_session(co_await asio::this_coro::executor, o);
    co_await s.async_connect(asio::use_awaitable);
    co_return s;
}

inline zklock::mutex_options lock_options(const options& o)
{
    zklock::mutex_options m;
    m.local_handoff_limit = o.local_handoff_limit;
    m.linger = o.linger;
    return m;
}

// Waits until `done()` holds, woken by `latch.cancel()`; a single-threaded latch with a deadline.
asio::awaitable<void> wait_until(asio::steady_timer& latch, auto done, const char* what)
{
    latch.expires_after(run_timeout);
    while (!done()) {
        auto [ec] = co_await latch.async_wait(asio::as_tuple(asio::use_awaitable));
        if (!ec) throw std::runtime_error(std::string(what) + " did not finish within the run timeout");
    }
}

// A run of worker coroutines on one thread (the peers' thread pool): the sessions they share out, the
// sections left to start, and the first failure, which closes every session so that all pending acquires
// fail at once and the run ends.
struct worker_run {
    explicit worker_run(const asio::any_io_executor& ex) : latch(ex) {}
    std::vector<zklock::session> sessions;
    std::int64_t left = 0;  // sections still to start; the peers take one before each acquire
    std::size_t running = 0;
    std::exception_ptr error;
    std::vector<std::int64_t> acquire_us;
    std::chrono::microseconds hold{};
    asio::steady_timer latch;

    // A session per worker (--sessions N: N of them at most), connected before the clock starts.
    asio::awaitable<void> connect(const options& o, std::size_t workers)
    {
        const auto ex = co_await asio::this_coro::executor;
        const std::size_t n = o.sessions == 0 ? workers : std::min(o.sessions, workers);
        hold = std::chrono::microseconds(o.hold_us);
        for (std::size_t i = 0; i < n; ++i) {
            sessions.push_back(make_session(ex, o));
            co_await sessions.back().async_connect(asio::use_awaitable);
        }
    }
    // Worker i's session: round robin over the sessions.
    zklock::session& session_of(std::size_t worker) { return sessions[worker % sessions.size()]; }
    // One section more to run? Taken before the acquire, so that exactly K sections run, as the peers'.
    bool take() { return left-- > 0; }
    // The inside of a section. Every worker shares this thread: a section without a suspension could never
    // overlap another, whatever the lock does, and no count would prove anything. By default (the peers'
    // empty sections) it lets all ready completions run first; --hold-us keeps it open that long, so that
    // sections overlap as far as the lock lets them.
    asio::awaitable<void> section()
    {
        const auto ex = co_await asio::this_coro::executor;
        if (hold == hold.zero()) co_return co_await asio::post(ex, asio::use_awaitable);
        asio::steady_timer t(ex, hold);
        co_await t.async_wait(asio::use_awaitable);
    }
};

template <class Run>
void spawn_worker(const std::shared_ptr<Run>& r, asio::awaitable<void> worker)
{
    ++r->running;
    asio::co_spawn(r->latch.get_executor(), std::move(worker), [r](std::exception_ptr e) {
        if (e && !r->error) {
            r->error = e;
            for (auto& s : r->sessions) s.close();
        }
        --r->running;
        r->latch.cancel();
    });
}

// Waits for every worker; rethrows the first failure.
template <class Run>
asio::awaitable<void> join_workers(const std::shared_ptr<Run>& r, const char* what)
{
    co_await wait_until(r->latch, [&] { return r->running == 0 || r->error; }, what);
    if (r->error) std::rethrow_exception(r->error);
}

inline std::uint64_t zk_requests(const std::vector<zklock::session>& sessions)
{
    std::uint64_t n = 0;
    for (const auto& s : sessions) n += s.stats().requests;
    return n;
}

// The library's own figures over the sessions' locks (zklock/stats.hpp), beside the benchmark's timing.
inline zklock::lock_stats lock_figures(const std::vector<zklock::session>& sessions)
{
    zklock::lock_stats all;
    for (const auto& s : sessions) all.merge(s.stats().locks);
    return all;
}

// What the library counted between two snapshots (`before` taken after a run's warm-ups): the acquires'
// outcomes and the wait and hold histograms, so that they cover the same acquires as the benchmark's timing.
inline zklock::lock_stats since(zklock::lock_stats after, const zklock::lock_stats& before)
{
    auto minus = [](zklock::latency_histogram& h, const zklock::latency_histogram& b) {
        for (std::size_t i = 0; i < h.buckets.size(); ++i) h.buckets[i] -= b.buckets[i];
        h.count -= b.count;
        h.sum -= b.sum;
    };
    after.granted -= before.granted, after.timed_out -= before.timed_out, after.cancelled -= before.cancelled;
    after.failed -= before.failed, after.local_grants -= before.local_grants;
    after.zookeeper_grants -= before.zookeeper_grants;
    minus(after.wait, before.wait);
    minus(after.hold, before.hold);
    return after;
}

// Prints the library's wait and hold percentiles (each the upper bound of its histogram bucket), and checks
// them against the benchmark's own: every acquire the benchmark made counted once (`acquires`), and no
// library wait longer than the benchmark measured around the same acquire (`bench_wait_p50_us`, or -1 where
// the benchmark does not time the whole acquire), so that both are trusted. Throws on a mismatch. With
// --no-stats it checks that nothing was counted, and prints nothing.
inline void print_library_figures(const options& o, const zklock::lock_stats& l, std::uint64_t acquires,
                                  std::int64_t bench_wait_p50_us)
{
    if (!o.lock_statistics) {  // --no-stats: nothing was counted, so there is nothing to print or check
        if (l.granted != 0) throw std::runtime_error("the library counted locks with its statistics off");
        return;
    }
    const auto wait50 = l.wait.quantile_bound(.5).count(), wait99 = l.wait.quantile_bound(.99).count();
    // "zklock " first: scripts/bench.sh records its key=value pairs with the scenario's.
    std::printf("zklock library: lib_granted=%" PRIu64 " lib_local_grants=%" PRIu64 " lib_wait_p50_le_us=%" PRId64
                " lib_wait_p99_le_us=%" PRId64 " lib_hold_p50_le_us=%" PRId64 " lib_hold_p99_le_us=%" PRId64 "\n",
                l.granted, l.local_grants, static_cast<std::int64_t>(wait50), static_cast<std::int64_t>(wait99),
                static_cast<std::int64_t>(l.hold.quantile_bound(.5).count()),
                static_cast<std::int64_t>(l.hold.quantile_bound(.99).count()));
    // The bucket below the library's median ends at this bound: the benchmark's median cannot be below it.
    std::int64_t below = 0;
    for (auto b : zklock::latency_histogram::upper_bounds_us)
        if (b < wait50) below = b;
    if (l.granted != acquires || l.failed + l.timed_out + l.cancelled != 0 || l.hold.count != l.granted ||
        (bench_wait_p50_us >= 0 && bench_wait_p50_us < below))
        throw std::runtime_error("the library's statistics disagree with the benchmark's: granted " +
                                 std::to_string(l.granted) + " of " + std::to_string(acquires) +
                                 " acquires, median wait at most " + std::to_string(wait50) + " us against " +
                                 std::to_string(bench_wait_p50_us) + " us");
}

// The scenarios in files of their own (bench/bench_rw.cpp, bench/bench_semaphore.cpp, bench/bench_scale.cpp).
asio::awaitable<void> rw(options o, std::size_t readers, std::size_t writers, std::size_t sections);
asio::awaitable<void> semaphore(options o, std::size_t leases, std::size_t workers, std::size_t sections);
asio::awaitable<void> independent(options o, std::size_t threads, std::size_t cycles);
asio::awaitable<void> dropped(options o, std::size_t n);
asio::awaitable<void> waiters(options o, std::size_t w, std::size_t paths);
asio::awaitable<void> cancel(options o, std::size_t w);
/// The bare C client's own cycles, without Asio (bench_floor.cpp).
void floor(const options& o, std::size_t n);

}  // namespace zklock_bench
