// The `zklock` command's lease and the operators' actions: --lease stops COMMAND and exits 70 saying
// "lease expired"; `zklock ls` lists a holder and two waiters with their owners and the lease left;
// `zklock stat` shows the same queue in figures, and both say it as JSON with --json; `zklock revoke`
// writes Curator's request into the holder's node; `zklock break` deletes it, and the holder's loss signal
// stops its COMMAND, but leaves a semaphore waiter's leases. Runs the built binary against a ZooKeeper of
// its own, on loopback.
#include "cli_util.hpp"

#include <zklock/semaphore.hpp>

#include <boost/asio/detached.hpp>

#include <atomic>
#include <regex>
#include <sstream>

#include <unistd.h>

BOOST_AUTO_TEST_SUITE(zklock_cli_admin_tests)

using namespace tools_test;
using namespace cli_test;

namespace {

/// A zklock process holding (or waiting for) `path` with `extra` options, its COMMAND writing its node to
/// a file once it holds and then sleeping; stdout and stderr in files.
struct cli_holder {
    cli_holder(const std::string& path, const temp_dir& dir, const std::vector<std::string>& extra = {})
        : ready(dir / ("ready-" + std::to_string(++count))), err(dir / ("err-" + std::to_string(count)))
    {
        std::vector<std::string> args{"--hosts", hosts()};
        args.insert(args.end(), extra.begin(), extra.end());
        for (std::string a : {path, std::string("--"), std::string("sh"), std::string("-c")}) args.push_back(a);
        args.push_back(write_node_to(ready) + " && exec sleep 100");
        proc = std::make_unique<process>(zklock_cmd(args), std::string{}, err);
    }
    std::string node() const { return node_from(ready); }
    static inline int count = 0;
    std::string ready, err;
    std::unique_ptr<process> proc;
};

std::string hostname()
{
    char h[256] = {};
    ::gethostname(h, sizeof h - 1);
    return h;
}

std::vector<std::string> lines_of(const std::string& text)
{
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

/// Runs `zklock ACTION PATH`: its exit code, stdout and stderr.
struct action_result {
    int code;
    std::string out, err;
};
action_result zklock_action(const std::string& action, const std::string& path, const temp_dir& dir)
{
    static int n = 0;
    const auto out = dir / ("action-out-" + std::to_string(++n)), err = dir / ("action-err-" + std::to_string(n));
    // "ls --json": the action, then its options.
    std::vector<std::string> args{"--hosts", hosts()};
    std::istringstream words(action);
    for (std::string w; words >> w;) args.push_back(w);
    args.push_back(path);
    const int code = run(zklock_cmd(args), 30s, out, err);
    return {code, read_file(out), read_file(err)};
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_lease_that_runs_out_stops_the_command_and_exits_70)
{
    temp_dir dir;
    const auto path = unique("lease");
    const auto t0 = std::chrono::steady_clock::now();
    cli_holder h(path, dir, {"--lease", "1", "--kill-after", "0"});
    const auto node = h.node();
    const auto code = h.proc->wait_for(20s);
    const auto took = std::chrono::steady_clock::now() - t0;
    BOOST_TEST(code.value_or(-1) == 70);
    BOOST_TEST(took >= 1s);
    const auto err = read_file(h.err);
    BOOST_TEST(err.find("lease expired") != std::string::npos, err);
    BOOST_TEST(children(hosts(), path).empty());  // released: nothing left
    // The next one gets it at once.
    BOOST_TEST(run(zklock_cmd({"--hosts", hosts(), "-n", path, "--", "true"}), 20s) == 0);
}

BOOST_AUTO_TEST_CASE(ls_lists_a_holder_and_two_waiters_with_owners)
{
    temp_dir dir;
    const auto path = unique("ls");
    cli_holder held(path, dir, {"--lease", "60"});
    const auto node = held.node();
    cli_holder first(path, dir), second_waiter(path, dir);
    BOOST_TEST_REQUIRE(eventually([&] { return children(hosts(), path).size() == 3; }));
    // The lease line comes with a write after the grant.
    BOOST_TEST_REQUIRE(eventually([&] {
        return get_data(hosts(), node).value_or("").find("lease-until-ms=") != std::string::npos;
    }));
    const auto r = zklock_action("ls", path, dir);
    BOOST_TEST(r.code == 0, r.err);
    const auto l = lines_of(r.out);
    BOOST_TEST_REQUIRE(l.size() == 4u, r.out);
    BOOST_TEST(l[0].find("ROLE") == 0u);
    BOOST_TEST(l[1].find("mutex   HOLDS  " + node + "  " + hostname() + ":") == 0u, l[1]);
    BOOST_TEST(l[1].find(" 5") != std::string::npos, l[1]);  // ~59-60 s of lease left: "59.9 s" or "60 s"
    const auto waiter_owners = std::vector<std::string>{hostname() + ":" + std::to_string(first.proc->pid()),
                                                        hostname() + ":" + std::to_string(second_waiter.proc->pid())};
    BOOST_TEST(l[2].find("WAITS") != std::string::npos);
    BOOST_TEST(l[3].find("WAITS") != std::string::npos);
    // Both waiters are listed with their owner (hostname:pid); which queued first is a race of their starts.
    const bool in_order = l[2].find(waiter_owners[0] + " ") != std::string::npos &&
                          l[3].find(waiter_owners[1] + " ") != std::string::npos;
    const bool swapped = l[2].find(waiter_owners[1] + " ") != std::string::npos &&
                         l[3].find(waiter_owners[0] + " ") != std::string::npos;
    BOOST_TEST((in_order || swapped), r.out);
    BOOST_TEST(l[2].find("  -") != std::string::npos);  // no lease for a waiter
    // The same queue in figures, and as JSON, while it stands.
    const auto st = zklock_action("stat", path, dir);
    BOOST_TEST(st.code == 0, st.err);
    BOOST_TEST(st.out.find("holders           1\n") != std::string::npos, st.out);
    BOOST_TEST(st.out.find("waiters           2\n") != std::string::npos, st.out);
    BOOST_TEST(std::regex_search(st.out, std::regex("least lease left  [0-9.]+ s\n")), st.out);
    BOOST_TEST(st.out.find("revoke requested  no\n") != std::string::npos, st.out);
    const auto sj = zklock_action("stat --json", path, dir);
    BOOST_TEST(sj.code == 0, sj.err);
    BOOST_TEST(std::regex_match(sj.out, std::regex("\\{\"path\":\"" + path + "\",\"holders\":1,\"waiters\":2,"
                                                   "\"oldest_hold_ms\":[0-9]+,\"least_lease_left_ms\":[0-9]+,"
                                                   "\"longest_wait_ms\":[0-9]+,\"revoke_requested\":false\\}\n")),
               sj.out);
    const auto lj = zklock_action("ls --json", path, dir);
    BOOST_TEST(lj.code == 0, lj.err);
    const auto objects = lines_of(lj.out);
    BOOST_TEST_REQUIRE(objects.size() == 3u, lj.out);
    BOOST_TEST(objects[0].find("[{\"role\":\"mutex\",\"holds\":true,\"node\":\"" + node + "\",\"owner\":\"" + hostname() +
                               ":") == 0u,
               objects[0]);
    BOOST_TEST(objects[1].find(" {\"role\":\"mutex\",\"holds\":false,") == 0u, objects[1]);
    BOOST_TEST(objects[1].find("\"lease_left_ms\":null") != std::string::npos, objects[1]);
    BOOST_TEST(objects[1].find("\"max_permits\":null}") != std::string::npos, objects[1]);  // a mutex's node
    BOOST_TEST(objects[2].back() == ']');

    first.proc.reset();  // killed: its session's node goes when the server notices (or at close)
    second_waiter.proc.reset();
    held.proc->signal(SIGTERM);
    BOOST_TEST(held.proc->wait_for(20s).value_or(-1) == 128 + SIGTERM);

    const auto empty = zklock_action("ls", unique("never-locked"), dir);
    BOOST_TEST(empty.code == 0);
    BOOST_TEST(lines_of(empty.out).size() == 1u);  // the header only
}

BOOST_AUTO_TEST_CASE(revoke_asks_the_holder_and_break_removes_it)
{
    temp_dir dir;
    const auto path = unique("revoke");
    cli_holder held(path, dir);
    const auto node = held.node();
    auto r = zklock_action("revoke", path, dir);
    BOOST_TEST(r.code == 0, r.err);
    BOOST_TEST(r.out.find("asked to let go: " + node) == 0u, r.out);
    BOOST_TEST(get_data(hosts(), node).value_or("") == "__REVOKE__");  // Curator's request, in the node
    BOOST_TEST(held.proc->running());  // cooperative: the command ignores it and keeps the lock

    r = zklock_action("break", path, dir);
    BOOST_TEST(r.code == 0, r.err);
    BOOST_TEST(r.out.find("removed: " + node) == 0u, r.out);
    // The broken holder is told through its loss signal: its COMMAND gets SIGTERM, zklock exits 70.
    BOOST_TEST(held.proc->wait_for(20s).value_or(-1) == 70);
    const auto err = read_file(held.err);
    BOOST_TEST(err.find("lost") != std::string::npos, err);
    BOOST_TEST(children(hosts(), path).empty());

    r = zklock_action("break", path, dir);  // nobody holds it now
    BOOST_TEST(r.code == 1);
    BOOST_TEST(r.err.find("nobody holds") != std::string::npos, r.err);
    BOOST_TEST(zklock_action("revoke", path, dir).code == 1);
}

// --on-revoke release: a revocation stops COMMAND's job as a loss would, and zklock exits 70 saying "revoked".
// --on-revoke signal: the job gets SIGUSR1, and COMMAND decides (here it stops with its own status).
BOOST_AUTO_TEST_CASE(on_revoke_release_stops_the_command_and_signal_tells_it)
{
    temp_dir dir;
    const auto p1 = unique("on-revoke-release");
    cli_holder released(p1, dir, {"--on-revoke", "release"});
    released.node();  // it holds
    auto r = zklock_action("revoke", p1, dir);
    BOOST_TEST(r.code == 0, r.err);
    BOOST_TEST(released.proc->wait_for(20s).value_or(-1) == 70);
    const auto err = read_file(released.err);
    BOOST_TEST(err.find("revoked") != std::string::npos, err);
    BOOST_TEST(children(hosts(), p1).empty());

    const auto p2 = unique("on-revoke-signal");
    const auto ready = dir / "signal-ready", got = dir / "got";
    process told(zklock_cmd({"--hosts", hosts(), "--on-revoke", "signal", "-c",
                             "trap 'echo USR1 > \"" + got + "\"; exit 3' USR1; " + write_node_to(ready) +
                                 "; while :; do sleep 0.05; done",
                             p2}));
    node_from(ready);
    r = zklock_action("revoke", p2, dir);
    BOOST_TEST(r.code == 0, r.err);
    BOOST_TEST(told.wait_for(20s).value_or(-1) == 3);  // COMMAND's own status: it chose to stop
    BOOST_TEST(read_file(got) == "USR1\n");
    BOOST_TEST(children(hosts(), p2).empty());
}

// A semaphore of 2 leases, one held by a zklock command, and this process waiting for both (acquire_many):
// its two lease nodes wait for room. `ls` lists them as waiting, `break` removes the holder's lease only,
// and the waiter is then granted the two nodes it made.
BOOST_AUTO_TEST_CASE(break_leaves_the_leases_of_an_acquire_many_waiter)
{
    temp_dir dir;
    const auto path = unique("break-many");
    cli_holder held(path, dir, {"--limit", "2"});
    const auto node = held.node();

    asio::io_context ioc;
    zklock::session_config cfg;
    cfg.hosts = hosts();
    zklock::session s(ioc, cfg);
    std::optional<zklock::semaphore> sem;
    std::vector<std::string> granted;  // written on ioc's thread, read after `done`
    std::atomic<bool> done{false};
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
        if (auto [ec] = co_await s.async_connect(asio::as_tuple(asio::use_awaitable)); !ec) {
            sem.emplace(s, path, 2);
            auto [aec, leases] = co_await sem->acquire_many(2, 60s, asio::as_tuple(asio::use_awaitable));
            for (auto& l : leases) granted.push_back(l.node());
            for (auto& l : leases) co_await l.release(asio::as_tuple(asio::use_awaitable));
            sem.reset();
        }
        done = true;
        co_await s.async_close(asio::as_tuple(asio::use_awaitable));
    }, asio::detached);
    std::thread waiter([&] { ioc.run(); });

    BOOST_TEST(eventually([&] { return children(hosts(), path + "/leases").size() == 3; }));
    const auto ls = zklock_action("ls", path, dir);
    BOOST_TEST(ls.code == 0, ls.err);
    const auto l = lines_of(ls.out);
    std::vector<std::string> waiting;
    if (l.size() == 5u) {
        BOOST_TEST(l[1].find("permit  HOLDS  " + node + "  ") == 0u, l[1]);
        for (const std::size_t i : {2u, 3u}) {
            BOOST_TEST(l[i].find("permit  WAITS  " + path + "/leases/") == 0u, l[i]);
            waiting.push_back(l[i].substr(15, l[i].find("  ", 15) - 15));
        }
        BOOST_TEST(l[4].find("waiter  WAITS  " + path + "/locks/") == 0u, l[4]);
    } else {
        BOOST_TEST(l.size() == 5u, ls.out);
    }

    const auto r = zklock_action("break", path, dir);
    BOOST_TEST(r.code == 0, r.err);
    BOOST_TEST(r.out.find("removed: " + node) == 0u, r.out);
    BOOST_TEST(lines_of(r.out).size() == 1u, r.out);  // the holder's lease, and nothing of the waiter's
    BOOST_TEST(held.proc->wait_for(20s).value_or(-1) == 70);
    BOOST_TEST(eventually([&] { return done.load(); }));
    if (!done) asio::post(ioc, [&] { s.close(); });
    waiter.join();
    BOOST_TEST(granted == waiting);
}

BOOST_AUTO_TEST_CASE(bad_actions_and_leases_are_usage_errors)
{
    temp_dir dir;
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"ls"}, {"ls", "/a", "extra"}, {"break", "relative"}, {"revoke", "/a", "--", "true"},
             {"-c", "true", "ls", "/a"}, {"--lease", "0", "/a", "--", "true"}, {"--lease", "abc", "/a", "--", "true"},
             {"--lease", "-1", "/a", "--", "true"}, {"--lease"}, {"--on-revoke"}, {"--on-revoke", "stop", "/a", "--", "true"},
             {"--on-revoke", "signal", "/a"}, {"--on-revoke", "release", "ls", "/a"},
             {"--on-revoke", "release", "elect", "/a", "--", "true"}}) {
        std::vector<std::string> argv{"--hosts", hosts()};
        argv.insert(argv.end(), args.begin(), args.end());
        const auto err = dir / "usage-err";
        BOOST_TEST(run(zklock_cmd(argv), 20s, {}, err) == 64, args.front() << " " << (args.size() > 1 ? args[1] : ""));
        BOOST_TEST(read_file(err).find("zklock: ") == 0u);
    }
}

BOOST_AUTO_TEST_SUITE_END()  // zklock_cli_admin_tests
