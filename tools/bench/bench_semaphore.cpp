// zklock_bench semaphore N WORKERS SECTIONS: CuratorLockBench's `semaphore` on zklock::semaphore.
// WORKERS worker coroutines (one thread), each with a session of its own unless --sessions S shares S
// sessions out among them (round robin), take one lease of N, check, and return it, until SECTIONS
// sections have started in total. Within one session a returned lease passes to the next waiting worker
// without a round trip, up to --local-handoff-limit times in a row.
#include "common.hpp"

#include <zklock/semaphore.hpp>

#include <cinttypes>
#include <cstdio>
#include <set>

namespace zklock_bench {

namespace {

struct semaphore_run : worker_run {
    semaphore_run(const asio::any_io_executor& ex, std::size_t n) : worker_run(ex), leases(n) {}
    const std::size_t leases;
    std::size_t inside = 0, max_inside = 0;
    std::size_t violations = 0;     // more than N inside
    std::size_t double_leases = 0;  // a lease node held by two workers at once
    std::set<std::string> held;     // the lease nodes held now
    std::size_t local_grants = 0;   // leases passed within a session (token.local > 0)
};

asio::awaitable<void> lease_worker(std::shared_ptr<semaphore_run> r, zklock::semaphore sem)
{
    while (r->take()) {
        const auto t0 = clk::now();
        auto g = co_await sem.acquire(lock_timeout, asio::use_awaitable);
        r->acquire_us.push_back(micros(clk::now() - t0));
        if (g.token().local > 0) ++r->local_grants;
        const auto node = g.node();
        if (!r->held.insert(node).second) ++r->double_leases;
        const auto in = ++r->inside;
        r->max_inside = std::max(r->max_inside, in);
        if (in > r->leases) ++r->violations;
        co_await r->section();
        --r->inside;
        r->held.erase(node);
        co_await g.release(asio::use_awaitable);
    }
}

}  // namespace

asio::awaitable<void> semaphore(options o, std::size_t leases, std::size_t workers, std::size_t sections)
{
    const auto ex = co_await asio::this_coro::executor;
    auto r = std::make_shared<semaphore_run>(ex, leases);
    co_await r->connect(o, workers);
    // As CuratorLockBench's semaphore: no warm-up, the first acquires create the parents on the clock.
    const auto path = fresh_path();
    const zklock::semaphore_options so{.local_handoff_limit = o.local_handoff_limit, .acl = zklock::open_acl()};
    r->left = static_cast<std::int64_t>(sections);
    r->acquire_us.reserve(sections);
    const auto t0 = clk::now();
    for (std::size_t i = 0; i < workers; ++i)
        spawn_worker(r, lease_worker(r, zklock::semaphore(r->session_of(i), path, leases, so)));
    co_await join_workers(r, "the semaphore run");
    const double secs = seconds(clk::now() - t0);
    std::printf("zklock semaphore leases=%zu workers=%zu sections=%zu sections_per_s=%.0f acquire_p50_us=%" PRId64
                " acquire_p99_us=%" PRId64 " max_inside=%zu violations=%zu sessions=%zu local_grants=%zu"
                " local_handoff_limit=%zu zk_requests=%" PRIu64 " double_leases=%zu\n",
                leases, workers, sections, static_cast<double>(sections) / secs, pct(r->acquire_us, .5),
                pct(r->acquire_us, .99), r->max_inside, r->violations, r->sessions.size(), r->local_grants,
                o.local_handoff_limit, zk_requests(r->sessions), r->double_leases);
    print_library_figures(o, lock_figures(r->sessions), r->acquire_us.size(), pct(r->acquire_us, .5));
    if (r->violations > 0 || r->double_leases > 0)
        throw std::runtime_error("more than " + std::to_string(leases) + " leases held (violations=" +
                                 std::to_string(r->violations) + ", double_leases=" + std::to_string(r->double_leases) +
                                 ")");
}

}  // namespace zklock_bench
