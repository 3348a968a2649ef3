// A connection limit across processes: a backend (a database, a licensed API) accepts at most N
// connections from all its clients together, so every worker, in whichever process, takes a permit of
// one zklock::semaphore of N before it connects and gives the permit back when it disconnects.
//
//   connection_limit [--hosts HOSTS] [--limit N] [--sessions N] [--workers N] [--jobs N] [--use-ms MS]
//                    [--timeout-ms MS] [--attempts N] [--maintenance-ms MS] [--path ZNODE]
//
// Each session stands for a process with --workers coroutines doing --jobs jobs each; a job connects,
// holds the connection --use-ms, disconnects. The backend is simulated in this process: it counts open
// connections, so the program can show that never more than N were open at once. Halfway through, a
// maintenance job (another process: say a bulk reindex) takes all N permits at once with acquire_many,
// all or none, and uses all N connections in parallel; workers whose acquire times out meanwhile retry.
// Without --hosts it starts a local ZooKeeper. Exit status 0 only if the limit held and every job ran.
#include <zklock/semaphore.hpp>
#include <zklock/session.hpp>
#include <zklock/testing/server.hpp>
#include <zklock/while_held.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);  // errors as values

struct options {
    std::string hosts;  // empty: start a local ZooKeeper
    int limit = 3, sessions = 3, workers = 4, jobs = 10, attempts = 5;
    ms use{20}, timeout{250}, maintenance{400};
    std::string path = "/zklock-demo/backend-connections";
};

[[noreturn]] void usage(int code)
{
    std::cerr << "usage: connection_limit [--hosts HOSTS] [--limit N] [--sessions N] [--workers N (per session)]"
                 " [--jobs N (per worker)] [--use-ms MS] [--timeout-ms MS] [--attempts N] [--maintenance-ms MS]"
                 " [--path ZNODE]\n";
    std::exit(code);
}

options parse(int argc, char** argv)
{
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        auto number = [&](long min) {
            if (i + 1 >= argc) usage(64);
            char* end = nullptr;
            const long n = std::strtol(argv[++i], &end, 10);
            if (*argv[i] == '\0' || *end != '\0' || n < min || n > 1'000'000) usage(64);
            return static_cast<int>(n);
        };
        if (a == "--hosts" && i + 1 < argc) o.hosts = argv[++i];
        else if (a == "--path" && i + 1 < argc) o.path = argv[++i];
        else if (a == "--limit") o.limit = number(1);
        else if (a == "--sessions") o.sessions = number(1);
        else if (a == "--workers") o.workers = number(1);
        else if (a == "--jobs") o.jobs = number(1);
        else if (a == "--attempts") o.attempts = number(1);
        else if (a == "--use-ms") o.use = ms(number(0));
        else if (a == "--timeout-ms") o.timeout = ms(number(0));
        else if (a == "--maintenance-ms") o.maintenance = ms(number(0));
        else if (a == "-h" || a == "--help") usage(0);
        else usage(64);
    }
    return o;
}

asio::awaitable<void> wait(ms t)
{
    asio::steady_timer timer(co_await asio::this_coro::executor, t);
    co_await timer.async_wait(asio::use_awaitable);
}

/// The backend, simulated: it would refuse connection N+1, so it counts them. One thread runs every
/// coroutine, so plain counters are enough.
struct backend {
    int limit = 0, open = 0, most = 0, over_limit = 0;  // connections
    int workers_open = 0, most_workers = 0, uses = 0, timeouts = 0, dropped = 0, open_in_maintenance = -1;
    int half = 0;
    asio::steady_timer* halfway = nullptr;  // woken when half the jobs are done

    /// `n` connections: connect, send the requests, wait for the answers, disconnect.
    asio::awaitable<void> serve(ms t, int n)
    {
        open += n;
        if (open > limit) ++over_limit;  // the backend would have refused one
        most = std::max(most, open);
        co_await wait(t);
        open -= n;
    }
    asio::awaitable<void> serve_job(ms t)
    {
        most_workers = std::max(most_workers, ++workers_open);
        co_await serve(t, 1);
        --workers_open;
        if (++uses == half && halfway) halfway->cancel();
    }
};

/// A worker: for each job, a permit (waiting at most --timeout-ms), the connection, the permit back.
asio::awaitable<void> worker(zklock::session& s, const options& o, backend& b)
{
    zklock::semaphore connections(s, o.path, static_cast<std::size_t>(o.limit));
    for (int job = 0; job < o.jobs; ++job) {
        bool done = false;
        for (int attempt = 1; attempt <= o.attempts && !done; ++attempt) {
            auto [ec, permit] = co_await connections.acquire(o.timeout, use_tuple);
            if (ec == zklock::error::timeout) {
                // All N connections stayed busy for the whole timeout: nothing is held, nothing is left
                // on the server. Try again (a request handler might answer "busy, retry later" instead).
                ++b.timeouts;
                continue;
            }
            if (ec) throw boost::system::system_error(ec, "connection permit");  // the session is in trouble
            // A permit can be lost while held (the session expired): the job runs only while it is held,
            // and is cancelled at a loss (zklock::while_held throws the reason then).
            co_await zklock::while_held(permit, b.serve_job(o.use));
            co_await permit.release(asio::use_awaitable);  // the next waiter may connect
            done = true;
        }
        if (!done) ++b.dropped;  // every attempt timed out: the job fails
    }
}

/// The maintenance job: once the workers are halfway, every permit at once, so nobody is connected.
asio::awaitable<void> maintenance(zklock::session& s, zklock::session& other, const options& o, backend& b,
                                  asio::steady_timer& halfway)
{
    if (b.uses < b.half) co_await halfway.async_wait(use_tuple);  // cancelled at half the jobs
    const auto n = static_cast<std::size_t>(o.limit);
    zklock::semaphore connections(s, o.path, n);
    // All or none: taking the permits one by one, two such jobs could each hold some and wait forever.
    auto all = co_await connections.acquire_many(n, 30s, asio::use_awaitable);
    b.open_in_maintenance = b.open;
    // Meanwhile another process's one look (try_acquire) finds no permit free.
    zklock::semaphore elsewhere(other, o.path, n);
    auto [ec, none] = co_await elsewhere.try_acquire(use_tuple);
    if (ec != zklock::error::timeout) throw std::runtime_error("a permit was free during maintenance");
    std::cout << "maintenance: holds all " << all.size() << " permits; " << b.open << " connections open; "
              << "try_acquire elsewhere: " << ec.message() << std::endl;
    co_await b.serve(o.maintenance, o.limit);  // every connection, in parallel
    for (auto& g : all) co_await g.release(asio::use_awaitable);
}

asio::awaitable<void> run(const options& o, backend& b)
{
    auto ex = co_await asio::this_coro::executor;
    zklock::session_config cfg;
    cfg.hosts = o.hosts;
    std::vector<std::unique_ptr<zklock::session>> sessions;  // the last one is the maintenance job's
    for (int i = 0; i <= o.sessions; ++i) {
        sessions.push_back(std::make_unique<zklock::session>(ex, cfg));
        co_await sessions.back()->async_connect(asio::use_awaitable);
    }

    const int jobs = o.sessions * o.workers * o.jobs;
    b.limit = o.limit;
    b.half = jobs / 2;
    asio::steady_timer halfway(ex, std::chrono::steady_clock::time_point::max());
    b.halfway = &halfway;
    const auto start = std::chrono::steady_clock::now();
    int running = o.sessions * o.workers + 1;
    std::exception_ptr failure;
    asio::steady_timer done(ex, std::chrono::steady_clock::time_point::max());
    auto finished = [&](std::exception_ptr e) {
        if (e && !failure) failure = e;
        if (--running == 0 || e) done.cancel();
    };
    asio::co_spawn(ex, maintenance(*sessions.back(), *sessions.front(), o, b, halfway), finished);
    for (int i = 0; i < o.sessions; ++i)
        for (int w = 0; w < o.workers; ++w)
            asio::co_spawn(ex, worker(*sessions[static_cast<std::size_t>(i)], o, b), finished);
    while (running > 0 && !failure) co_await done.async_wait(use_tuple);
    b.halfway = nullptr;
    if (failure) std::rethrow_exception(failure);
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (auto& s : sessions) co_await s->async_close(use_tuple);

    std::printf("\nsummary\n");
    std::printf("  limit                 %d\n", o.limit);
    std::printf("  jobs                  %d\n", jobs);
    std::printf("  uses                  %d\n", b.uses);
    std::printf("  most inside           %d   (connections open at once, maintenance included)\n", b.most);
    std::printf("  most workers inside   %d\n", b.most_workers);
    std::printf("  over the limit        %d\n", b.over_limit);
    std::printf("  open in maintenance   %d   (worker connections when it had all the permits)\n",
                b.open_in_maintenance);
    std::printf("  timeouts              %d   (acquires that gave up after %lld ms, then retried)\n", b.timeouts,
                static_cast<long long>(o.timeout.count()));
    std::printf("  dropped jobs          %d\n", b.dropped);
    std::printf("  elapsed               %.2f s\n", elapsed);
    const bool ok = b.over_limit == 0 && b.most == o.limit && b.open_in_maintenance == 0 && b.dropped == 0 &&
                    b.uses == jobs;
    std::printf("  result                %s\n", ok ? "OK: never more than the limit" : "FAILED");
    if (!ok) throw std::runtime_error("the figures are wrong");
}

}  // namespace

int main(int argc, char** argv)
{
    options o = parse(argc, argv);
    try {
        std::unique_ptr<zklock::testing::server> local;  // no --hosts: bring our own ZooKeeper
        if (o.hosts.empty()) {
            local = std::make_unique<zklock::testing::server>();
            o.hosts = local->connect_string();
        }
        asio::io_context ioc;
        backend b;
        std::exception_ptr failure;
        asio::co_spawn(ioc, run(o, b), [&](std::exception_ptr e) {
            failure = e;
            ioc.stop();  // coroutines still running after a failure end with the process
        });
        ioc.run();
        if (failure) std::rethrow_exception(failure);
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "connection_limit: " << e.what() << "\n";
        return 1;
    }
}
