// The scale scenarios: many locks at once (independent), releases left to the background (dropped),
// many waiters on one lock or spread over many paths (waiters), and many waiters cancelled (cancel).
#include "common.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <boost/system/system_error.hpp>

#include <sys/resource.h>

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <random>

namespace zklock_bench {

namespace {

long peak_rss_mib()
{
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024;
}

int thread_count()
{
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.starts_with("Threads:")) return std::stoi(line.substr(8));
    return -1;
}

// A countdown of completions on one thread, with the run's deadline; the first failure is kept.
struct completions {
    explicit completions(const asio::any_io_executor& ex) : latch(ex) {}
    std::size_t started = 0, done = 0;
    std::exception_ptr error;
    asio::steady_timer latch;

    void finish(std::exception_ptr e = nullptr)
    {
        if (e && !error) error = e;
        ++done;
        latch.cancel();
    }
    asio::awaitable<void> all(std::size_t n, const char* what)
    {
        co_await wait_until(latch, [&] { return done == n || error; }, what);
        if (error) std::rethrow_exception(error);
    }
};

// Once a handler posted after co_spawn's (or after a batch of initiations) runs, all of them have run.
asio::awaitable<void> until_started(const std::shared_ptr<completions>& r, std::size_t n)
{
    const auto ex = co_await asio::this_coro::executor;
    while (r->started < n) co_await asio::post(ex, asio::use_awaitable);
}

// One coroutine's cycles on its own path, until the run's cycles are used up.
asio::awaitable<void> cycle_own_path(std::shared_ptr<worker_run> r, zklock::mutex m)
{
    while (r->take()) {
        const auto a = clk::now();
        auto g = co_await m.acquire(lock_timeout, asio::use_awaitable);
        r->acquire_us.push_back(micros(clk::now() - a));
        co_await g.release(asio::use_awaitable);
    }
}

asio::awaitable<void> wait_in_line(std::shared_ptr<completions> r, zklock::mutex m)
{
    ++r->started;
    // Untimed, as the peers wait: the run's deadline catches a hang.
    auto g = co_await m.acquire(asio::use_awaitable);
    co_await g.release(asio::use_awaitable);
}

}  // namespace

// --- independent T K: one session, T coroutines, each cycling on a path of its own ----------------
asio::awaitable<void> independent(options o, std::size_t threads, std::size_t cycles)
{
    const auto ex = co_await asio::this_coro::executor;
    auto r = std::make_shared<worker_run>(ex);
    r->sessions.push_back(make_session(ex, o));
    co_await r->sessions.back().async_connect(asio::use_awaitable);
    const auto base = fresh_path();
    std::vector<zklock::mutex> locks;
    for (std::size_t i = 0; i < threads; ++i) {  // the parents exist before the clock starts, as the peers'
        locks.emplace_back(r->sessions.back(), base + "/r" + std::to_string(i), lock_options(o));
        auto g = co_await locks.back().acquire(lock_timeout, asio::use_awaitable);
        co_await g.release(asio::use_awaitable);
    }
    const auto requests0 = zk_requests(r->sessions);
    const auto warmed_up = lock_figures(r->sessions);
    r->left = static_cast<std::int64_t>(cycles);
    const auto t0 = clk::now();
    for (auto& m : locks) spawn_worker(r, cycle_own_path(r, m));
    co_await join_workers(r, "the independent run");
    const double secs = seconds(clk::now() - t0);
    std::printf("zklock independent threads=%zu cycles=%zu cycles_per_s=%.0f acquire_p50_us=%" PRId64
                " acquire_p99_us=%" PRId64 " zk_requests=%" PRIu64 "\n",
                threads, cycles, static_cast<double>(cycles) / secs, pct(r->acquire_us, .5), pct(r->acquire_us, .99),
                zk_requests(r->sessions) - requests0);
    print_library_figures(o, since(lock_figures(r->sessions), warmed_up), r->acquire_us.size(), pct(r->acquire_us, .5));
}

// --- dropped N: uncontended cycles whose guard is dropped, not awaited -----------------------------
// The guard's destructor sends the delete; the next acquire's create follows it in the session's FIFO,
// so the two writes are pipelined and the cycle costs about one round trip.
asio::awaitable<void> dropped(options o, std::size_t n)
{
    auto s = co_await connected_session(o);
    zklock::mutex m(s, fresh_path(), lock_options(o));
    {
        auto g = co_await m.acquire(lock_timeout, asio::use_awaitable);
        co_await g.release(asio::use_awaitable);
    }
    std::vector<std::int64_t> acq;
    acq.reserve(n);
    const auto t0 = clk::now();
    for (std::size_t i = 0; i < n; ++i) {
        const auto a = clk::now();
        auto g = co_await m.acquire(lock_timeout, asio::use_awaitable);
        acq.push_back(micros(clk::now() - a));
    }  // g dropped: released in the background
    // The last delete is still in flight; a final awaited cycle waits for it, and is counted.
    {
        auto g = co_await m.acquire(lock_timeout, asio::use_awaitable);
        co_await g.release(asio::use_awaitable);
    }
    const double secs = seconds(clk::now() - t0);
    std::printf("zklock dropped cycles=%zu cycles_per_s=%.0f acquire_p50_us=%" PRId64 " acquire_p99_us=%" PRId64 "\n",
                n, static_cast<double>(n + 1) / secs, pct(acq, .5), pct(acq, .99));
}

// --- waiters W [PATHS]: W coroutines queue behind held locks (W/PATHS per path), then drain ---------
asio::awaitable<void> waiters(options o, std::size_t w, std::size_t paths)
{
    const auto ex = co_await asio::this_coro::executor;
    auto s = co_await connected_session(o);
    const auto base = fresh_path();
    std::vector<zklock::mutex> locks;  // copies share one local queue per path
    std::vector<zklock::guard> holders;
    for (std::size_t p = 0; p < paths; ++p)
        locks.emplace_back(s, paths == 1 ? base : base + "/p" + std::to_string(p), lock_options(o));
    {  // The holders acquire together (their creates pipelined), before the clock starts.
        auto h = std::make_shared<completions>(ex);
        holders.resize(paths);
        for (std::size_t p = 0; p < paths; ++p)
            locks[p].acquire(lock_timeout, [h, &holders, p](boost::system::error_code ec, zklock::guard g) {
                holders[p] = std::move(g);
                h->finish(ec ? std::make_exception_ptr(boost::system::system_error(ec, "a holder's acquire")) : nullptr);
            });
        co_await h->all(paths, "the holders' acquires");
    }
    auto r = std::make_shared<completions>(ex);
    const auto t0 = clk::now();
    for (std::size_t i = 0; i < w; ++i)
        asio::co_spawn(ex, wait_in_line(r, locks[i % paths]), [r](std::exception_ptr e) { r->finish(e); });
    co_await until_started(r, w);
    const double enqueue = seconds(clk::now() - t0);
    const int threads = thread_count();
    const auto requests0 = s.stats().requests;
    const auto t1 = clk::now();
    for (auto& g : holders) g.release([r](boost::system::error_code ec) {
        if (ec && !r->error) r->error = std::make_exception_ptr(boost::system::system_error(ec, "a holder's release"));
    });
    co_await r->all(w, "the drain");
    const double drain = seconds(clk::now() - t1);
    std::printf("zklock waiters=%zu paths=%zu enqueue_s=%.2f drain_s=%.2f drain_per_s=%.0f rss_mib=%ld threads=%d"
                " drain_zk_requests=%" PRIu64 "\n",
                w, paths, enqueue, drain, static_cast<double>(w) / drain, peak_rss_mib(), threads,
                s.stats().requests - requests0);
}

// --- cancel W: W coroutines queue behind a held lock; each is cancelled, in random order ----------
asio::awaitable<void> cancel(options o, std::size_t w)
{
    const auto ex = co_await asio::this_coro::executor;
    auto s = co_await connected_session(o);
    zklock::mutex m(s, fresh_path(), lock_options(o));
    auto holder = co_await m.acquire(lock_timeout, asio::use_awaitable);
    auto r = std::make_shared<completions>(ex);
    std::vector<asio::cancellation_signal> signals(w);
    std::size_t granted = 0;
    const auto t0 = clk::now();
    for (std::size_t i = 0; i < w; ++i) {
        m.acquire(asio::bind_cancellation_slot(signals[i].slot(), [r, &granted](boost::system::error_code ec, zklock::guard) {
            if (!ec) ++granted;
            else if (ec != asio::error::operation_aborted && !r->error)
                r->error = std::make_exception_ptr(boost::system::system_error(ec, "a waiter's acquire"));
            r->finish();
        }));
        ++r->started;
    }
    co_await asio::post(ex, asio::use_awaitable);  // the acquires are queued
    const double enqueue = seconds(clk::now() - t0);
    std::vector<std::size_t> order(w);
    for (std::size_t i = 0; i < w; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), std::mt19937_64(12345));
    const auto t1 = clk::now();
    for (const auto i : order) signals[i].emit(asio::cancellation_type::terminal);
    co_await r->all(w, "the cancellations");
    const double secs = seconds(clk::now() - t1);
    if (granted != 0) throw std::runtime_error(std::to_string(granted) + " cancelled waiters got the lock");
    co_await holder.release(asio::use_awaitable);
    std::printf("zklock cancel waiters=%zu enqueue_s=%.2f cancel_s=%.2f cancels_per_s=%.0f rss_mib=%ld\n", w, enqueue,
                secs, static_cast<double>(w) / secs, peak_rss_mib());
}

}  // namespace zklock_bench
