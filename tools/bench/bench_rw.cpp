// zklock_bench rw READERS WRITERS SECTIONS: CuratorLockBench's `rw` on zklock::shared_mutex.
// READERS + WRITERS worker coroutines (one thread), each with a session of its own unless --sessions N
// shares N sessions out among them (round robin, readers first), loop acquire -> check -> release until
// SECTIONS sections have started in total. Readers of one session share one read node, so with
// --sessions they can enter together without a round trip each; writers of one session pass the lock
// locally, both up to --local-handoff-limit grants in a row.
#include "common.hpp"

#include <zklock/shared_mutex.hpp>

#include <cinttypes>
#include <cstdio>

namespace zklock_bench {

namespace {

struct rw_run : worker_run {
    using worker_run::worker_run;
    std::size_t readers_inside = 0, writers_inside = 0, max_readers_inside = 0;
    std::size_t violations = 0;  // a reader beside a writer, or two writers
    std::size_t read_sections = 0, write_sections = 0;
    std::size_t local_grants = 0;  // grants on a node the session already held (token.local > 0)
    // Every writer's token exceeds every token granted before it, and every reader's the last writer's.
    std::size_t token_regressions = 0;
    std::size_t streak = 0, max_streak = 0;  // writer sections in a row: how long readers were kept out
    zklock::fencing_token last_write, newest;
};

asio::awaitable<void> rw_worker(std::shared_ptr<rw_run> r, zklock::shared_mutex l, bool reader)
{
    while (r->take()) {
        const auto t0 = clk::now();
        zklock::guard g;
        if (reader) g = co_await l.acquire_shared(lock_timeout, asio::use_awaitable);
        else g = co_await l.acquire(lock_timeout, asio::use_awaitable);
        r->acquire_us.push_back(micros(clk::now() - t0));
        const auto token = g.token();
        if (token.local > 0) ++r->local_grants;
        if (reader) {
            ++r->read_sections;
            r->streak = 0;
            r->max_readers_inside = std::max(r->max_readers_inside, ++r->readers_inside);
            if (r->writers_inside != 0) ++r->violations;
            if (token <= r->last_write) ++r->token_regressions;
        } else {
            ++r->write_sections;
            if (++r->streak > r->max_streak) r->max_streak = r->streak;
            if (++r->writers_inside != 1 || r->readers_inside != 0) ++r->violations;
            if (token <= r->newest) ++r->token_regressions;
            r->last_write = token;
        }
        r->newest = std::max(r->newest, token);
        co_await r->section();
        --(reader ? r->readers_inside : r->writers_inside);
        co_await g.release(asio::use_awaitable);
    }
}

}  // namespace

asio::awaitable<void> rw(options o, std::size_t readers, std::size_t writers, std::size_t sections)
{
    const auto ex = co_await asio::this_coro::executor;
    auto r = std::make_shared<rw_run>(ex);
    const std::size_t workers = readers + writers;
    co_await r->connect(o, workers);
    // As CuratorLockBench's rw: no warm-up, the first acquires create the parents on the clock.
    const auto path = fresh_path();
    r->left = static_cast<std::int64_t>(sections);
    r->acquire_us.reserve(sections);
    const auto t0 = clk::now();
    for (std::size_t i = 0; i < workers; ++i)
        spawn_worker(r, rw_worker(r, zklock::shared_mutex(r->session_of(i), path, lock_options(o)), i < readers));
    co_await join_workers(r, "the rw run");
    const double secs = seconds(clk::now() - t0);
    std::printf("zklock rw readers=%zu writers=%zu sections=%zu sections_per_s=%.0f acquire_p50_us=%" PRId64
                " acquire_p99_us=%" PRId64 " violations=%zu sessions=%zu read_sections=%zu write_sections=%zu"
                " max_readers_inside=%zu local_grants=%zu local_handoff_limit=%zu linger=%d zk_requests=%" PRIu64
                " token_regressions=%zu max_write_streak=%zu\n",
                readers, writers, sections, static_cast<double>(sections) / secs, pct(r->acquire_us, .5),
                pct(r->acquire_us, .99), r->violations, r->sessions.size(), r->read_sections, r->write_sections,
                r->max_readers_inside, r->local_grants, o.local_handoff_limit, o.linger ? 1 : 0,
                zk_requests(r->sessions), r->token_regressions, r->max_streak);
    print_library_figures(o, lock_figures(r->sessions), r->acquire_us.size(), pct(r->acquire_us, .5));
    if (r->violations > 0 || r->token_regressions > 0)
        throw std::runtime_error("read/write exclusion violated (violations=" + std::to_string(r->violations) +
                                 ", token_regressions=" + std::to_string(r->token_regressions) + ")");
}

}  // namespace zklock_bench
