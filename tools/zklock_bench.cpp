// zklock_bench: zklock's side of the peer lock benchmarks (/work/shared/peers, performance.md §7).
// Each scenario prints one key=value line with the keys CuratorLockBench and kazoo_lock_bench.py print,
// so that a script can divide one line by the other; scripts/bench.sh runs them all on one server.
//
//   zklock_bench [--hosts HOSTS] [--local-handoff-limit N] [--linger] [--sessions N] [--hold-us US] [--[no-]stats] SCENARIO ARGS...
//     uncontended N      one session, N sequential acquire/release cycles on one path
//     contended S T K    S sessions x T coroutines (one thread), K critical sections in total
//     waiters W [PATHS]  W coroutines queue behind held locks on PATHS paths (default 1), then drain (bench/bench_scale.cpp)
//     independent T K    one session, T coroutines each cycling on its own path, K cycles in total (bench/bench_scale.cpp)
//     dropped N          as uncontended, but each guard is dropped: its release runs in the background
//     cancel W           W coroutines queue behind a held lock, then each is cancelled, in random order
//     rw R W K           R readers and W writers (a session each) on one shared_mutex, K sections (bench/bench_rw.cpp)
//     semaphore N T K    T workers (a session each) on one semaphore of N leases, K sections (bench/bench_semaphore.cpp)
//     floor N            the bare C client, no recipe: N serial create+delete cycles, such cycles on 32
//                        paths at once, N multi cycles and N hand-offs between 4 sessions
//                        (bench/bench_floor.cpp): the floor of a lock cycle and of a hand-off
//     serve [SERVERS]    start a ZooKeeper server (SERVERS >= 3: an ensemble on loopback), print its connect
//                        string, run until stdin closes or SIGTERM
// --sessions N runs rw's and semaphore's workers on N sessions instead (their local sharing); --hold-us US
// keeps their sections open that long (default: the peers' empty sections, one turn of the event loop);
// --linger is the mutex's and shared_mutex's; --local-handoff-limit applies to every recipe. --no-stats turns
// the sessions' lock statistics off (session_config::lock_statistics), to measure what counting costs
// (--stats: on, the default).
//
// Without --hosts a scenario starts its own server (zklock::testing::server) and stops it at the end.
#include "bench/common.hpp"

#include <zklock/testing/server.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <optional>

namespace {

using namespace zklock_bench;

std::size_t count_arg(const std::string& s)
{
    std::size_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size()) throw usage_error("not a count: '" + s + "'");
    return v;
}

options parse(int argc, char** argv)
{
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--hosts" && has_value) o.hosts = argv[++i];
        else if (a == "--local-handoff-limit" && has_value) o.local_handoff_limit = count_arg(argv[++i]);
        else if (a == "--linger") o.linger = true;
        else if (a == "--sessions" && has_value) o.sessions = count_arg(argv[++i]);
        else if (a == "--hold-us" && has_value) o.hold_us = count_arg(argv[++i]);
        else if (a == "--no-stats") o.lock_statistics = false;
        else if (a == "--stats") o.lock_statistics = true;  // the default, named for scripts/bench.sh's pairs
        else if (a.starts_with("--")) throw usage_error("unknown option or missing value: " + a);
        else o.args.push_back(a);
    }
    if (o.args.empty()) throw usage_error("no scenario");
    return o;
}

zklock::testing::server_options server_options()
{
    zklock::testing::server_options so;
    so.tick_ms = 2000;  // sessions may last 2..20 ticks: ZooKeeper's default 2 s tick lets 30 s through
    so.jvm_options.clear();  // a measured server runs the JVM's optimising compiler, as in production
    return so;
}

// --- uncontended N --------------------------------------------------------------------------------
asio::awaitable<void> uncontended(options o, std::size_t n)
{
    auto s = co_await connected_session(o);
    zklock::mutex m(s, fresh_path(), lock_options(o));
    {  // Warm up: the first acquire also creates the parent nodes, which is not what we measure.
        auto g = co_await m.acquire(lock_timeout, asio::use_awaitable);
        co_await g.release(asio::use_awaitable);
    }
    const auto warmed_up = s.stats().locks;
    std::vector<std::int64_t> acq, rel;
    acq.reserve(n);
    rel.reserve(n);
    const auto t0 = clk::now();
    for (std::size_t i = 0; i < n; ++i) {
        const auto a = clk::now();
        auto g = co_await m.acquire(lock_timeout, asio::use_awaitable);
        const auto b = clk::now();
        co_await g.release(asio::use_awaitable);
        const auto e = clk::now();
        acq.push_back(micros(b - a));
        rel.push_back(micros(e - b));
    }
    const double secs = seconds(clk::now() - t0);
    std::printf("zklock uncontended cycles=%zu cycles_per_s=%.0f acquire_p50_us=%" PRId64 " acquire_p99_us=%" PRId64
                " release_p50_us=%" PRId64 " linger=%d\n",
                n, static_cast<double>(n) / secs, pct(acq, .5), pct(acq, .99), pct(rel, .5), o.linger ? 1 : 0);
    print_library_figures(o, since(s.stats().locks, warmed_up), n, pct(acq, .5));
}

// --- contended S T K ------------------------------------------------------------------------------
struct contended_run : worker_run {  // `left` counts down as the peers' contended does: K + S*T sections
    using worker_run::worker_run;
    bool in_use = false;
    std::optional<clk::time_point> last_release;
    std::vector<std::int64_t> handoff;
    std::size_t violations = 0;
    std::uint64_t acquired = 0;
    std::size_t token_regressions = 0;  // a later holder with a smaller fencing token
    zklock::fencing_token last_token;
};

// One contender: the peers' loop (a thread there, a coroutine here) with its own mutex object.
asio::awaitable<void> contend(std::shared_ptr<contended_run> r, zklock::mutex m)
{
    const auto ex = co_await asio::this_coro::executor;
    for (bool stop = false; !stop;) {
        auto g = co_await m.acquire(lock_timeout, asio::use_awaitable);
        const auto entry = clk::now();
        ++r->acquired;
        if (r->last_release) r->handoff.push_back(micros(entry - *r->last_release));
        stop = r->left-- <= 0;
        if (r->in_use) ++r->violations;
        if (g.token() <= r->last_token) ++r->token_regressions;
        r->last_token = g.token();
        r->in_use = true;
        // Every contender shares this thread: a section without a suspension could never overlap another,
        // whatever the lock does, and the flag would prove nothing. Let all ready completions run first.
        co_await asio::post(ex, asio::use_awaitable);
        r->in_use = false;
        r->last_release = clk::now();
        co_await g.release(asio::use_awaitable);
    }
}

asio::awaitable<void> contended(options o, std::size_t sessions, std::size_t threads, std::size_t sections)
{
    const auto ex = co_await asio::this_coro::executor;
    auto r = std::make_shared<contended_run>(ex);
    for (std::size_t i = 0; i < sessions; ++i) {
        r->sessions.push_back(make_session(ex, o));
        co_await r->sessions.back().async_connect(asio::use_awaitable);
    }
    const auto path = fresh_path();
    // Create the parent nodes before the clock starts, as the peers do, and let every session check its
    // permissions there (once per directory and session): else the first session would run alone for
    // that round trip, at local speed, and the figure would not be one of contention.
    for (auto& s : r->sessions) {
        zklock::mutex m(s, path, lock_options(o));
        auto g = co_await m.acquire(lock_timeout, asio::use_awaitable);
        co_await g.release(asio::use_awaitable);
    }
    const auto warmed_up = lock_figures(r->sessions);
    r->left = static_cast<std::int64_t>(sections);
    const auto t0 = clk::now();
    for (auto& s : r->sessions)
        for (std::size_t j = 0; j < threads; ++j) spawn_worker(r, contend(r, zklock::mutex(s, path, lock_options(o))));
    co_await join_workers(r, "the contended run");
    const double secs = seconds(clk::now() - t0);
    const std::uint64_t requests = zk_requests(r->sessions);
    std::printf("zklock contended sessions=%zu threads=%zu sections=%zu sections_per_s=%.0f handoff_p50_us=%" PRId64
                " handoff_p99_us=%" PRId64 " violations=%zu local_handoff_limit=%zu zk_requests=%" PRIu64
                " token_regressions=%zu\n",
                sessions, threads, sections, static_cast<double>(sections) / secs, pct(r->handoff, .5),
                pct(r->handoff, .99), r->violations, o.local_handoff_limit, requests, r->token_regressions);
    print_library_figures(o, since(lock_figures(r->sessions), warmed_up), r->acquired, -1);
    if (r->violations > 0 || r->token_regressions > 0)
        throw std::runtime_error("mutual exclusion violated (violations=" + std::to_string(r->violations) +
                                 ", token_regressions=" + std::to_string(r->token_regressions) + ")");
}

// --- serve ----------------------------------------------------------------------------------------
// One server (or one ensemble of `members` on loopback) for a whole job (scripts/bench.sh), so that every
// implementation is measured on the same one.
int serve(std::size_t members)
{
    std::optional<zklock::testing::server> one;
    std::optional<zklock::testing::cluster> ensemble;
    if (members == 1) one.emplace(server_options());
    else ensemble.emplace(members, server_options());
    // Taken as a signalfd (blocked after the server started, so the JVM does not inherit the mask), so
    // that SIGTERM ends the loop below and the destructor still stops the server and removes its files.
    sigset_t set;
    ::sigemptyset(&set);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaddset(&set, sig);
    ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
    const int sfd = ::signalfd(-1, &set, SFD_CLOEXEC);
    if (sfd < 0) throw std::runtime_error("signalfd failed");
    std::printf("%s\n", (one ? one->connect_string() : ensemble->connect_string()).c_str());
    std::fflush(stdout);
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {sfd, POLLIN, 0}};
    for (;;) {
        if (::poll(fds, 2, -1) < 0) continue;  // EINTR
        if (fds[1].revents) break;
        if (fds[0].revents) {
            char buf[256];
            if (::read(STDIN_FILENO, buf, sizeof buf) <= 0) break;  // stdin closed
        }
    }
    ::close(sfd);
    return 0;
}

// Runs one scenario on a fresh io_context on this thread. run() returns only after the sessions'
// background closes, so nothing outlives the loop.
void run(asio::awaitable<void> scenario)
{
    asio::io_context ioc;
    std::exception_ptr error;
    asio::co_spawn(ioc, std::move(scenario), [&](std::exception_ptr e) { error = e; });
    ioc.run();
    if (error) std::rethrow_exception(error);
}

void expect_args(const options& o, std::size_t n)
{
    if (o.args.size() != n + 1) throw usage_error(o.args[0] + " takes " + std::to_string(n) + " argument(s)");
}

}  // namespace

int main(int argc, char** argv)
{
    try {
        auto o = parse(argc, argv);
        const auto& sc = o.args[0];
        std::vector<std::size_t> n;
        for (std::size_t i = 1; i < o.args.size(); ++i) n.push_back(count_arg(o.args[i]));
        if (sc == "serve") {
            if (o.args.size() > 2 || (n.size() == 1 && n[0] != 1 && n[0] < 3))
                throw usage_error("serve takes the number of servers: 1, or 3 and more for an ensemble");
            return serve(n.empty() ? 1 : n[0]);
        }
        const bool pool = sc == "rw" || sc == "semaphore";  // the scenarios whose workers --sessions shares out
        const bool two = sc == "independent" || sc == "waiters";
        if (sc != "uncontended" && sc != "contended" && sc != "dropped" && sc != "cancel" && sc != "floor" && !two && !pool)
            throw usage_error("unknown scenario " + sc);
        if (sc == "waiters") {
            if (n.empty() || n.size() > 2) throw usage_error("waiters takes W and optionally PATHS");
            if (n.size() == 1) n.push_back(1);
            if (n[1] == 0 || n[1] > n[0]) throw usage_error("waiters needs 1 <= PATHS <= W");
        } else {
            expect_args(o, sc == "contended" || pool ? 3 : two ? 2 : 1);
        }
        if (sc == "independent" && n[0] == 0) throw usage_error("independent needs a coroutine");
        if (sc == "floor" && n[0] == 0) throw usage_error("floor needs a cycle");
        if ((o.sessions > 0 || o.hold_us > 0) && !pool)
            throw usage_error("--sessions and --hold-us are for rw and semaphore");
        if (o.linger && sc == "semaphore") throw usage_error("--linger does not apply to the semaphore");
        if (sc == "rw" && n[0] + n[1] == 0) throw usage_error("rw needs a reader or a writer");
        if (sc == "semaphore" && (n[0] == 0 || n[1] == 0)) throw usage_error("semaphore needs a lease and a worker");
        std::optional<zklock::testing::server> local;  // on the main thread: the JVM dies with it (PDEATHSIG)
        if (o.hosts.empty()) {
            local.emplace(server_options());
            o.hosts = local->connect_string();
        }
        if (sc == "uncontended") run(uncontended(o, n[0]));
        else if (sc == "contended") run(contended(o, n[0], n[1], n[2]));
        else if (sc == "rw") run(zklock_bench::rw(o, n[0], n[1], n[2]));
        else if (sc == "semaphore") run(zklock_bench::semaphore(o, n[0], n[1], n[2]));
        else if (sc == "independent") run(zklock_bench::independent(o, n[0], n[1]));
        else if (sc == "dropped") run(zklock_bench::dropped(o, n[0]));
        else if (sc == "cancel") run(zklock_bench::cancel(o, n[0]));
        else if (sc == "floor") zklock_bench::floor(o, n[0]);
        else run(zklock_bench::waiters(o, n[0], n[1]));
        std::fflush(stdout);
        return 0;
    } catch (const usage_error& e) {
        std::fprintf(stderr,
                     "zklock_bench: %s\nusage: zklock_bench [--hosts HOSTS] [--local-handoff-limit N] [--linger] "
                     "[--sessions N] [--hold-us US] [--[no-]stats] uncontended N | contended SESSIONS THREADS SECTIONS | waiters W [PATHS] | "
                     "rw READERS WRITERS SECTIONS | semaphore LEASES WORKERS SECTIONS | independent THREADS CYCLES | "
                     "dropped N | cancel W | floor N | serve [SERVERS]\n",
                     e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "zklock_bench: error: %s\n", e.what());
        return 1;
    }
}
