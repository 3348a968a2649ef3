// The `zklock` command's other lock kinds: --read and --write (Curator's read/write lock) and --limit N
// (a semaphore of N leases). Readers overlap, a writer runs alone, N holders at most, a path of another
// kind refused, bad values refused. Runs the built binary against a ZooKeeper of its own, on loopback.
#include "process_util.hpp"

#include <zklock/testing/server.hpp>

#include <memory>

BOOST_AUTO_TEST_SUITE(zklock_cli_mode_tests)

#ifndef ZKLOCK_BIN
#error "ZKLOCK_BIN must name the zklock executable"
#endif

using namespace tools_test;

namespace {

zklock::testing::server& zk()
{
    static zklock::testing::server s;
    return s;
}

std::string hosts() { return zk().connect_string(); }

std::vector<std::string> zklock_cmd(std::vector<std::string> args)
{
    args.insert(args.begin(), ZKLOCK_BIN);
    args.insert(args.begin() + 1, {"--hosts", hosts()});
    return args;
}

std::string unique(const std::string& what)
{
    static int n = 0;
    return "/zklock-cli-modes/" + what + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

/// A zklock running a COMMAND that marks `mark` (with its $ZKLOCK_NODE) and stays until `go` exists.
class holder {
public:
    holder(std::vector<std::string> lock_args, const std::string& mark, const std::string& go)
        : mark_(mark)
    {
        lock_args.insert(lock_args.end(),
                         {"--", "sh", "-c",
                          "echo \"$ZKLOCK_NODE\" > '" + mark + ".tmp' && mv '" + mark + ".tmp' '" + mark +
                              "' && while [ ! -e '" + go + "' ]; do sleep 0.02; done"});
        proc_ = std::make_unique<process>(zklock_cmd(lock_args));
    }
    bool holding() const { return eventually([&] { return file_exists(mark_); }, 30s); }
    std::string node() const { return read_file(mark_); }
    int finish() { return proc_->wait_for(30s).value_or(-1); }

private:
    std::string mark_;
    std::unique_ptr<process> proc_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(readers_run_together_and_a_writer_runs_alone)
{
    temp_dir dir;
    const auto p = unique("rw");
    const auto go = dir / "go";
    holder r1({"--read", p}, dir / "r1", go), r2({"--read", p}, dir / "r2", go);
    BOOST_TEST(r1.holding());
    BOOST_TEST(r2.holding());  // both readers inside at once
    BOOST_TEST(r1.node().find("__READ__") != std::string::npos);
    BOOST_TEST(run(zklock_cmd({"--write", "--timeout", "0", p, "--", "true"})) == 75);
    BOOST_TEST(run(zklock_cmd({"--read", "--timeout", "0", p, "--", "true"})) == 0);  // a third reader joins
    std::ofstream(go.c_str()) << "go\n";
    BOOST_TEST(r1.finish() == 0);
    BOOST_TEST(r2.finish() == 0);
    // A writer holds alone: readers and writers wait.
    const auto go2 = dir / "go2";
    holder w({"--write", p}, dir / "w", go2);
    BOOST_TEST(w.holding());
    BOOST_TEST(w.node().find("__WRIT__") != std::string::npos);
    BOOST_TEST(run(zklock_cmd({"--read", "--timeout", "0", p, "--", "true"})) == 75);
    BOOST_TEST(run(zklock_cmd({"--write", "--timeout", "0.3", p, "--", "true"})) == 75);
    std::ofstream(go2.c_str()) << "go\n";
    BOOST_TEST(w.finish() == 0);
    BOOST_TEST(eventually([&] { return children(hosts(), p).empty(); }));
}

BOOST_AUTO_TEST_CASE(writers_exclude_each_other)
{
    temp_dir dir;
    const auto p = unique("writers");
    const auto counter = dir / "counter", inuse = dir / "inuse", clashes = dir / "clashes";
    std::ofstream(counter.c_str()) << "0\n";
    const std::string section = "set -o noclobber; "
                                "if ! : > '" + inuse + "' 2>/dev/null; then echo clash >> '" + clashes + "'; fi; "
                                "n=$(cat '" + counter + "'); sleep 0.05; echo $((n + 1)) >| '" + counter + "'; "
                                "rm -f '" + inuse + "'";
    std::vector<std::unique_ptr<process>> procs;
    for (int i = 0; i < 8; ++i) {
        procs.push_back(std::make_unique<process>(zklock_cmd({"--write", p, "--", "sh", "-c", section})));
        // Readers between them: they must never run the section, only wait their turn.
        procs.push_back(std::make_unique<process>(
            zklock_cmd({"--read", p, "--", "sh", "-c", "if [ -e '" + inuse + "' ]; then echo reader >> '" + clashes + "'; fi"})));
    }
    for (auto& pr : procs) BOOST_TEST(pr->wait_for(120s).value_or(-1) == 0);
    BOOST_TEST(read_file(counter) == "8\n");
    BOOST_TEST(!file_exists(clashes), "a writer was not alone: " << read_file(clashes));
    BOOST_TEST(children(hosts(), p).empty());
}

BOOST_AUTO_TEST_CASE(a_limit_of_two_lets_two_in)
{
    temp_dir dir;
    const auto p = unique("limit");
    const auto go = dir / "go";
    holder a({"--limit", "2", p}, dir / "a", go), b({"--limit", "2", p}, dir / "b", go);
    BOOST_TEST(a.holding());
    BOOST_TEST(b.holding());
    BOOST_TEST(a.node().find("/leases/_c_") != std::string::npos);
    BOOST_TEST(run(zklock_cmd({"--limit", "2", "--timeout", "0", p, "--", "true"})) == 75);
    process waiting(zklock_cmd({"--limit", "2", "--timeout", "30", p, "--", "true"}));
    std::ofstream(go.c_str()) << "go\n";
    BOOST_TEST(a.finish() == 0);
    BOOST_TEST(b.finish() == 0);
    BOOST_TEST(waiting.wait_for(30s).value_or(-1) == 0);
    BOOST_TEST(eventually([&] { return children(hosts(), p + "/leases").empty(); }));
}

// zklock's lease nodes record their N (Curator's do not): another N on the same path is warned about.
BOOST_AUTO_TEST_CASE(a_different_limit_is_warned_about)
{
    temp_dir dir;
    const auto p = unique("limits");
    const auto go = dir / "go";
    holder a({"--limit", "2", p}, dir / "a", go);
    BOOST_TEST(a.holding());
    // The N is in the lease node, where `ls --json` shows it.
    const auto listed = dir / "ls";
    BOOST_TEST(run(zklock_cmd({"ls", "--json", p}), 30s, listed) == 0);
    BOOST_TEST(read_file(listed).find("\"role\":\"permit\",\"holds\":true") != std::string::npos, read_file(listed));
    BOOST_TEST(read_file(listed).find("\"max_permits\":2}") != std::string::npos, read_file(listed));
    const auto err = dir / "err";
    BOOST_TEST(run(zklock_cmd({"--limit", "2", "--timeout", "5", p, "--", "true"}), 30s, {}, err) == 0);
    BOOST_TEST(read_file(err).find("warning") == std::string::npos, read_file(err));
    BOOST_TEST(run(zklock_cmd({"--limit", "3", "--timeout", "5", p, "--", "true"}), 30s, {}, err) == 0);
    BOOST_TEST(read_file(err).find("warning: other holders of " + p + " use --limit 2, this one 3") != std::string::npos,
               read_file(err));
    std::ofstream(go.c_str()) << "go\n";
    BOOST_TEST(a.finish() == 0);
    BOOST_TEST(eventually([&] { return children(hosts(), p + "/leases").empty(); }));
}

BOOST_AUTO_TEST_CASE(a_path_of_another_kind_is_refused)
{
    temp_dir dir;
    const auto p = unique("kinds");
    const auto go = dir / "go";
    holder m({p}, dir / "m", go);  // a mutex
    BOOST_TEST(m.holding());
    const auto err = dir / "err";
    BOOST_TEST(run(zklock_cmd({"--read", "--timeout", "5", p, "--", "true"}), 30s, {}, err) == 70);
    BOOST_TEST(read_file(err).find("another kind of lock") != std::string::npos, read_file(err));
    BOOST_TEST(run(zklock_cmd({"--limit", "3", "--timeout", "5", p, "--", "true"}), 30s, {}, err) == 70);
    std::ofstream(go.c_str()) << "go\n";
    BOOST_TEST(m.finish() == 0);
    BOOST_TEST(eventually([&] { return children(hosts(), p).size() <= 2; }));  // the semaphore's containers at most
}

BOOST_AUTO_TEST_CASE(bad_kinds_and_limits_are_usage_errors)
{
    const auto p = unique("bad");
    for (std::vector<std::string> args : {std::vector<std::string>{"--read", "--write"},
                                          {"--limit", "0"}, {"--limit", "-1"}, {"--limit", "two"},
                                          {"--limit", "1000001"}, {"--limit", "2", "--read"}, {"--limit"},
                                          {"--limit=1.5"}}) {
        args.insert(args.end(), {p, "--", "true"});
        BOOST_TEST(run(zklock_cmd(args)) == 64);
    }
    BOOST_TEST(run(zklock_cmd({"--limit=1", p, "--", "true"})) == 0);
}

BOOST_AUTO_TEST_SUITE_END()  // zklock_cli_mode_tests
