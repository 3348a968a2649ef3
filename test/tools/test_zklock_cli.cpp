// The `zklock` command: exit codes, environment, Ctrl-C cleanup, a lost lock (and a COMMAND that ignores
// SIGTERM), a server frozen at the release, a frozen cluster member, bad input of every kind, and mutual
// exclusion among 20 concurrent invocations. Runs the built binary (ZKLOCK_BIN, or $ZKLOCK_TEST_BIN to
// try another build of it) against ZooKeeper servers of its own, on loopback only.
#define BOOST_TEST_MODULE zklock_cli_tests
#include "process_util.hpp"

#include <zklock/testing/server.hpp>

#include <algorithm>
#include <memory>
#include <regex>

#include <sys/stat.h>

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
    const char* other = std::getenv("ZKLOCK_TEST_BIN");
    args.insert(args.begin(), other && *other ? other : ZKLOCK_BIN);
    return args;
}

using clock_type = std::chrono::steady_clock;

double secs(clock_type::duration d) { return std::chrono::duration<double>(d).count(); }

/// The lock node a COMMAND wrote to `file` (echo "$ZKLOCK_NODE"), once it is there.
std::string node_from(const std::string& file)
{
    BOOST_REQUIRE_MESSAGE(eventually([&] { return file_exists(file); }), "COMMAND never wrote " << file);
    auto node = read_file(file);
    node.erase(node.find_last_not_of('\n') + 1);
    return node;
}

/// Shell code that writes $ZKLOCK_NODE to `file` atomically (so that a reader never sees half of it).
std::string write_node_to(const std::string& file)
{
    return "echo \"$ZKLOCK_NODE\" > '" + file + ".tmp' && mv '" + file + ".tmp' '" + file + "'";
}

std::string unique(const std::string& what)
{
    static int n = 0;
    return "/zklock-cli-test/" + what + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

/// Another process holding `path` (a zklock running `sh`) until destroyed; `node()` is its lock node.
class holder {
public:
    holder(const std::string& path, const temp_dir& dir, const std::string& zk_hosts = hosts())
        : ready_(dir / ("held-" + std::to_string(++count_))),
          proc_(std::make_unique<process>(
              zklock_cmd({"--hosts", zk_hosts, path, "--", "sh", "-c", write_node_to(ready_) + " && exec sleep 100"})))
    {
        node_ = node_from(ready_);
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

// Every kind of bad input, each with the exit code it must give and a word of what stderr must say.
// Usage errors (64) are found before any connection; names that must not resolve end in ".invalid"
// (RFC 2606), and the only address is loopback.
BOOST_AUTO_TEST_CASE(bad_input_gives_named_exit_codes)
{
    constexpr int usage = 64, unavailable = 69, tempfail = 75, noexec = 126, notfound = 127;
    temp_dir dir;
    const auto h = hosts();
    const auto nobody = "127.0.0.1:" + std::to_string(free_port());  // nothing listens there
    const auto held = unique("held");
    holder other(held, dir);
    const auto plain_file = dir / "not-executable";
    std::ofstream(plain_file) << "#!/bin/sh\nexit 0\n";
    ::chmod(plain_file.c_str(), 0644);

    struct row {
        std::vector<std::string> args;
        int code;
        std::string err;  // a substring stderr must contain
    };
    const auto cmd = [&](std::string path, std::vector<std::string> more = {}) {
        std::vector<std::string> a{"--hosts", h, std::move(path), "--", "true"};
        a.insert(a.begin(), more.begin(), more.end());
        return a;
    };
    const auto with_hosts = [](std::string hs) {
        return std::vector<std::string>{"--hosts", std::move(hs), "/x", "--", "true"};
    };
    const std::vector<row> rows = {
        // The lock (first: the holder's COMMAND ends after 100 s).
        {cmd(held, {"--timeout", "0"}), tempfail, "locked by someone else"},
        {cmd(held, {"--timeout", "0.3"}), tempfail, "locked by someone else"},
        // Options and arguments.
        {{}, usage, "missing PATH"},
        {{"--bogus", "/x", "--", "true"}, usage, "unknown option '--bogus'"},
        {{"-qv", "/x", "--", "true"}, usage, "unknown option '-qv'"},
        {{"--hosts", h, "/x"}, usage, "missing COMMAND"},
        {{"--hosts", h, "/x", "--"}, usage, "missing COMMAND"},
        {{"--version", "extra"}, usage, "--version takes no other arguments"},
        // PATH.
        {cmd(""), usage, "invalid PATH ''"},
        {cmd("x"), usage, "invalid PATH 'x'"},
        {cmd("/x/"), usage, "invalid PATH '/x/'"},
        {cmd("/"), usage, "invalid PATH '/'"},
        {cmd("//x"), usage, "invalid PATH '//x'"},
        {cmd("/a//b"), usage, "invalid PATH '/a//b'"},
        {cmd("/a/./b"), usage, "invalid PATH '/a/./b'"},
        {cmd("/a/../b"), usage, "invalid PATH '/a/../b'"},
        {cmd("/a/.."), usage, "invalid PATH '/a/..'"},
        {cmd("/a\tb"), usage, "invalid PATH '/a\\x09b'"},
        {cmd("/a\x7f"), usage, "invalid PATH '/a\\x7f'"},
        {cmd("/\xff"), usage, "invalid PATH '/\\xff'"},               // not UTF-8
        {cmd("/a\xc2\x80"), usage, "invalid PATH '/a\\xc2\\x80'"},      // U+0080, a C1 control
        {cmd("/a\xed\xa0\x80"), usage, "invalid PATH '/a\\xed\\xa0\\x80'"},  // a UTF-16 surrogate
        {cmd("/" + std::string(40 * 1024, 'a')), usage, "40961 bytes"},
        // --timeout and --kill-after.
        {cmd("/x", {"--timeout", "-1"}), usage, "invalid --timeout '-1'"},
        {cmd("/x", {"--timeout", "abc"}), usage, "invalid --timeout 'abc'"},
        {cmd("/x", {"--timeout", "nan"}), usage, "invalid --timeout 'nan'"},
        {cmd("/x", {"--timeout", "inf"}), usage, "invalid --timeout 'inf'"},
        {cmd("/x", {"--timeout", ""}), usage, "invalid --timeout ''"},
        {cmd("/x", {"--timeout=0x10"}), usage, "invalid --timeout '0x10'"},
        {cmd("/x", {"--timeout", "1e999"}), usage, "invalid --timeout '1e999'"},
        {{"--hosts", h, "--timeout"}, usage, "--timeout needs a value"},
        {cmd("/x", {"--kill-after", "-1"}), usage, "invalid --kill-after '-1'"},
        {cmd("/x", {"--kill-after", "x"}), usage, "invalid --kill-after 'x'"},
        {{"--kill-after"}, usage, "--kill-after needs a value"},
        // HOSTS.
        {with_hosts(""), usage, "invalid --hosts ''"},
        {with_hosts(":2181"), usage, "is not host:port"},
        {with_hosts("host.invalid"), usage, "is not host:port"},
        {with_hosts("h.invalid:0"), usage, "invalid port '0'"},
        {with_hosts("h.invalid:65536"), usage, "invalid port '65536'"},
        {with_hosts("127.0.0.1:99999"), usage, "invalid port '99999'"},
        {with_hosts("h.invalid:port"), usage, "invalid port 'port'"},
        {with_hosts("h.invalid:2181,"), usage, "trailing ','"},
        {with_hosts("h.invalid:2181/bad//chroot"), usage, "chroot"},
        {with_hosts("h\tx.invalid:2181"), usage, "invalid host name"},
        {{"--hosts"}, usage, "--hosts needs a value"},
        // Servers.
        {{"--hosts", nobody, "--timeout", "0", "/x", "--", "true"}, unavailable, "no ZooKeeper server answered"},
        {with_hosts("no-such-host.invalid:2181"), unavailable, "cannot resolve"},
        {with_hosts("no-such-host.invalid:2181,other.invalid:2181"), unavailable, "cannot resolve"},
        // (A name that does not resolve beside one that does is skipped, as ZooKeeper's own clients do.)
        {{"--hosts", nobody + ",no-such-host.invalid:2181", "--timeout", "0", "/x", "--", "true"}, unavailable,
         "no ZooKeeper server answered"},
        // COMMAND.
        {{"--hosts", h, unique("cmd"), "--", "/nonexistent/command"}, notfound, "cannot run /nonexistent/command"},
        {{"--hosts", h, unique("cmd"), "--", "no-such-command-zklock-test"}, notfound, "cannot run"},
        {{"--hosts", h, unique("cmd"), "--", plain_file}, noexec, "cannot run " + plain_file},
        {{"--hosts", h, unique("cmd"), "--", dir.path().string()}, noexec, "cannot run"},
        {{"--hosts", h, unique("cmd"), "--version"}, notfound, "cannot run --version"},  // after PATH: COMMAND
    };
    BOOST_TEST(rows.size() >= 30u);
    for (const auto& r : rows) {
        const auto err = dir / "stderr";
        BOOST_TEST_CONTEXT("zklock " << [&] {
            std::string s;
            for (const auto& a : r.args) s += (a.size() > 60 ? a.substr(0, 60) + "..." : a) + " ";
            return s;
        }() << "-> " << r.code) {
            const auto t0 = clock_type::now();
            BOOST_TEST(run(zklock_cmd(r.args), 20s, {}, err) == r.code);
            BOOST_TEST(secs(clock_type::now() - t0) < 5.0);
            const auto text = read_file(err);
            BOOST_TEST(text.find(r.err) != std::string::npos, "stderr: " << text);
            if (r.code == usage) BOOST_TEST(text.find("usage: zklock") != std::string::npos, "stderr: " << text);
            // One line of message (and the usage lines), never 40 KiB of echoed input.
            BOOST_TEST(text.size() < 1000u);
        }
    }
    // Nothing was left behind by those that connected.
    BOOST_TEST(children(hosts(), held) == std::vector<std::string>{basename_of(other.node())});
}

namespace {

/// The top of the source tree (this file is test/tools/test_zklock_cli.cpp in it).
fs::path source_dir() { return fs::path(__FILE__).parent_path().parent_path().parent_path(); }

/// `project(zklock VERSION x.y.z ...)` of the top CMakeLists.txt, if this source tree is at hand.
std::optional<std::string> project_version()
{
    const auto top = source_dir() / "CMakeLists.txt";
    std::smatch m;
    const auto text = read_file(top.string());
    if (!std::regex_search(text, m, std::regex("project\\(zklock\\s+VERSION\\s+([0-9.]+)"))) return std::nullopt;
    return m[1].str();
}

}  // namespace

BOOST_AUTO_TEST_CASE(help_documents_every_option_and_exit_code)
{
    temp_dir dir;
    const auto out = dir / "help";
    BOOST_TEST(run(zklock_cmd({"--help"}), 20s, out) == 0);
    const auto help = read_file(out);
    const std::vector<std::string> words = {"--hosts", "--timeout", "--kill-after", "-q", "--quiet", "-v",
                                            "--verbose", "-h", "--help", "--version", "ZKLOCK_HOSTS",
                                            "ZKLOCK_FENCING_TOKEN", "ZKLOCK_NODE", "SIGKILL", "64", "69", "70", "75",
                                            "126", "127", "129", "130", "143"};
    for (const auto& word : words) BOOST_TEST(help.find(word) != std::string::npos, "--help mentions " << word);
    // So does the README's paragraph on the command (when the source tree is at hand).
    const auto readme = read_file((source_dir() / "README.md").string());
    if (const auto at = readme.find("## The `zklock` command"); at != std::string::npos) {
        const auto section = readme.substr(at, readme.find("\n## ", at + 1) - at);
        for (const auto& word : words) BOOST_TEST(section.find(word) != std::string::npos, "README mentions " << word);
    }
}

BOOST_AUTO_TEST_CASE(version_and_quiet)
{
    temp_dir dir;
    const auto out = dir / "out";
    const auto err = dir / "err";
    BOOST_TEST(run(zklock_cmd({"--version"}), 20s, out, err) == 0);
    const auto version = read_file(out);
    BOOST_TEST(std::regex_match(version, std::regex("zklock [0-9]+\\.[0-9]+\\.[0-9]+\n")), "got: " << version);
    if (auto v = project_version()) BOOST_TEST(version == "zklock " + *v + "\n", "CMakeLists.txt says " << *v);
    BOOST_TEST(read_file(err).empty());

    // -q: the exit status tells, stderr says nothing about the lock...
    const auto p = unique("quiet");
    holder h(p, dir);
    BOOST_TEST(run(zklock_cmd({"-q", "--hosts", hosts(), "--timeout", "0", p, "--", "true"}), 20s, {}, err) == 75);
    BOOST_TEST(read_file(err).empty(), "stderr: " << read_file(err));
    BOOST_TEST(run(zklock_cmd({"--quiet", "--hosts", hosts(), "--timeout", "0.2", p, "--", "true"}), 20s, {}, err) ==
               75);
    BOOST_TEST(read_file(err).empty(), "stderr: " << read_file(err));
    // ...which it does without -q...
    BOOST_TEST(run(zklock_cmd({"--hosts", hosts(), "--timeout", "0", p, "--", "true"}), 20s, {}, err) == 75);
    BOOST_TEST(read_file(err).find("locked by someone else") != std::string::npos, "stderr: " << read_file(err));
    // ...but errors are still reported.
    BOOST_TEST(run(zklock_cmd({"-q", "--hosts", "no-such-host.invalid:2181", p, "--", "true"}), 20s, {}, err) == 69);
    BOOST_TEST(read_file(err).find("cannot resolve") != std::string::npos, "stderr: " << read_file(err));
    BOOST_TEST(run(zklock_cmd({"-q", "--hosts", "127.0.0.1:0", p, "--", "true"}), 20s, {}, err) == 64);
    BOOST_TEST(read_file(err).find("invalid port '0'") != std::string::npos, "stderr: " << read_file(err));
}

// A port out of range, a name that does not resolve, a bad $ZKLOCK_HOSTS: a clear message at once.
BOOST_AUTO_TEST_CASE(hosts_are_checked_before_connecting)
{
    temp_dir dir;
    const auto err = dir / "err";
    auto t0 = clock_type::now();
    BOOST_TEST(run(zklock_cmd({"--hosts", "127.0.0.1:99999", "/x", "--", "true"}), 20s, {}, err) == 64);
    BOOST_TEST(secs(clock_type::now() - t0) < 5.0);
    BOOST_TEST(read_file(err).find("invalid --hosts '127.0.0.1:99999': invalid port '99999' (1 to 65535)") !=
                   std::string::npos,
               "stderr: " << read_file(err));

    ::setenv("ZKLOCK_HOSTS", "127.0.0.1:2181,127.0.0.1:", 1);
    t0 = clock_type::now();
    BOOST_TEST(run(zklock_cmd({"/x", "--", "true"}), 20s, {}, err) == 64);
    ::unsetenv("ZKLOCK_HOSTS");
    BOOST_TEST(secs(clock_type::now() - t0) < 5.0);
    BOOST_TEST(read_file(err).find("invalid ZKLOCK_HOSTS") != std::string::npos, "stderr: " << read_file(err));

    t0 = clock_type::now();
    BOOST_TEST(run(zklock_cmd({"--hosts", "no-such-host.invalid:2181", "/x", "--", "true"}), 20s, {}, err) == 69);
    BOOST_TEST(secs(clock_type::now() - t0) < 5.0);
    BOOST_TEST(read_file(err).find("cannot resolve a host name of 'no-such-host.invalid:2181'") != std::string::npos,
               "stderr: " << read_file(err));
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

// A COMMAND that ignores SIGTERM is killed --kill-after seconds after the loss (default 5), then zklock
// exits 70. The default case runs with -q: nothing on stderr, the exit status tells.
BOOST_AUTO_TEST_CASE(lost_lock_escalates_to_sigkill_after_kill_after)
{
    temp_dir dir;
    struct stubborn {
        std::string path, nodefile, err;
        std::vector<std::string> options;
        double kill_after;
        std::unique_ptr<process> z;
        std::string node;
        clock_type::time_point lost_at;
    };
    std::vector<stubborn> runs;
    runs.push_back({unique("stubborn"), dir / "node-1", dir / "err-1", {"--kill-after", "1"}, 1.0, {}, {}, {}});
    runs.push_back({unique("stubborn"), dir / "node-2", dir / "err-2", {"-q"}, 5.0, {}, {}, {}});
    for (auto& r : runs) {
        // `trap '' TERM` survives the exec: sleep itself (COMMAND's pid) ignores SIGTERM.
        auto args = r.options;
        for (const auto& a : std::vector<std::string>{"--hosts", hosts(), r.path, "--", "sh", "-c",
                                                      "trap '' TERM; " + write_node_to(r.nodefile) + "; exec sleep 60"})
            args.push_back(a);
        r.z = std::make_unique<process>(zklock_cmd(args), std::string{}, r.err);
    }
    for (auto& r : runs) r.node = node_from(r.nodefile);
    for (auto& r : runs) {
        remove_node(hosts(), r.node);  // someone else deletes the lock node: the lock is lost
        r.lost_at = clock_type::now();
    }
    for (auto& r : runs) {
        BOOST_TEST_CONTEXT("--kill-after " << r.kill_after) {
            const auto limit = std::chrono::milliseconds(static_cast<int>(r.kill_after * 1000) + 20'000);
            BOOST_TEST(r.z->wait_for(limit).value_or(-1) == 70);
            const double took = secs(clock_type::now() - r.lost_at);
            BOOST_TEST_MESSAGE("--kill-after " << r.kill_after << ": zklock exited " << took << " s after the loss");
            BOOST_TEST(took >= r.kill_after - 0.05);
            BOOST_TEST(took < r.kill_after + 3.0);
            BOOST_TEST(children(hosts(), r.path).empty());
        }
    }
    const auto said = read_file(runs[0].err);
    BOOST_TEST(said.find("lost") != std::string::npos, "stderr: " << said);
    BOOST_TEST(said.find("sending SIGKILL") != std::string::npos, "stderr: " << said);
    BOOST_TEST(read_file(runs[1].err).empty(), "-q, yet stderr: " << read_file(runs[1].err));
}

namespace {

/// Thaws what a test froze, however the test ends (a frozen server would outlive a failed check).
struct thaw_on_exit {
    std::function<void()> thaw;
    ~thaw_on_exit()
    {
        if (thaw) thaw();
    }
};

}  // namespace

// The server freezes while COMMAND runs, and COMMAND then exits: the release cannot be confirmed. zklock
// must not wait for it (it used to wait until the server came back): after a bounded wait it says that the
// lock node is left to the session's expiry, and exits with COMMAND's status.
BOOST_AUTO_TEST_CASE(release_is_bounded_when_the_server_freezes)
{
    zklock::testing::server own;  // frozen below: not the shared one
    temp_dir dir;
    const auto p = unique("frozen");
    const auto ready = dir / "ready";
    const auto go = dir / "go";
    const auto err = dir / "err";
    process z(zklock_cmd({"--hosts", own.connect_string(), p, "--", "sh", "-c",
                          "touch '" + ready + "'; while [ ! -e '" + go + "' ]; do sleep 0.02; done; exit 3"}),
              {}, err);
    BOOST_REQUIRE(eventually([&] { return file_exists(ready); }));
    own.freeze();
    thaw_on_exit thaw{[&] { own.thaw(); }};
    const auto t0 = clock_type::now();
    std::ofstream(go) << "go\n";  // COMMAND exits within 20 ms
    const auto code = z.wait_for(20s);
    const double took = secs(clock_type::now() - t0);
    BOOST_TEST_MESSAGE("zklock exited " << took << " s after COMMAND was told to exit (server frozen)");
    BOOST_TEST(code.value_or(-1) == 3);
    BOOST_TEST(took < 4.5);  // the release is given 2 s, the close 0.5 s
    const auto said = read_file(err);
    BOOST_TEST(said.find("did not confirm the release of " + p) != std::string::npos, "stderr: " << said);
    BOOST_TEST(said.find("until the session expires") != std::string::npos, "stderr: " << said);
    // Once the server runs again, it expires the session, and the node goes with it.
    own.thaw();
    thaw.thaw = nullptr;
    BOOST_TEST(eventually([&] { return children(own.connect_string(), p).empty(); }, 30s));
}

// A three-server ensemble with one member frozen (it accepts TCP but never answers). A follower frozen:
// every try succeeds, also with a --timeout shorter than the 2 s the library gives a silent server
// (zklock then still takes one look). The leader frozen (and a new one elected) while another process
// holds the lock: --timeout 5 gives 75 within 5 s and a little.
BOOST_AUTO_TEST_CASE(frozen_cluster_member)
{
    zklock::testing::cluster c(3);
    const auto all = c.connect_string();
    const auto leader = c.leader();
    const auto follower = (leader + 1) % c.size();
    {
        c.freeze(follower);
        thaw_on_exit thaw{[&] { c.thaw(follower); }};
        const auto p = unique("frozen-follower");
        for (const char* timeout : {"5", "1"}) {
            for (int i = 0; i < 5; ++i) {
                BOOST_TEST_CONTEXT("--timeout " << timeout << ", try " << i) {
                    const auto t0 = clock_type::now();
                    BOOST_TEST(run(zklock_cmd({"--hosts", all, "--timeout", timeout, p, "--", "true"}), 30s) == 0);
                    BOOST_TEST_MESSAGE("follower frozen, --timeout " << timeout << ": exit after "
                                                                     << secs(clock_type::now() - t0) << " s");
                }
            }
        }
    }
    {
        c.freeze(leader);
        thaw_on_exit thaw{[&] { c.thaw(leader); }};
        BOOST_REQUIRE(eventually([&] { return c.leader(60s) != leader; }, 60s));  // the other two elect one
        temp_dir dir;
        const auto p = unique("frozen-leader");
        holder h(p, dir, all);
        const auto t0 = clock_type::now();
        BOOST_TEST(run(zklock_cmd({"--hosts", all, "--timeout", "5", p, "--", "true"}), 30s) == 75);
        const double overshoot = secs(clock_type::now() - t0) - 5.0;
        BOOST_TEST_MESSAGE("leader frozen, lock held elsewhere, --timeout 5: exit 75 after 5 s + " << overshoot
                                                                                                << " s");
        BOOST_TEST(overshoot >= 0.0);
        BOOST_TEST(overshoot < 1.0);
        h.stop();
    }
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
