// The `zklock` command: exit codes, environment, Ctrl-C cleanup, a lost lock, and mutual exclusion among
// 20 concurrent invocations. Runs the built binary (ZKLOCK_BIN) against a ZooKeeper of its own.
#define BOOST_TEST_MODULE zklock_cli_tests
#include "process_util.hpp"

#include <zklock/testing/server.hpp>

#include <algorithm>
#include <memory>
#include <regex>

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
    return args;
}

std::string unique(const std::string& what)
{
    static int n = 0;
    return "/zklock-cli-test/" + what + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

/// Another process holding `path` (a zklock running `sh`) until destroyed; `node()` is its lock node.
class holder {
public:
    holder(const std::string& path, const temp_dir& dir)
        : ready_(dir / ("held-" + std::to_string(++count_))),
          proc_(std::make_unique<process>(zklock_cmd({"--hosts", hosts(), path, "--", "sh", "-c",
                                                      "echo \"$ZKLOCK_NODE\" > '" + ready_ + ".tmp' && mv '" +
                                                          ready_ + ".tmp' '" + ready_ + "' && exec sleep 100"})))
    {
        BOOST_REQUIRE_MESSAGE(eventually([&] { return file_exists(ready_); }), "the holder never got " << path);
        node_ = read_file(ready_);
        node_.erase(node_.find_last_not_of('\n') + 1);
    }
    ~holder() { stop(); }
    void stop()
    {
        if (!proc_) return;
        proc_->signal(SIGTERM);  // zklock forwards it to sleep, then releases
        BOOST_CHECK_EQUAL(proc_->wait_for(20s).value_or(-1), 128 + SIGTERM);
        proc_.reset();
    }
    const std::string& node() const { return node_; }

private:
    static inline int count_ = 0;
    std::string ready_;
    std::unique_ptr<process> proc_;
    std::string node_;
};

std::string basename_of(const std::string& node) { return node.substr(node.rfind('/') + 1); }

}  // namespace

BOOST_AUTO_TEST_CASE(exit_status_is_the_commands)
{
    const auto p = unique("status");
    BOOST_TEST(run(zklock_cmd({"--hosts", hosts(), p, "--", "true"})) == 0);
    BOOST_TEST(run(zklock_cmd({"--hosts", hosts(), p, "--", "sh", "-c", "exit 3"})) == 3);
    BOOST_TEST(run(zklock_cmd({"--hosts", hosts(), "--timeout", "5", p, "--", "false"})) == 1);
    BOOST_TEST(run(zklock_cmd({"--hosts", hosts(), p, "--", "sh", "-c", "kill -KILL $$"})) == 128 + SIGKILL);
    BOOST_TEST(run(zklock_cmd({"--hosts", hosts(), p, "--", "/nonexistent/command"})) == 127);
    // $ZKLOCK_HOSTS is the default for --hosts.
    ::setenv("ZKLOCK_HOSTS", hosts().c_str(), 1);
    BOOST_TEST(run(zklock_cmd({p, "--", "sh", "-c", "exit 4"})) == 4);
    ::unsetenv("ZKLOCK_HOSTS");
    // Every lock node is gone afterwards.
    BOOST_TEST(children(hosts(), p).empty());
}

BOOST_AUTO_TEST_CASE(lock_held_elsewhere_gives_75)
{
    temp_dir dir;
    const auto p = unique("held");
    holder h(p, dir);

    auto t0 = std::chrono::steady_clock::now();
    BOOST_TEST(run(zklock_cmd({"--hosts", hosts(), "--timeout", "0", p, "--", "true"}), 20s) == 75);
    BOOST_TEST((std::chrono::steady_clock::now() - t0) < 5s);

    t0 = std::chrono::steady_clock::now();
    BOOST_TEST(run(zklock_cmd({"--hosts", hosts(), "--timeout", "0.4", p, "--", "true"}), 20s) == 75);
    const auto waited = std::chrono::steady_clock::now() - t0;
    BOOST_TEST(waited >= 400ms);
    BOOST_TEST(waited < 5s);

    // The ones that gave up left nothing behind: only the holder's node remains.
    BOOST_TEST(eventually([&] { return children(hosts(), p) == std::vector<std::string>{basename_of(h.node())}; }));

    // Once the holder is gone, the lock is free again.
    h.stop();
    BOOST_TEST(run(zklock_cmd({"--hosts", hosts(), "--timeout", "0", p, "--", "true"}), 20s) == 0);
}

BOOST_AUTO_TEST_CASE(no_server_gives_69_quickly)
{
    const auto port = free_port();
    const auto t0 = std::chrono::steady_clock::now();
    BOOST_TEST(run(zklock_cmd({"--hosts", "127.0.0.1:" + std::to_string(port), "--timeout", "0.5", "/x", "--", "true"}),
                   30s) == 69);
    BOOST_TEST((std::chrono::steady_clock::now() - t0) < 5s);  // the connect timeout is capped by --timeout (min 2 s)
}

BOOST_AUTO_TEST_CASE(usage_errors_give_64)
{
    temp_dir dir;
    const auto h = hosts();
    const std::vector<std::vector<std::string>> bad = {
        {},
        {"--bogus", "/x", "--", "true"},
        {"--hosts", h, "/x"},                        // no COMMAND
        {"--hosts", h, "/x", "--"},                  // no COMMAND
        {"--hosts", h, "x", "--", "true"},           // relative PATH
        {"--hosts", h, "/x/", "--", "true"},         // trailing slash
        {"--hosts", h, "/", "--", "true"},
        {"--hosts", h, "/a//b", "--", "true"},
        {"--hosts", h, "/a/../b", "--", "true"},
        {"--hosts", h, "--timeout", "soon", "/x", "--", "true"},
        {"--hosts", h, "--timeout", "-1", "/x", "--", "true"},
        {"--hosts", h, "--timeout"},
        {"--hosts"},
    };
    for (const auto& args : bad) {
        const auto err = dir / "stderr";
        BOOST_TEST_CONTEXT("zklock " << [&] {
            std::string s;
            for (const auto& a : args) s += a + " ";
            return s;
        }()) {
            BOOST_TEST(run(zklock_cmd(args), 20s, {}, err) == 64);
            BOOST_TEST(read_file(err).find("usage: zklock") != std::string::npos);
        }
    }
    // --help documents the options, the environment and the exit codes.
    const auto out = dir / "help";
    BOOST_TEST(run(zklock_cmd({"--help"}), 20s, out) == 0);
    const auto help = read_file(out);
    for (const char* word : {"--hosts", "--timeout", "ZKLOCK_HOSTS", "ZKLOCK_FENCING_TOKEN", "ZKLOCK_NODE", "64", "69",
                             "70", "75", "130"})
        BOOST_TEST(help.find(word) != std::string::npos, "--help mentions " << word);
}

BOOST_AUTO_TEST_CASE(command_sees_token_and_node)
{
    temp_dir dir;
    const auto p = unique("env");
    const auto file = dir / "env";
    for (int i = 0; i < 2; ++i) {
        BOOST_REQUIRE(run(zklock_cmd({"--hosts", hosts(), p, "--", "sh", "-c",
                                      "printf '%s\\n%s\\n' \"$ZKLOCK_FENCING_TOKEN\" \"$ZKLOCK_NODE\" > '" + file +
                                          "-" + std::to_string(i) + "'"})) == 0);
    }
    std::int64_t last_zxid = 0;
    for (int i = 0; i < 2; ++i) {
        std::istringstream in(read_file(file + "-" + std::to_string(i)));
        std::string token, node;
        std::getline(in, token);
        std::getline(in, node);
        BOOST_TEST_CONTEXT("run " << i << ": token '" << token << "', node '" << node << "'") {
            std::smatch m;
            BOOST_REQUIRE(std::regex_match(token, m, std::regex("([0-9]+)\\.([0-9]+)")));
            const auto zxid = std::stoll(m[1].str());
            BOOST_TEST(zxid > 0);
            BOOST_TEST(zxid > last_zxid);  // a later holder has a greater token
            last_zxid = zxid;
            BOOST_TEST(node.rfind(p + "/", 0) == 0);
            BOOST_TEST(node.find("-lock-") != std::string::npos);
        }
    }
}

BOOST_AUTO_TEST_CASE(interrupt_while_waiting_leaves_no_node)
{
    temp_dir dir;
    const auto p = unique("ctrl-c");
    holder h(p, dir);
    for (int sig : {SIGINT, SIGTERM}) {
        BOOST_TEST_CONTEXT("signal " << sig) {
            process waiter(zklock_cmd({"--hosts", hosts(), p, "--", "sleep", "100"}));
            // Its node appears behind the holder's.
            BOOST_REQUIRE(eventually([&] { return children(hosts(), p).size() == 2; }));
            waiter.signal(sig);
            BOOST_TEST(waiter.wait_for(20s).value_or(-1) == 128 + sig);
            // Nothing of it is left: only the holder's node (zklock closed its session before exiting).
            BOOST_TEST(children(hosts(), p) == std::vector<std::string>{basename_of(h.node())});
        }
    }
}

BOOST_AUTO_TEST_CASE(signals_are_forwarded_to_the_command)
{
    temp_dir dir;
    const auto p = unique("forward");
    const auto ready = dir / "ready";
    const auto got = dir / "got";
    process z(zklock_cmd({"--hosts", hosts(), p, "--", "sh", "-c",
                          "trap 'echo INT > \"" + got + "\"; exit 7' INT; touch '" + ready + "'; while :; do sleep 0.05; done"}));
    BOOST_REQUIRE(eventually([&] { return file_exists(ready); }));
    z.signal(SIGINT);
    BOOST_TEST(z.wait_for(20s).value_or(-1) == 7);
    BOOST_TEST(read_file(got) == "INT\n");
    BOOST_TEST(children(hosts(), p).empty());
}

BOOST_AUTO_TEST_CASE(lost_lock_terminates_the_command)
{
    temp_dir dir;
    const auto p = unique("lost");
    const auto nodefile = dir / "node";
    const auto err = dir / "stderr";
    process z(zklock_cmd({"--hosts", hosts(), p, "--", "sh", "-c",
                          "echo \"$ZKLOCK_NODE\" > '" + nodefile + ".tmp'; mv '" + nodefile + ".tmp' '" + nodefile +
                              "'; exec sleep 100"}),
              {}, err);
    BOOST_REQUIRE(eventually([&] { return file_exists(nodefile); }));
    auto node = read_file(nodefile);
    node.erase(node.find_last_not_of('\n') + 1);
    remove_node(hosts(), node);  // someone else deletes our lock node: the lock is lost
    BOOST_TEST(z.wait_for(20s).value_or(-1) == 70);
    BOOST_TEST(read_file(err).find("lost") != std::string::npos, "stderr: " << read_file(err));
}

BOOST_AUTO_TEST_CASE(twenty_concurrent_invocations_exclude_each_other)
{
    temp_dir dir;
    const auto p = unique("mutex");
    const auto counter = dir / "counter";
    const auto inuse = dir / "inuse";
    const auto clashes = dir / "clashes";
    std::ofstream(counter) << "0\n";
    // The critical section: claim an "in use" marker that must not exist (noclobber), then a
    // read-modify-write of the counter with a gap that invites a lost update.
    const std::string section = "set -o noclobber; "
                                "if ! : > '" + inuse + "' 2>/dev/null; then echo clash >> '" + clashes + "'; fi; "
                                "n=$(cat '" + counter + "'); sleep 0.05; echo $((n + 1)) >| '" + counter + "'; "
                                "rm -f '" + inuse + "'";
    std::vector<std::unique_ptr<process>> procs;
    for (int i = 0; i < 20; ++i)
        procs.push_back(std::make_unique<process>(zklock_cmd({"--hosts", hosts(), p, "--", "sh", "-c", section})));
    for (auto& pr : procs) BOOST_TEST(pr->wait_for(120s).value_or(-1) == 0);
    BOOST_TEST(read_file(counter) == "20\n");
    BOOST_TEST(!file_exists(clashes), "critical sections overlapped: " << read_file(clashes));
    BOOST_TEST(children(hosts(), p).empty());
}
