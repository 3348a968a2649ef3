// The ticket office of the seed articles: many clients, as coroutines spread over several ZooKeeper
// sessions, buy tickets from a stock kept in a znode. Every purchase happens under one zklock::mutex:
// read the stock, decrement it, write it back *without* a version check. Only the lock keeps the count
// right; without it, two clients would read the same stock and sell the same ticket twice.
//
//   ticket_office [--hosts HOSTS] [--sessions N] [--clients N] [--tickets N] [--path ZNODE]
//
// Without --hosts it starts a local ZooKeeper (zklock::testing::server) and stops it at the end.
// Exit status 0 only if no ticket was oversold, the final stock is 0 and exactly --tickets were sold.
#include <zklock/mutex.hpp>
#include <zklock/session.hpp>
#include <zklock/testing/server.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

struct options {
    std::string hosts;  // empty: start a local ZooKeeper
    int sessions = 4;
    int clients = 50;   // per session
    int tickets = 5000;  // ~10-20 s on 2 cores with a ZooKeeper fsync of ~2 ms
    std::string path = "/zklock-demo/ticket-office";
};

[[noreturn]] void usage(int code)
{
    std::cerr << "usage: ticket_office [--hosts HOSTS] [--sessions N] [--clients N (per session)] [--tickets N]"
                 " [--path ZNODE]\n";
    std::exit(code);
}

options parse(int argc, char** argv)
{
    options o;
    for (int i = 1; i < argc; ++i) {
        std::string_view a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) usage(64);
            return argv[++i];
        };
        auto number = [&]() {
            const std::string v = next();
            char* end = nullptr;
            const long n = std::strtol(v.c_str(), &end, 10);
            if (v.empty() || *end != '\0' || n < 1 || n > 10'000'000) usage(64);
            return static_cast<int>(n);
        };
        if (a == "--hosts") o.hosts = next();
        else if (a == "--sessions") o.sessions = number();
        else if (a == "--clients") o.clients = number();
        else if (a == "--tickets") o.tickets = number();
        else if (a == "--path") o.path = next();
        else if (a == "-h" || a == "--help") usage(0);
        else usage(64);
    }
    return o;
}

/// What the whole office saw; everything runs on one thread, so plain fields are enough.
struct office {
    int initial = 0;
    int sold = 0;
    int turned_away = 0;
    int oversold = 0;                        // a ticket sold twice, or a stock that went below zero
    std::vector<int> sold_count;             // per ticket number (the stock value it was sold at)
    std::vector<double> handoffs_ms;         // release by one holder -> acquire by the next
    std::vector<double> remote_handoffs_ms;  // the same, when the lock changed nodes (went through ZooKeeper)
    std::string last_node;
    std::optional<clock_type::time_point> last_release;
    std::uint64_t acquisitions = 0;
    int clients = 0;
    int clients_done = 0;
    clock_type::time_point finished;         // when the last client went home
    asio::steady_timer* progress = nullptr;  // woken early when the last client went home
    std::string failure;                      // first error, if any
};

/// One client: buys tickets, one per lock tenure, until it finds the stock at 0.
asio::awaitable<void> client(zklock::session& s, std::string lock_path, std::string stock_path, office& o)
{
    zklock::mutex m(s, lock_path);
    for (;;) {
        auto g = co_await m.acquire(asio::use_awaitable);
        const auto now = clock_type::now();
        ++o.acquisitions;
        if (o.last_release) {
            const double ms = std::chrono::duration<double, std::milli>(now - *o.last_release).count();
            o.handoffs_ms.push_back(ms);
            if (g.node() != o.last_node) o.remote_handoffs_ms.push_back(ms);  // another session's node
        }
        o.last_node = g.node();
        o.last_release.reset();  // whoever releases next sets it

        // The critical section: a read-modify-write with no version check; the write is guarded, so it
        // lands only while our lock node exists (a holder that lost the lock cannot oversell).
        auto [data, st] = co_await s.async_get_data(stock_path, asio::use_awaitable);
        const int stock = std::stoi(data);
        const bool sell = stock > 0;
        if (sell) {
            if (++o.sold_count[static_cast<std::size_t>(stock)] > 1) ++o.oversold;  // that ticket went twice
            std::string left = std::to_string(stock - 1);
            co_await g.async_guarded_set_data(stock_path, std::move(left), -1, asio::use_awaitable);
            ++o.sold;
        } else {
            if (stock < 0) ++o.oversold;
            ++o.turned_away;  // sold out: this client goes home
        }
        o.last_release = clock_type::now();
        co_await g.release(asio::use_awaitable);
        if (!sell) break;
    }
    if (++o.clients_done == o.clients) {
        o.finished = clock_type::now();
        if (o.progress) o.progress->cancel();
    }
}

/// Creates `path` and its missing ancestors (persistent, empty).
asio::awaitable<void> ensure_path(zklock::session& s, const std::string& path)
{
    for (std::size_t pos = 1;; ++pos) {
        pos = path.find('/', pos);
        std::string part = path.substr(0, pos);
        std::string empty;
        auto [ec, created, st] =
            co_await s.async_create(std::move(part), std::move(empty), zklock::create_mode::persistent,
                                    asio::as_tuple(asio::use_awaitable));
        if (ec && ec != zklock::zk_errc::node_exists) throw boost::system::system_error(ec, "create " + path);
        if (pos == std::string::npos) break;
    }
}

double percentile(std::vector<double> v, double p)
{
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    auto idx = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
    return v[std::min(idx, v.size() - 1)];
}

asio::awaitable<void> run(const options& opt, office& o, int& final_stock)
{
    auto ex = co_await asio::this_coro::executor;
    zklock::session_config cfg;
    cfg.hosts = opt.hosts;

    // Several sessions, as several processes would have: the lock passes between sessions through
    // ZooKeeper, and between the coroutines of one session locally (up to 10 times in a row).
    std::vector<std::unique_ptr<zklock::session>> sessions;
    for (int i = 0; i < opt.sessions; ++i) {
        sessions.push_back(std::make_unique<zklock::session>(ex, cfg));
        co_await sessions.back()->async_connect(asio::use_awaitable);
    }
    auto& admin = *sessions.front();
    const std::string stock_path = opt.path + "/stock";
    const std::string lock_path = opt.path + "/lock";
    co_await ensure_path(admin, stock_path);
    co_await admin.async_set_data(stock_path, std::to_string(opt.tickets), -1, asio::use_awaitable);
    std::cout << "ticket office: " << opt.tickets << " tickets in " << stock_path << ", " << opt.sessions
              << " sessions x " << opt.clients << " clients, lock " << lock_path << std::endl;

    const auto start = clock_type::now();
    o.clients = opt.sessions * opt.clients;
    asio::steady_timer tick(ex);
    o.progress = &tick;
    for (auto& s : sessions)
        for (int c = 0; c < opt.clients; ++c)
            asio::co_spawn(ex, client(*s, lock_path, stock_path, o), [&o](std::exception_ptr e) {
                if (!e || !o.failure.empty()) return;
                if (o.progress) o.progress->cancel();
                try {
                    std::rethrow_exception(e);
                } catch (const std::exception& x) {
                    o.failure = x.what();
                }
            });

    // Progress, once a second, until every client has gone home (or one failed).
    int last_sold = 0;
    auto next = start + 1s;
    while (o.clients_done < o.clients && o.failure.empty()) {
        tick.expires_at(next);
        co_await tick.async_wait(asio::as_tuple(asio::use_awaitable));  // cancelled: all done (or failed)
        next += 1s;
        const double t = std::chrono::duration<double>(clock_type::now() - start).count();
        std::printf("[%5.1f s] sold %d/%d (%3d%%), %d tickets/s, turned away %d\n", t, o.sold, o.initial,
                    o.initial ? 100 * o.sold / o.initial : 100, o.sold - last_sold, o.turned_away);
        std::fflush(stdout);
        last_sold = o.sold;
    }
    if (!o.failure.empty()) throw std::runtime_error(o.failure);
    o.progress = nullptr;
    const double elapsed = std::chrono::duration<double>(o.finished - start).count();

    auto [data, st] = co_await admin.async_get_data(stock_path, asio::use_awaitable);
    final_stock = std::stoi(data);
    for (auto& s : sessions) co_await s->async_close(asio::use_awaitable);

    std::printf("\nsummary\n");
    std::printf("  tickets          %d\n", o.initial);
    std::printf("  sold             %d\n", o.sold);
    std::printf("  turned away      %d\n", o.turned_away);
    std::printf("  oversold         %d\n", o.oversold);
    std::printf("  final stock      %d\n", final_stock);
    std::printf("  elapsed          %.2f s\n", elapsed);
    std::printf("  acquisitions/s   %.0f (%llu acquisitions)\n", static_cast<double>(o.acquisitions) / elapsed,
                static_cast<unsigned long long>(o.acquisitions));
    std::printf("  hand-off p50     %.3f ms\n", percentile(o.handoffs_ms, 50));
    std::printf("  hand-off p99     %.3f ms\n", percentile(o.handoffs_ms, 99));
    std::printf("  hand-off max     %.3f ms\n", percentile(o.handoffs_ms, 100));
    std::printf("  (%zu of the %zu hand-offs went through ZooKeeper: p50 %.3f ms, p99 %.3f ms;\n"
                "   the others passed between coroutines of one session without a round trip)\n",
                o.remote_handoffs_ms.size(), o.handoffs_ms.size(), percentile(o.remote_handoffs_ms, 50),
                percentile(o.remote_handoffs_ms, 99));
}

}  // namespace

int main(int argc, char** argv)
{
    const options opt = parse(argc, argv);
    try {
        // No --hosts: bring our own ZooKeeper (a real server on a free loopback port), as the tests do.
        std::unique_ptr<zklock::testing::server> local;
        options o2 = opt;
        if (o2.hosts.empty()) {
            std::cout << "starting a local ZooKeeper (zklock::testing::server)..." << std::endl;
            local = std::make_unique<zklock::testing::server>();
            o2.hosts = local->connect_string();
            std::cout << "ZooKeeper at " << o2.hosts << std::endl;
        }

        office o;
        o.initial = opt.tickets;
        o.sold_count.assign(static_cast<std::size_t>(opt.tickets) + 1, 0);
        int final_stock = -1;
        bool done = false;
        asio::io_context ioc;
        asio::co_spawn(ioc, run(o2, o, final_stock), [&](std::exception_ptr e) {
            done = true;
            if (e) std::rethrow_exception(e);
        });
        ioc.run();
        if (!done) throw std::runtime_error("the office stopped early");

        const bool ok = o.oversold == 0 && final_stock == 0 && o.sold == o.initial;
        std::printf("  result           %s\n", ok ? "OK: every ticket sold exactly once"
                                                 : "FAILED: the stock and the sales disagree");
        if (local) std::cout << "stopping the local ZooKeeper" << std::endl;
        return ok ? 0 : 1;
    } catch (const std::exception& e) {
        std::cerr << "ticket_office: " << e.what() << "\n";
        return 2;
    }
}
