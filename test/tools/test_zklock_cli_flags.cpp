// The `zklock` command's flock(1)-like flags: -E/--conflict-exit-code N, -n/--nonblock, -c STRING, and the
// mode without COMMAND (zklock PATH: print the fencing token, hold until stdin ends or a signal comes). Runs
// the built binary (ZKLOCK_BIN, or $ZKLOCK_TEST_BIN) against a ZooKeeper server of its own, on loopback only.
#include "cli_util.hpp"

#include <regex>
#include <utility>

#include <fcntl.h>

BOOST_AUTO_TEST_SUITE(zklock_cli_flag_tests)

using namespace tools_test;
using namespace cli_test;

namespace {

/// "ZXID.N" and a newline: the token zklock prints without COMMAND (the same text as ZKLOCK_FENCING_TOKEN).
const std::regex token_line("([0-9]+)\\.([0-9]+)\n");

std::int64_t zxid_of(const std::string& token)
{
    std::smatch m;
    if (!std::regex_match(token, m, token_line)) return -1;
    return std::stoll(m[1].str());
}

/// `stdin_file` for a stdin left closed, as `zklock PATH <&-` does.
const std::string closed_stdin = "<&-";

/// zklock without COMMAND: its stdin the read end of a pipe whose write end this test holds (or a file), its
/// stdout and stderr files. Killed (SIGKILL) and reaped by the destructor if still running.
class without_command {
public:
    without_command(const std::vector<std::string>& args, const temp_dir& dir, const std::string& stdin_file = {})
        : out_(dir / ("out-" + std::to_string(++count_))), err_(dir / ("err-" + std::to_string(count_)))
    {
        int fds[2] = {-1, -1};
        // O_CLOEXEC: the write end must reach no other process, or closing it here would not end zklock's stdin.
        if (stdin_file.empty() && ::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        if (stdin_file.empty()) posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
        else if (stdin_file == closed_stdin) posix_spawn_file_actions_addclose(&fa, 0);
        else posix_spawn_file_actions_addopen(&fa, 0, stdin_file.c_str(), O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_addopen(&fa, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        auto argv = zklock_cmd(args);
        std::vector<char*> cargs;
        for (auto& a : argv) cargs.push_back(a.data());
        cargs.push_back(nullptr);
        const int err = ::posix_spawn(&pid_, cargs[0], &fa, nullptr, cargs.data(), environ);
        posix_spawn_file_actions_destroy(&fa);
        if (fds[0] >= 0) ::close(fds[0]);
        stdin_ = fds[1];
        if (err != 0) {
            close_stdin();
            throw std::runtime_error(std::string("cannot start zklock: ") + std::strerror(err));
        }
    }
    without_command(const without_command&) = delete;
    without_command& operator=(const without_command&) = delete;
    ~without_command()
    {
        close_stdin();
        if (!status_) {
            ::kill(pid_, SIGKILL);
            int st = 0;
            ::waitpid(pid_, &st, 0);
        }
    }

    /// The line zklock printed on stdout once it held the lock (waits for it; empty if it never came).
    std::string token() const
    {
        if (!eventually([&] { return out().find('\n') != std::string::npos; })) return {};
        return out();
    }
    std::string out() const { return read_file(out_); }
    std::string err() const { return read_file(err_); }

    /// Writes to zklock's stdin (only while it runs: a write to a pipe nobody reads would kill this test).
    void feed(const std::string& text)
    {
        BOOST_REQUIRE(running());
        BOOST_REQUIRE(::write(stdin_, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    }
    void close_stdin()
    {
        if (stdin_ >= 0) ::close(stdin_);
        stdin_ = -1;
    }
    void signal(int sig) const { ::kill(pid_, sig); }

    /// The exit code once it has exited, or nullopt if `limit` passed.
    std::optional<int> wait_for(std::chrono::milliseconds limit) { return wait_exit(pid_, status_, limit); }
    bool running() { return !wait_for(0ms); }

private:
    static inline int count_ = 0;
    std::string out_, err_;
    pid_t pid_ = -1;
    int stdin_ = -1;
    std::optional<int> status_;
};

/// Runs zklock with `args`; its exit code, with its stderr in `err`.
int zklock_status(std::vector<std::string> args, const std::string& err = {})
{
    args.insert(args.begin(), {"--hosts", hosts()});
    return run(zklock_cmd(args), 20s, {}, err);
}

}  // namespace

BOOST_AUTO_TEST_CASE(conflict_exit_code_replaces_75)
{
    temp_dir dir;
    const auto p = unique("conflict");
    const auto err = dir / "err";
    holder h(p, dir);
    // COMMAND is `false` (1): a 0 below is -E's, not COMMAND's.
    BOOST_TEST(zklock_status({"--timeout", "0", p, "--", "false"}) == 75);
    const std::vector<std::pair<std::vector<std::string>, int>> cases = {
        {{"-E", "3"}, 3},   {{"-E0"}, 0},       {{"--conflict-exit-code", "255"}, 255},
        {{"-E", "075"}, 75}, {{"--conflict-exit-code=1"}, 1}, {{"-E", "7", "-E", "8"}, 8},  // the last one counts
    };
    for (const auto& [flags, code] : cases) {
        BOOST_TEST_CONTEXT(flags.front() << " -> " << code) {
            auto args = flags;
            args.insert(args.end(), {"--timeout", "0", p, "--", "false"});
            BOOST_TEST(zklock_status(args, err) == code);
            // The message stays: only the exit status changes.
            BOOST_TEST(read_file(err).find("locked by someone else") != std::string::npos, "stderr: " << read_file(err));
        }
    }
    // A wait that runs out gives N too; -q silences the message, not the code.
    BOOST_TEST(zklock_status({"-q", "-E", "9", "--timeout", "0.3", p, "--", "false"}, err) == 9);
    BOOST_TEST(read_file(err).empty(), "stderr: " << read_file(err));
    // Nothing was left behind: only the holder's node.
    BOOST_TEST(children(hosts(), p) == std::vector<std::string>{basename_of(h.node())});
    // Once the lock is obtained, -E changes nothing: the status is COMMAND's.
    h.stop();
    BOOST_TEST(zklock_status({"-E", "9", "--timeout", "5", p, "--", "sh", "-c", "exit 5"}) == 5);
    BOOST_TEST(zklock_status({"-E", "9", "--timeout", "5", p, "--", "true"}) == 0);
}

BOOST_AUTO_TEST_CASE(bad_conflict_exit_codes_are_usage_errors)
{
    temp_dir dir;
    const auto err = dir / "err";
    const auto ran = dir / "ran";
    const std::vector<std::vector<std::string>> cases = {
        {"-E", "256"}, {"-E", "-1"}, {"-E", "x"}, {"-E", ""}, {"-E", "1.5"}, {"-E", "1000"}, {"-E", " 1"},
        {"--conflict-exit-code", "300"}, {"--conflict-exit-code="}, {"-E=1"}, {"-E", "0x10"},
    };
    for (const auto& flags : cases) {
        BOOST_TEST_CONTEXT(flags.front() << " '" << (flags.size() > 1 ? flags[1] : "") << "'") {
            auto args = flags;
            args.insert(args.end(), {unique("bad-e"), "--", "touch", ran});
            BOOST_TEST(zklock_status(args, err) == 64);
            const auto text = read_file(err);
            BOOST_TEST(text.find("expected an exit code from 0 to 255") != std::string::npos, "stderr: " << text);
            BOOST_TEST(text.find("usage: zklock") != std::string::npos, "stderr: " << text);
        }
    }
    BOOST_TEST(zklock_status({"-E"}, err) == 64);
    BOOST_TEST(read_file(err).find("-E needs a value") != std::string::npos, "stderr: " << read_file(err));
    BOOST_TEST(zklock_status({unique("bad-e"), "--conflict-exit-code"}, err) == 127);  // after PATH: COMMAND
    BOOST_TEST(!file_exists(ran), "COMMAND ran after a usage error");
}

BOOST_AUTO_TEST_CASE(nonblock_gives_up_at_once_or_runs_the_command)
{
    temp_dir dir;
    const auto p = unique("nonblock");
    const auto ran = dir / "ran";
    holder h(p, dir);
    for (const auto* flag : {"-n", "--nonblock"}) {
        BOOST_TEST_CONTEXT(flag) {
            const auto t0 = clock_type::now();
            BOOST_TEST(zklock_status({flag, p, "--", "touch", ran}) == 75);
            BOOST_TEST(secs(clock_type::now() - t0) < 5.0);
        }
    }
    BOOST_TEST(zklock_status({"-n", "-E", "4", p, "--", "touch", ran}) == 4);
    BOOST_TEST(!file_exists(ran), "COMMAND ran while the lock was held elsewhere");
    BOOST_TEST(children(hosts(), p) == std::vector<std::string>{basename_of(h.node())});

    // A free lock: one look is enough, COMMAND runs.
    const auto q = unique("nonblock-free");
    BOOST_TEST(zklock_status({"-n", q, "--", "sh", "-c", "echo ran > '" + ran + "'; exit 6"}) == 6);
    BOOST_TEST(read_file(ran) == "ran\n");
    h.stop();
    BOOST_TEST(zklock_status({"--nonblock", p, "--", "true"}) == 0);
    BOOST_TEST(children(hosts(), p).empty());
}

BOOST_AUTO_TEST_CASE(nonblock_with_timeout_is_a_usage_error)
{
    temp_dir dir;
    const auto err = dir / "err";
    const auto ran = dir / "ran";
    const std::vector<std::vector<std::string>> cases = {
        {"-n", "--timeout", "1"}, {"--timeout", "1", "-n"}, {"--nonblock", "--timeout=0"}, {"--timeout", "0", "--nonblock"},
    };
    for (const auto& flags : cases) {
        BOOST_TEST_CONTEXT(flags[0] << " " << flags[1]) {
            auto args = flags;
            args.insert(args.end(), {unique("n-and-timeout"), "--", "touch", ran});
            BOOST_TEST(zklock_status(args, err) == 64);
            const auto text = read_file(err);
            BOOST_TEST((text.find("--timeout cannot be combined") != std::string::npos ||
                        text.find("--timeout and -") != std::string::npos),
                       "stderr: " << text);
            BOOST_TEST(text.find("is --timeout 0") != std::string::npos, "stderr: " << text);
        }
    }
    BOOST_TEST(!file_exists(ran), "COMMAND ran after a usage error");
}

BOOST_AUTO_TEST_CASE(shell_command_runs_through_sh)
{
    temp_dir dir;
    const auto p = unique("shell");
    const auto token = dir / "token";
    // The token reaches the shell, and the shell's status is zklock's.
    BOOST_TEST(zklock_status({"-c", "echo \"$ZKLOCK_FENCING_TOKEN\" > '" + token + "'; exit 5", p}) == 5);
    BOOST_TEST(zxid_of(read_file(token)) > 0, "token: " << read_file(token));
    // It is a shell: pipes, &&, expansions.
    const auto count = dir / "count";
    BOOST_TEST(zklock_status({"-c", "echo a b c | wc -w > '" + count + "' && test -n \"$ZKLOCK_NODE\"", p}) == 0);
    BOOST_TEST(std::stoi(read_file(count)) == 3);
    BOOST_TEST(zklock_status({"--command", "exit 6", p}) == 6);
    BOOST_TEST(zklock_status({"--command=exit 7", p}) == 7);
    BOOST_TEST(zklock_status({"-cexit 8", p}) == 8);
    BOOST_TEST(zklock_status({"-c", "kill -TERM $$", p}) == 128 + SIGTERM);
    BOOST_TEST(children(hosts(), p).empty());

    // Held elsewhere: the string does not run, and -n and -E apply.
    const auto ran = dir / "ran";
    holder h(p, dir);
    BOOST_TEST(zklock_status({"-n", "-E", "9", "-c", "touch '" + ran + "'", p}) == 9);
    BOOST_TEST(!file_exists(ran));
}

BOOST_AUTO_TEST_CASE(shell_command_with_a_command_or_empty_is_a_usage_error)
{
    temp_dir dir;
    const auto err = dir / "err";
    const auto ran = dir / "ran";
    const auto touch = "touch '" + ran + "'";
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"-c", touch, "/x", "--", "touch", ran}, "-c and COMMAND cannot be combined"},
        {{"-c", touch, "/x", "touch", ran}, "-c and COMMAND cannot be combined"},
        {{"-c", touch, "/x", "--"}, "-c and COMMAND cannot be combined"},
        {{"--command", touch, "/x", "--", "true"}, "--command and COMMAND cannot be combined"},
        {{"-c", "", "/x"}, "-c '' is empty"},
        {{"--command=", "/x"}, "--command '' is empty"},
        {{"-c"}, "-c needs a value"},
    };
    for (const auto& [args, message] : cases) {
        BOOST_TEST_CONTEXT(args[0] << " ... -> " << message) {
            BOOST_TEST(zklock_status(args, err) == 64);
            const auto text = read_file(err);
            BOOST_TEST(text.find(message) != std::string::npos, "stderr: " << text);
            BOOST_TEST(text.find("usage: zklock") != std::string::npos, "stderr: " << text);
        }
    }
    BOOST_TEST(!file_exists(ran), "a command ran after a usage error");
}

BOOST_AUTO_TEST_CASE(without_command_prints_the_token_and_holds_until_stdin_ends)
{
    temp_dir dir;
    const auto p = unique("hold");
    without_command z({"--hosts", hosts(), p}, dir);
    const auto token = z.token();
    BOOST_TEST(zxid_of(token) > 0, "stdout: '" << token << "', stderr: " << z.err());

    // It holds the lock: its node is there, another zklock gives up, and what stdin brings is ignored.
    BOOST_TEST(children(hosts(), p).size() == 1u);
    BOOST_TEST(zklock_status({"-n", p, "--", "true"}) == 75);
    z.feed("some input\nthat is not the end\n");
    BOOST_TEST(zklock_status({"-n", p, "--", "true"}) == 75);
    BOOST_TEST(z.running());

    // The end of stdin releases it: exit 0, no node left, the lock free for the next holder.
    z.close_stdin();
    BOOST_TEST(z.wait_for(20s).value_or(-1) == 0);
    BOOST_TEST(children(hosts(), p).empty());
    BOOST_TEST(z.out() == token);  // the token line and nothing else
    BOOST_TEST(z.err().empty(), "stderr: " << z.err());
    const auto next = dir / "next";
    BOOST_TEST(zklock_status({"-n", "-c", "echo \"$ZKLOCK_FENCING_TOKEN\" > '" + next + "'", p}) == 0);
    BOOST_TEST(zxid_of(read_file(next)) > zxid_of(token), "next holder's token: " << read_file(next));
}

// The server shows the timeout it granted each connection (`cons`: "to=MS"). The test server's tick is
// 200 ms, so it grants 0.4 to 4 s: 1 s asked is 1 s granted, and the default 10 s is cut to 4 s.
BOOST_AUTO_TEST_CASE(session_timeout_is_the_one_the_session_asks_for)
{
    temp_dir dir;
    for (const auto& [args, granted] : {std::pair{std::vector<std::string>{"--session-timeout", "1"}, "to=1000,"},
                                       std::pair{std::vector<std::string>{}, "to=4000,"}}) {
        const auto p = unique("session-timeout");
        auto all = args;
        all.insert(all.begin(), {"--hosts", hosts()});
        all.push_back(p);
        without_command z(all, dir);
        BOOST_TEST(zxid_of(z.token()) > 0, "stderr: " << z.err());
        const auto cons = zk().four_letter("cons");
        BOOST_TEST(cons.find(granted) != std::string::npos, "cons: " << cons);
        z.close_stdin();
        BOOST_TEST(z.wait_for(20s).value_or(-1) == 0);
    }
}

BOOST_AUTO_TEST_CASE(without_command_on_revoke_release_releases_and_gives_70)
{
    temp_dir dir;
    const auto p = unique("hold-revoke");
    without_command z({"--hosts", hosts(), "--on-revoke", "release", p}, dir);
    BOOST_TEST(zxid_of(z.token()) > 0, "stderr: " << z.err());
    BOOST_TEST(run(zklock_cmd({"--hosts", hosts(), "revoke", p}), 30s) == 0);
    BOOST_TEST(z.wait_for(20s).value_or(-1) == 70);
    BOOST_TEST(z.err().find("revoked") != std::string::npos, "stderr: " << z.err());
    BOOST_TEST(children(hosts(), p).empty());
}

BOOST_AUTO_TEST_CASE(without_command_a_signal_releases_the_lock)
{
    temp_dir dir;
    const auto p = unique("hold-signal");
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
        BOOST_TEST_CONTEXT("signal " << sig) {
            without_command z({"--hosts", hosts(), p}, dir);
            BOOST_REQUIRE(zxid_of(z.token()) > 0);
            BOOST_TEST(zklock_status({"-n", p, "--", "true"}) == 75);  // it holds until the signal
            z.signal(sig);
            BOOST_TEST(z.wait_for(20s).value_or(-1) == 0);
            BOOST_TEST(children(hosts(), p).empty());
            BOOST_TEST(zklock_status({"-n", p, "--", "true"}) == 0);
        }
    }
}

// stdin that is already at its end (/dev/null, a regular file, closed): the lock is taken, the token printed,
// and the lock released at once, as documented. (A closed stdin must not become a descriptor zklock opens
// itself, such as the ZooKeeper socket, which it would then read.)
BOOST_AUTO_TEST_CASE(without_command_stdin_at_its_end_releases_at_once)
{
    temp_dir dir;
    const auto p = unique("hold-eof");
    const auto file = dir / "input";
    std::ofstream(file) << "a file is read to its end at once\n";
    for (const auto& input : {std::string("/dev/null"), file, closed_stdin}) {
        BOOST_TEST_CONTEXT("stdin " << input) {
            without_command z({"--hosts", hosts(), p}, dir, input);
            BOOST_TEST(z.wait_for(20s).value_or(-1) == 0);
            BOOST_TEST(zxid_of(z.out()) > 0, "stdout: " << z.out() << ", stderr: " << z.err());
            BOOST_TEST(children(hosts(), p).empty());
        }
    }
}

BOOST_AUTO_TEST_CASE(without_command_the_token_comes_once_the_lock_is_held)
{
    temp_dir dir;
    const auto p = unique("hold-queue");
    auto h = std::make_unique<holder>(p, dir);
    without_command z({"--hosts", hosts(), p}, dir);
    // Queued behind the holder (its node is there) and silent: the token means "held".
    BOOST_REQUIRE(eventually([&] { return children(hosts(), p).size() == 2; }));
    BOOST_TEST(z.out().empty(), "stdout: " << z.out());
    h.reset();  // the holder releases: the lock passes to z
    BOOST_TEST(zxid_of(z.token()) > 0, "stdout: " << z.out() << ", stderr: " << z.err());
    BOOST_TEST(zklock_status({"-n", p, "--", "true"}) == 75);
    z.close_stdin();
    BOOST_TEST(z.wait_for(20s).value_or(-1) == 0);
    BOOST_TEST(children(hosts(), p).empty());

    // Not obtained in time: nothing on stdout, the conflict exit code.
    holder again(p, dir);
    without_command late({"--hosts", hosts(), "-n", "-E", "5", p}, dir);
    BOOST_TEST(late.wait_for(20s).value_or(-1) == 5);
    BOOST_TEST(late.out().empty(), "stdout: " << late.out());
    BOOST_TEST(late.err().find("locked by someone else") != std::string::npos, "stderr: " << late.err());
}

BOOST_AUTO_TEST_CASE(without_command_a_lost_lock_gives_70)
{
    temp_dir dir;
    const auto p = unique("hold-lost");
    without_command z({"--hosts", hosts(), p}, dir);
    BOOST_REQUIRE(zxid_of(z.token()) > 0);
    const auto nodes = children(hosts(), p);
    BOOST_REQUIRE(nodes.size() == 1u);
    remove_node(hosts(), p + "/" + nodes[0]);  // someone else deletes the lock node: the lock is lost
    BOOST_TEST(z.wait_for(20s).value_or(-1) == 70);
    BOOST_TEST(z.err().find("lost") != std::string::npos, "stderr: " << z.err());
    BOOST_TEST(children(hosts(), p).empty());
}

BOOST_AUTO_TEST_SUITE_END()  // zklock_cli_flag_tests
