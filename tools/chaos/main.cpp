// zklock_chaos: the partition test of all three recipes, as long as asked. A three-member cluster and
// three client machines, each in a network namespace of its own (testing::cluster, partitionable);
// on each machine a session of the library and a stream of `zklock` commands contend on a mutex, a
// read/write lock and a semaphore of two leases, writing fenced counters, while a nemesis cuts links,
// slows them, kills or freezes the leader. Every section is logged; the checker (checker.hpp) then
// judges the log alone: overlaps, late loss warnings, token order, lost updates, orphans, occupancy,
// the longest stall and the recovery after each heal. Needs root.
//
//   zklock_chaos [--seconds N] [--nemesis LIST] [--seed N] [--dir DIR] [--no-cut-short]
//   zklock_chaos check LOG      judge a log (exit 0 if it passes)
//   zklock_chaos section ...    the COMMAND of the zklock commands (commands.hpp)
//
// One line on stdout: "chaos nemesis=... seconds=... " and the checker's summary. Exit 0 only if it passes.
// --no-cut-short makes the library's holders ignore their warning: a self-check that the checker then fails.
#include "checker.hpp"
#include "commands.hpp"
#include "nemesis.hpp"
#include "workload.hpp"

#include <zklock/error.hpp>
#include <zklock/session.hpp>

#include <boost/system/system_error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_future.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <thread>

namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace zklock_chaos;

struct options {
    long seconds = 60;
    std::string nemesis = "mixed";
    std::uint64_t seed = std::random_device{}();
    std::string dir;
    bool cut_short = true;
};

long number(const std::string& s) {
    std::size_t end = 0;
    long v = -1;
    try {
        v = std::stol(s, &end);
    } catch (const std::logic_error&) {
    }
    if (v < 0 || end != s.size()) throw std::invalid_argument(s);
    return v;
}

// Lists what is left under the locks' paths, from a client machine, until nothing is or 30 s passed (nodes
// of expired or closed sessions go when the server ends those), and logs it.
void log_orphans(zklock::testing::cluster& cl, event_log& log, const std::string& hosts) {
    std::thread([&] {
        cl.enter_client(0);
        asio::io_context ioc;
        auto done = asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            zklock::session_config cfg;
            cfg.hosts = hosts;
            cfg.connect_timeout = 30s;
            zklock::session s(ioc, cfg);
            co_await s.async_connect(asio::use_awaitable);
            const std::string paths[] = {mutex_path, rw_path, sem_path + "/leases", sem_path + "/locks"};
            std::map<std::string, std::size_t> left;
            for (auto deadline = std::chrono::steady_clock::now() + 30s;;) {
                co_await s.async_sync("/", asio::use_awaitable);
                std::size_t total = 0;
                for (const auto& p : paths) {
                    auto [ec, names, st] = co_await s.async_get_children(p, asio::as_tuple(asio::use_awaitable));
                    left[p] = ec ? 0 : names.size();  // no_node: nobody ever made it
                    total += left[p];
                }
                if (total == 0 || std::chrono::steady_clock::now() >= deadline) break;
                asio::steady_timer t(ioc, 200ms);
                co_await t.async_wait(asio::use_awaitable);
            }
            for (const auto& [p, n] : left) log.write("orphans " + p + ' ' + std::to_string(n));
            s.close();
        }, asio::use_future);
        ioc.run();
        done.get();
    }).join();
}

int run(const options& o) {
    zklock::testing::server_options so;
    so.tick_ms = 200;  // sessions of 4 s are allowed (2..20 ticks)
    so.partitionable = true;
    zklock::testing::cluster cl(3, so);
    for (int c = 0; c < 3; ++c) cl.add_client();
    const fs::path dir = o.dir.empty() ? fs::temp_directory_path() / ("zklock-chaos-" + std::to_string(::getpid())) : fs::path(o.dir);
    fs::create_directories(dir);
    const std::string log_path = (dir / "events.log").string();
    fs::remove(log_path);
    event_log log(log_path);
    workload w{log, {(dir / "mutex.counter").string(), "mutex"}, {(dir / "rw.counter").string(), "rw"}, cl.connect_string()};
    w.cut_short = o.cut_short;
    log.write("limit sem " + std::to_string(w.sem_limit));

    const std::string self = fs::canonical("/proc/self/exe").string();
    const std::string zklock = (fs::path(self).parent_path() / "zklock").string();
    std::vector<std::thread> machines;
    for (int c = 0; c < 3; ++c) {
        machines.emplace_back([&, c] {
            cl.enter_client(static_cast<std::size_t>(c));
            run_library_machine(w, c, o.seed + static_cast<std::uint64_t>(c));
        });
        command_machine cm{zklock, self, cl.client_namespace(static_cast<std::size_t>(c)), cl.connect_string(),
                           log_path, (dir / "mutex.counter").string(), (dir / "rw.counter").string(),
                           (dir / "commands.out").string(), w.sem_limit, c};
        machines.emplace_back([&w, cm, seed = o.seed * 7 + static_cast<std::uint64_t>(c)] {
            try {
                run_command_machine(cm, seed, w.stop);
            } catch (const std::exception& e) {
                std::fprintf(stderr, "chaos: command machine: %s\n", e.what());
                ++w.errors;
            }
        });
    }
    nemesis nem{cl, log, parse_nemeses(o.nemesis), o.seed, {}, {}};
    std::thread faults([&] { nem.run(); });
    std::this_thread::sleep_for(std::chrono::seconds(o.seconds));  // the run's length, not a synchronization
    nem.stop = true;
    faults.join();
    std::this_thread::sleep_for(10s);  // the workload goes on after the last heal: the recovery is measured
    w.stop = true;
    for (auto& t : machines) t.join();
    log_orphans(cl, log, cl.connect_string());
    log.write("end");

    for (const auto& p : nem.problems) std::fprintf(stderr, "chaos: nemesis: %s\n", p.c_str());
    std::ifstream in(log_path);
    const verdict v = check(in);
    for (const auto& p : v.problems) std::fprintf(stderr, "chaos: %s\n", p.c_str());
    std::fprintf(stderr, "chaos: log %s, acquire errors (timeouts included) %lu; longest stall: %s\n", log_path.c_str(),
                 w.errors.load(), v.longest_stall_at.c_str());
    std::printf("chaos nemesis=%s seconds=%ld seed=%llu %s\n", o.nemesis.c_str(), o.seconds,
                static_cast<unsigned long long>(o.seed), summary(v).c_str());
    std::fflush(stdout);
    if (v.ok() && o.dir.empty()) fs::remove_all(dir);
    return v.ok() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string usage = "usage: zklock_chaos [--seconds N] [--nemesis leader-iso|minority|bridge|client-iso|delay|"
                              "kill|stop|mixed|A,B,...] [--seed N] [--dir DIR] [--no-cut-short]\n"
                              "       zklock_chaos check LOG\n";
    if (argc >= 2 && std::string(argv[1]) == "section") return section_main(argc, argv);
    if (argc == 3 && std::string(argv[1]) == "check") {
        std::ifstream in(argv[2]);
        if (!in) {
            std::fprintf(stderr, "zklock_chaos: cannot read %s\n", argv[2]);
            return 2;
        }
        const verdict v = check(in);
        for (const auto& p : v.problems) std::fprintf(stderr, "chaos: %s\n", p.c_str());
        std::printf("%s\n", summary(v).c_str());
        return v.ok() ? 0 : 1;
    }
    options o;
    try {
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            const bool v = i + 1 < argc;
            if (a == "--seconds" && v) o.seconds = number(argv[++i]);
            else if (a == "--nemesis" && v) o.nemesis = argv[++i];
            else if (a == "--seed" && v) o.seed = static_cast<std::uint64_t>(number(argv[++i]));
            else if (a == "--dir" && v) o.dir = argv[++i];
            else if (a == "--no-cut-short") o.cut_short = false;
            else throw std::invalid_argument(a);
        }
        if (parse_nemeses(o.nemesis).empty()) throw std::invalid_argument(o.nemesis);
    } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "zklock_chaos: bad argument '%s'\n%s", e.what(), usage.c_str());
        return 2;
    }
    std::fprintf(stderr, "chaos: seed=%llu\n", static_cast<unsigned long long>(o.seed));
    try {
        return run(o);
    } catch (const boost::system::system_error& e) {
        if (e.code() != zklock::error::not_supported) throw;
        std::fprintf(stderr, "zklock: skipped: %s\n", e.what());
        return 77;  // ctest's SKIP_RETURN_CODE: not a pass
    } catch (const std::exception& e) {
        std::fprintf(stderr, "zklock_chaos: error: %s\n", e.what());
        return 1;
    }
}
