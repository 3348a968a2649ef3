// The `zklock` command: exit codes, environment, bad input of every kind, --help, --version and -q, the
// variables COMMAND sees. (Signals, a lost lock, frozen servers and mutual exclusion:
// test_zklock_cli_faults.cpp.) Runs the built binary (ZKLOCK_BIN, or $ZKLOCK_TEST_BIN to try another build
// of it) against a ZooKeeper server of its own, on loopback only.
#include "cli_util.hpp"

#include <algorithm>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

#include <sys/stat.h>

BOOST_AUTO_TEST_SUITE(zklock_cli_tests)

using namespace tools_test;
using namespace cli_test;

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
        // (PATH alone is not an error: zklock then holds the lock until stdin ends; test_zklock_cli_flags.cpp.)
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
        // Valid paths with no room for the lock's own nodes below them: refused before anything is sent.
        {cmd("/" + std::string(32'723, 'a')), usage, "a lock's path is 32724 bytes long; at most 32704"},
        {cmd("/" + std::string(32'767, 'a'), {"--read"}), usage, "32768 bytes long; at most 32704"},
        {cmd("/" + std::string(32'704, 'a'), {"--limit", "2"}), usage, "32705 bytes long; at most 32704"},
        {{"--hosts", h, "ls", "/" + std::string(32'723, 'a')}, 0, ""},  // nothing there; ls only reads
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
        {cmd("/x", {"--session-timeout", "0.5"}), usage, "invalid --session-timeout '0.5': expected a number of seconds from 1 to 86400"},
        {cmd("/x", {"--session-timeout", "86401"}), usage, "invalid --session-timeout '86401'"},
        {cmd("/x", {"--session-timeout", "x"}), usage, "invalid --session-timeout 'x'"},
        {{"--session-timeout"}, usage, "--session-timeout needs a value"},
        // -n, -E, -c (flock's flags).
        {cmd("/x", {"-n", "--timeout", "1"}), usage, "--timeout and -n cannot be combined"},
        {cmd("/x", {"--timeout=0", "--nonblock"}), usage, "--nonblock and --timeout cannot be combined"},
        {cmd("/x", {"-E", "256"}), usage, "invalid -E '256': expected an exit code from 0 to 255"},
        {cmd("/x", {"-E", "-1"}), usage, "invalid -E '-1'"},
        {cmd("/x", {"--conflict-exit-code=abc"}), usage, "invalid --conflict-exit-code 'abc'"},
        {{"--hosts", h, "-E"}, usage, "-E needs a value"},
        {{"--hosts", h, "-c", "true", "/x", "--", "true"}, usage, "-c and COMMAND cannot be combined"},
        {{"--hosts", h, "-c", "", "/x"}, usage, "-c '' is empty"},
        {{"--hosts", h, "--command"}, usage, "--command needs a value"},
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
    // Nothing was left behind by those that connected, nor made for the paths too long for a lock.
    BOOST_TEST(children(hosts(), held) == std::vector<std::string>{basename_of(other.node())});
    for (const std::size_t size : {32'723u, 32'767u, 32'704u})
        BOOST_TEST(!get_data(hosts(), "/" + std::string(size, 'a')), size + 1 << " bytes: a lock directory was made");
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

/// What `zklock --help` prints (and checks that it exits 0).
std::string help_text()
{
    temp_dir dir;
    const auto out = dir / "help";
    BOOST_TEST_REQUIRE(run(zklock_cmd({"--help"}), 20s, out) == 0);
    return read_file(out);
}

}  // namespace

BOOST_AUTO_TEST_CASE(help_documents_every_option_and_exit_code)
{
    const auto help = help_text();
    const std::vector<std::string> words = {"--hosts", "--timeout", "--session-timeout", "--kill-after", "-q", "--quiet", "-v",
                                            "--verbose", "-h", "--help", "--version", "ZKLOCK_HOSTS",
                                            "ZKLOCK_FENCING_TOKEN", "ZKLOCK_NODE", "SIGKILL", "64", "69", "70", "75",
                                            "126", "127", "129", "130", "143", "-n", "--nonblock", "-E",
                                            "--conflict-exit-code", "-c", "--command", "stdin", "/dev/null",
                                            "--lease", "lease expired", "ls PATH", "revoke PATH", "break PATH",
                                            "--on-revoke", "SIGUSR1", "process group", "--read", "--write", "--limit"};
    for (const auto& word : words) BOOST_TEST(help.find(word) != std::string::npos, "--help mentions " << word);
    // The usage shows the three forms: -- COMMAND, -c, and PATH alone (with at most a remark after it).
    BOOST_TEST(help.find("zklock [OPTIONS] PATH -- COMMAND [ARG...]\n") != std::string::npos);
    BOOST_TEST(help.find("zklock [OPTIONS] -c 'SHELL COMMAND' PATH\n") != std::string::npos);
    BOOST_TEST(std::regex_search(help, std::regex("\n +zklock \\[OPTIONS\\] PATH( +\\(.*\\))?\n")));
    BOOST_TEST(help.find("zklock [--hosts HOSTS] ls|stat [--json] PATH") != std::string::npos);
    BOOST_TEST(help.find("zklock [--hosts HOSTS] revoke|break PATH") != std::string::npos);
    // So does the command's page of the guide.
    const auto page = read_file((source_dir() / "docs" / "command.md").string());
    BOOST_TEST_REQUIRE(!page.empty());
    for (const auto& word : words) BOOST_TEST(page.find(word) != std::string::npos, "docs/command.md mentions " << word);
}

namespace {

/// The options a text names: "-x" and "--name" words (not "--" alone, nor a hyphen inside a word such as
/// "lock-<seq>"), as a set.
std::set<std::string> options_named(const std::string& text)
{
    std::set<std::string> found;
    static const std::regex option("(^|[^A-Za-z0-9_-])(--?[A-Za-z][A-Za-z0-9]*(-[A-Za-z0-9]+)*)(?![A-Za-z0-9_-])");
    for (std::sregex_iterator it(text.begin(), text.end(), option), end; it != end; ++it) found.insert((*it)[2]);
    return found;
}

/// The man page as a reader sees its words: comments dropped, font escapes removed, "\-" as "-".
std::string manual_text(const std::string& roff)
{
    std::string out;
    std::istringstream in(roff);
    for (std::string line; std::getline(in, line);) {
        if (line.starts_with(".\\\"")) continue;
        out += std::regex_replace(std::regex_replace(line, std::regex(R"(\\f[BIRP])"), ""), std::regex(R"(\\-)"), "-");
        out += '\n';
    }
    return out;
}

std::string joined(const std::set<std::string>& words)
{
    std::string s;
    for (const auto& w : words) s += w + " ";
    return s;
}

}  // namespace

// zklock(1) and --help name the same options, and the same subcommands; neither may drift from the other.
BOOST_AUTO_TEST_CASE(the_manual_and_help_name_the_same_options)
{
    const auto help = help_text();
    const auto manual = manual_text(read_file((source_dir() / "docs" / "zklock.1").string()));
    const auto in_help = options_named(help), in_manual = options_named(manual);
    BOOST_TEST(in_help.size() >= 25u, "--help names " << joined(in_help));
    for (const auto& o : in_help)
        BOOST_TEST(in_manual.contains(o), o << " is in --help but not in zklock(1)");
    for (const auto& o : in_manual)
        BOOST_TEST(in_help.contains(o), o << " is in zklock(1) but not in --help");
    for (const std::string sub : {"ls", "stat", "revoke", "break", "elect", "leader"}) {
        BOOST_TEST(manual.find("\n" + sub + " ") != std::string::npos, "zklock(1) has no entry for " << sub);
        BOOST_TEST(help.find(" " + sub) != std::string::npos, "--help has no " << sub);
    }
    const auto from = manual.find(".SH EXIT STATUS\n"), to = manual.find("\n.SH ", from + 1);
    BOOST_REQUIRE(from != std::string::npos);
    const auto exit_status = manual.substr(from, to - from);
    for (const std::string code : {"0", "1", "64", "69", "70", "75", "126", "127", "129", "130", "143"})
        BOOST_TEST(std::regex_search(exit_status, std::regex("\n\\.BR? [^\n]*\\b" + code + "\\b")),
                   "zklock(1)'s EXIT STATUS has no entry for " << code);
}

// `cmake --install` puts zklock(1) where man finds it: `man zklock` with the prefix's share/man.
BOOST_AUTO_TEST_CASE(man_zklock_works_after_cmake_install)
{
    temp_dir dir;
    const auto prefix = dir / "prefix";
    BOOST_REQUIRE(run({ZKLOCK_CMAKE, "--install", ZKLOCK_BUILD_DIR, "--prefix", prefix}, 120s, dir / "install.out",
                      dir / "install.err") == 0);
    BOOST_TEST(file_exists(prefix + "/bin/zklock"));
    const auto page = dir / "page";
    const int rc = run({"env", "MANPATH=" + prefix + "/share/man", "MANWIDTH=100", "man", "-P", "cat", "zklock"}, 60s,
                       page, dir / "man.err");
    BOOST_TEST(rc == 0, "man zklock: " << read_file(dir / "man.err"));
    const auto text = read_file(page);
    BOOST_TEST(text.find("zklock - run a command while holding a ZooKeeper lock") != std::string::npos, text);
    BOOST_TEST(text.find("--on-revoke ACTION") != std::string::npos);
    BOOST_TEST(text.find("EXIT STATUS") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(version_and_quiet)
{
    temp_dir dir;
    const auto out = dir / "out";
    const auto err = dir / "err";
    BOOST_TEST(run(zklock_cmd({"--version"}), 20s, out, err) == 0);
    const auto version = read_file(out);
    BOOST_TEST(std::regex_match(version, std::regex("zklock [0-9]+\\.[0-9]+\\.[0-9]+\n")), "got: " << version);
    const auto v = project_version();
    BOOST_REQUIRE_MESSAGE(v.has_value(), "no project version found in CMakeLists.txt");
    BOOST_TEST(version == "zklock " + *v + "\n", "CMakeLists.txt says " << *v);
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

BOOST_AUTO_TEST_SUITE_END()  // zklock_cli_tests
