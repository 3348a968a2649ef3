// zklock: flock(1) for a cluster. Holds a ZooKeeper lock while a command runs.
//
//   zklock [OPTIONS] PATH -- COMMAND [ARG...]
//
// One process, one io_context, one coroutine: connect, acquire (racing SIGINT/SIGTERM/SIGHUP), spawn the
// command, then wait for whichever comes first of: the child's exit (SIGCHLD), a signal to forward, or the
// loss of the lock. The session is pumped by the same io_context the whole time, so it keeps its
// heartbeats while the command runs. The goodbye (release, close) is bounded: a dead or frozen server
// never keeps zklock running long after COMMAND. See print_help() for the options and exit codes.
#include <zklock/config.hpp>
#include <zklock/error.hpp>
#include <zklock/guard.hpp>
#include <zklock/mutex.hpp>
#include <zklock/session.hpp>
#include <zklock/validation.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <variant>
#include <vector>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

// The project's version, project(zklock VERSION ...) in CMakeLists.txt, which does not pass it to this
// program: kept in step by hand (the CLI test compares the two), unless the build defines it.
#ifndef ZKLOCK_VERSION
#define ZKLOCK_VERSION "0.1.0"
#endif

namespace {

namespace asio = boost::asio;
using namespace boost::asio::experimental::awaitable_operators;
using boost::system::error_code;
using std::chrono::milliseconds;

// sysexits.h values, spelled out (and documented in print_help()).
constexpr int ex_ok = 0;
constexpr int ex_usage = 64;        // EX_USAGE: bad options, invalid PATH or host string
constexpr int ex_unavailable = 69;  // EX_UNAVAILABLE: no ZooKeeper server answered, or a host name unresolvable
constexpr int ex_software = 70;     // EX_SOFTWARE: the lock was lost while COMMAND ran, other errors
constexpr int ex_tempfail = 75;     // EX_TEMPFAIL: the lock was not obtained in time
constexpr int ex_noexec = 126;      // COMMAND found but not executable (as env(1), timeout(1))
constexpr int ex_notfound = 127;    // COMMAND not found

constexpr milliseconds max_connect_timeout{10'000};
// Enough to leave one server that accepts TCP but never answers (the library gives up on it after 2 s).
constexpr milliseconds min_connect_timeout{3'000};
constexpr milliseconds release_limit{2'000};  // waiting for ZooKeeper to confirm the release
constexpr milliseconds close_limit{2'000};    // waiting for it to confirm the session's end

const char* const usage_line = "usage: zklock [OPTIONS] PATH -- COMMAND [ARG...]";

void print_help()
{
    std::cout << usage_line << R"(

Runs COMMAND while holding the ZooKeeper lock at PATH: flock(1) for a cluster. The lock is
the mutex recipe of Curator's InterProcessMutex (an ephemeral sequential node under PATH),
so zklock, Curator and other zklock programs exclude one another on the same PATH.
PATH is a ZooKeeper path other than "/": absolute, no trailing slash, no empty, '.' or '..'
part, valid UTF-8 without control characters, at most 32 KiB.

Options:
  --hosts HOSTS      ZooKeeper servers, "host:port[,host:port...][/chroot]", ports 1 to 65535.
                     Default: $ZKLOCK_HOSTS, else 127.0.0.1:2181.
  --timeout SECONDS  Give up (exit 75) if the lock is not held SECONDS after zklock started:
                     connecting counts against it (fractions allowed; 0: one look, give up
                     at once if someone else holds it). Default: wait forever.
  --kill-after SECONDS
                     If the lock is lost, COMMAND gets SIGTERM, then SIGKILL if it still runs
                     SECONDS later (0: at once). Default: 5.
  -q, --quiet        Say nothing about the lock on stderr (not obtained in time, lost, release
                     unconfirmed): the exit status tells. Errors are still reported.
  -v, --verbose      Show the ZooKeeper client's warnings and errors on stderr.
  -h, --help         Show this help.
  --version          Print "zklock VERSION" (on its own only).

Connecting: zklock gives up with exit code 69 if no ZooKeeper server answers within
10 seconds, or within --timeout if that is smaller (but never less than 3 seconds, so that
--timeout 0 still gets past one server that accepts connections but never answers). If
connecting used up --timeout, zklock still takes one look at the lock.

While COMMAND runs:
  COMMAND inherits zklock's standard streams and environment, plus
    ZKLOCK_FENCING_TOKEN  the lock's fencing token, "ZXID.N": greater for every later
                          holder of PATH (compare the two numbers, not the strings)
    ZKLOCK_NODE           the full path of zklock's lock node (PATH/_c_<uuid>-lock-<seq>)
  SIGINT, SIGTERM and SIGHUP sent to zklock are forwarded to COMMAND.
  If the lock is lost (session expired, lock node deleted by someone else, or the
  connection lost for longer than half the session timeout), COMMAND gets SIGTERM (and
  SIGKILL after --kill-after), zklock says why on stderr and exits 70 once COMMAND is gone.
  When COMMAND exits, the lock is released. If ZooKeeper does not confirm the release within
  2 seconds (a dead or frozen server), zklock says so and exits with COMMAND's status anyway:
  the lock node then stays until the session expires.

Interrupted while connecting or waiting (SIGINT, SIGTERM, SIGHUP): zklock withdraws from
the queue, closes its session (no lock node is left behind) and exits 128+signal.

Exit status:
  COMMAND's exit status, or 128+N if COMMAND was killed by signal N
  64   usage error: unknown option, missing COMMAND, invalid PATH, HOSTS or SECONDS
  69   no ZooKeeper server answered, or a host name cannot be resolved
  70   the lock was lost while COMMAND ran, or another internal error
  75   the lock was not obtained within --timeout
  126  COMMAND could not be executed; 127  COMMAND not found
  129, 130, 143  interrupted by SIGHUP, SIGINT, SIGTERM before COMMAND started
)";
}

bool quiet = false;  // -q: no messages about the lock itself

void say(const std::string& text) { std::cerr << "zklock: " << text << "\n"; }
void tell(const std::string& text)  // a message -q silences
{
    if (!quiet) say(text);
}

std::string seconds(milliseconds d)
{
    std::ostringstream out;
    out << static_cast<double>(d.count()) / 1000.0 << " s";
    return out.str();
}

// User input in a message: control and non-ASCII bytes as \xHH, and at most 100 bytes of it.
std::string shown(std::string_view s)
{
    std::string out;
    for (unsigned char c : s.substr(0, 100)) {
        if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
            continue;
        }
        char hex[5];
        std::snprintf(hex, sizeof hex, "\\x%02x", c);
        out += hex;
    }
    if (s.size() > 100) out += "... (" + std::to_string(s.size()) + " bytes)";
    return out;
}

int usage_error(const std::string& msg)
{
    std::cerr << "zklock: " << msg << "\n" << usage_line << "\nTry 'zklock --help' for more information.\n";
    return ex_usage;
}

// Seconds as a number: digits with an optional fraction or exponent (no sign, no hex, no inf or nan).
std::optional<milliseconds> parse_seconds(const std::string& v)
{
    if (v.empty() || !(std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '.')) return std::nullopt;
    if (v.find_first_of("xX") != std::string::npos) return std::nullopt;
    char* end = nullptr;
    errno = 0;
    const double secs = std::strtod(v.c_str(), &end);
    if (*end != '\0' || errno != 0 || !std::isfinite(secs) || secs < 0 || secs > 1e9) return std::nullopt;
    return milliseconds(static_cast<long long>(std::ceil(secs * 1000.0)));
}

struct options {
    std::string hosts;
    std::optional<milliseconds> timeout;
    milliseconds kill_after{5'000};
    bool verbose = false;
    std::string path;
    std::vector<std::string> command;
};

// Returns an exit code if the program should stop (help, version, usage error), else nullopt.
std::optional<int> parse(int argc, char** argv, options& o)
{
    std::string hosts_from = "ZKLOCK_HOSTS";
    if (const char* env = std::getenv("ZKLOCK_HOSTS"); env && *env) o.hosts = env;
    else o.hosts = "127.0.0.1:2181";
    int i = 1;
    auto value = [&](std::string_view arg, std::string_view name, std::string& out) -> std::optional<bool> {
        // --name VALUE or --name=VALUE; nullopt: not this option.
        if (arg == name) {
            if (i + 1 >= argc) return false;
            out = argv[++i];
            return true;
        }
        if (arg.size() > name.size() && arg.substr(0, name.size()) == name && arg[name.size()] == '=') {
            out = std::string(arg.substr(name.size() + 1));
            return true;
        }
        return std::nullopt;
    };
    for (; i < argc; ++i) {
        std::string_view a = argv[i];
        std::string v;
        if (a == "-h" || a == "--help") {
            print_help();
            return ex_ok;
        }
        if (a == "--version") {
            if (argc != 2) return usage_error("--version takes no other arguments");
            std::cout << "zklock " << ZKLOCK_VERSION << "\n";
            return ex_ok;
        }
        if (a == "-v" || a == "--verbose") {
            o.verbose = true;
            continue;
        }
        if (a == "-q" || a == "--quiet") {
            quiet = true;
            continue;
        }
        if (auto r = value(a, "--hosts", v)) {
            if (!*r) return usage_error("--hosts needs a value");
            o.hosts = v;
            hosts_from = "--hosts";
            continue;
        }
        if (auto r = value(a, "--timeout", v)) {
            if (!*r) return usage_error("--timeout needs a value");
            o.timeout = parse_seconds(v);
            if (!o.timeout)
                return usage_error("invalid --timeout '" + shown(v) + "': expected a number of seconds >= 0");
            continue;
        }
        if (auto r = value(a, "--kill-after", v)) {
            if (!*r) return usage_error("--kill-after needs a value");
            auto k = parse_seconds(v);
            if (!k) return usage_error("invalid --kill-after '" + shown(v) + "': expected a number of seconds >= 0");
            o.kill_after = *k;
            continue;
        }
        if (a == "--") {  // "--" before PATH: PATH may then start with '-' (it cannot, but be flock-like)
            ++i;
            break;
        }
        if (a.size() > 1 && a.front() == '-') return usage_error("unknown option '" + shown(a) + "'");
        break;
    }
    // Checked before connecting, so that a typo fails at once with 64 (and never reaches a server).
    if (std::string why; zklock::check_hosts(o.hosts, &why))
        return usage_error("invalid " + hosts_from + " '" + shown(o.hosts) + "': " + why);
    if (i >= argc) return usage_error("missing PATH");
    o.path = argv[i++];
    if (std::string why; zklock::check_path(o.path, &why))
        return usage_error("invalid PATH '" + shown(o.path) + "': " + why);
    if (o.path == "/") return usage_error("invalid PATH '/': the lock needs a node of its own below the root");
    if (i < argc && std::string_view(argv[i]) == "--") ++i;
    if (i >= argc) return usage_error("missing COMMAND");
    for (; i < argc; ++i) o.command.emplace_back(argv[i]);
    return std::nullopt;
}

// The child's environment: ours, with the two ZKLOCK_ variables set (replacing inherited ones).
std::vector<std::string> child_environment(const zklock::guard& g)
{
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
        std::string_view kv = *e;
        if (kv.starts_with("ZKLOCK_FENCING_TOKEN=") || kv.starts_with("ZKLOCK_NODE=")) continue;
        env.emplace_back(kv);
    }
    env.push_back("ZKLOCK_FENCING_TOKEN=" + g.token().to_string());
    env.push_back("ZKLOCK_NODE=" + g.node());
    return env;
}

std::vector<char*> c_strings(std::vector<std::string>& v)
{
    std::vector<char*> out;
    for (auto& s : v) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

// Reaps the child if it has exited: its exit code for zklock, else nullopt.
std::optional<int> reap(pid_t pid)
{
    int status = 0;
    pid_t r;
    do r = ::waitpid(pid, &status, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == 0) return std::nullopt;
    if (r < 0) return ex_software;  // ECHILD: should not happen
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return std::nullopt;  // stopped/continued: keep waiting
}

// Set when zklock gave up waiting for the session's close: main() then exits without joining the thread
// that still waits for the server (up to 4.5 s for a silent one).
bool close_unconfirmed = false;

// Closes the session and waits at most `limit` for the server to confirm it (its ephemeral nodes gone).
asio::awaitable<bool> close_within(zklock::session& s, milliseconds limit)
{
    auto wake = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor, limit);
    auto done = std::make_shared<bool>(false);
    s.async_close([wake, done](error_code) {
        *done = true;
        wake->cancel();
    });
    co_await wake->async_wait(asio::as_tuple(asio::use_awaitable));
    if (!*done) close_unconfirmed = true;
    co_return *done;
}

asio::awaitable<int> run(const options& o)
{
    auto ex = co_await asio::this_coro::executor;
    const auto started = std::chrono::steady_clock::now();
    // Registered first, so a signal that arrives at any point is ours (not the default action).
    asio::signal_set interrupts(ex, SIGINT, SIGTERM, SIGHUP);
    asio::signal_set sigchld(ex, SIGCHLD);

    zklock::session_config cfg;  // (designated initializers would trip -Wmissing-field-initializers)
    cfg.hosts = o.hosts;
    cfg.connect_timeout = max_connect_timeout;
    if (o.timeout) cfg.connect_timeout = std::clamp(*o.timeout, min_connect_timeout, max_connect_timeout);
    if (o.verbose) cfg.log = zklock::stderr_log_sink();
    zklock::session s(ex, cfg);

    // Whatever happens after this, close the session before exiting, so no node is left behind.
    auto close_and = [&](int code) -> asio::awaitable<int> {
        if (!co_await close_within(s, close_limit) && s.id() != 0)
            tell("ZooKeeper did not confirm the end of the session within " + seconds(close_limit) +
                 "; a node of it under " + o.path + " may stay until the session expires");
        co_return code;
    };

    // 1. Connect, unless interrupted.
    {
        auto r = co_await (s.async_connect(asio::as_tuple(asio::use_awaitable)) ||
                           interrupts.async_wait(asio::use_awaitable));
        if (r.index() == 1) co_return co_await close_and(128 + std::get<1>(r));
        auto [ec] = std::get<0>(r);
        if (ec == zklock::error::unresolvable_host) {
            say("cannot resolve a host name of '" + o.hosts + "': check the names and DNS (-v names it)");
            co_return co_await close_and(ex_unavailable);
        }
        if (ec == zklock::error::connect_timeout) {
            say("no ZooKeeper server answered at " + o.hosts + " within " + seconds(cfg.connect_timeout));
            co_return co_await close_and(ex_unavailable);
        }
        if (ec) {
            say("no ZooKeeper server answered at " + o.hosts + " (" + ec.message() + ")");
            co_return co_await close_and(ex_unavailable);
        }
    }

    // 2. Acquire, until the deadline (counted from the start: --timeout bounds the whole wait) or a signal.
    //    Giving up closes the session *first*: the server then drops our place in the queue (the
    //    ephemeral node) in one step, and the pending acquire completes with session_closed. (Cancelling the
    //    acquire instead would withdraw it request by request, and the session would still have to close.)
    zklock::mutex m(s, o.path);
    zklock::guard g;
    {
        struct race {
            std::optional<std::tuple<error_code, zklock::guard>> acquired;
            int signal = 0;
            bool timed_out = false;
        };
        auto st = std::make_shared<race>();
        asio::steady_timer wake(ex, asio::steady_timer::time_point::max());  // cancelled when the acquire completes
        asio::steady_timer deadline(ex);
        auto on_acquired = [st, &wake](error_code ec, zklock::guard gd) {
            st->acquired.emplace(ec, std::move(gd));
            wake.cancel();
        };
        if (o.timeout && std::chrono::steady_clock::now() >= started + *o.timeout) {
            m.try_acquire(on_acquired);  // --timeout 0, or connecting used it up: one look
        } else {
            m.acquire(on_acquired);
            if (o.timeout) {
                deadline.expires_at(started + *o.timeout);
                deadline.async_wait([st, &s](error_code ec) {
                    if (ec || st->acquired) return;
                    st->timed_out = true;
                    s.close();
                });
            }
        }
        interrupts.async_wait([st, &s](error_code ec, int sig) {
            if (ec || st->acquired) return;
            st->signal = sig;
            s.close();
        });
        while (!st->acquired) co_await wake.async_wait(asio::as_tuple(asio::use_awaitable));
        deadline.cancel();
        interrupts.cancel();  // a signal arriving from now on waits for the next async_wait

        error_code ec;
        std::tie(ec, g) = std::move(*st->acquired);
        // (A guard won at the last moment goes with the closed session.)
        if (st->signal) co_return co_await close_and(128 + st->signal);
        if (st->timed_out || ec == zklock::error::timeout) {
            tell(o.path + " is locked by someone else; gave up after " +
                 seconds(o.timeout.value_or(milliseconds::zero())));
            co_return co_await close_and(ex_tempfail);
        }
        if (ec) {
            say("cannot lock " + o.path + ": " + ec.message());
            co_return co_await close_and(ex_software);
        }
    }

    // 3. Run COMMAND while holding the lock.
    const std::string node = g.node();
    auto env = child_environment(g);
    auto envp = c_strings(env);
    auto args = o.command;
    auto argv = c_strings(args);
    pid_t pid = 0;
    if (int err = ::posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data()); err != 0) {
        say("cannot run " + o.command[0] + ": " + std::strerror(err));
        g = {};  // released in the background; closing the session waits for it
        co_return co_await close_and(err == ENOENT ? ex_notfound : ex_noexec);
    }

    std::optional<int> status = reap(pid);  // it may have exited before SIGCHLD was waited for
    error_code lost;
    bool watching_loss = true;
    auto child_gone = std::make_shared<bool>(false);
    asio::steady_timer killer(ex);  // SIGKILL, --kill-after the SIGTERM of a loss
    while (!status) {
        if (watching_loss) {
            auto r = co_await (sigchld.async_wait(asio::as_tuple(asio::use_awaitable)) ||
                               interrupts.async_wait(asio::as_tuple(asio::use_awaitable)) ||
                               g.async_wait_lost(asio::as_tuple(asio::use_awaitable)));
            if (r.index() == 1) {
                auto [sec, sig] = std::get<1>(r);
                if (!sec) ::kill(pid, sig);
            } else if (r.index() == 2) {
                auto [wec, why] = std::get<2>(r);
                if (!wec) {  // success means lost; an error means released or cancelled
                    lost = why;
                    tell("lock " + o.path + " lost while COMMAND ran (" + why.message() + "); sending SIGTERM to " +
                         o.command[0] + " (pid " + std::to_string(pid) + ")");
                    ::kill(pid, SIGTERM);
                    killer.expires_after(o.kill_after);
                    killer.async_wait([child_gone, pid, after = seconds(o.kill_after)](error_code kec) {
                        if (kec || *child_gone) return;
                        tell("pid " + std::to_string(pid) + " still runs " + after + " after SIGTERM; sending SIGKILL");
                        ::kill(pid, SIGKILL);
                    });
                }
                watching_loss = false;
            }
        } else {
            auto r = co_await (sigchld.async_wait(asio::as_tuple(asio::use_awaitable)) ||
                               interrupts.async_wait(asio::as_tuple(asio::use_awaitable)));
            if (r.index() == 1) {
                auto [sec, sig] = std::get<1>(r);
                if (!sec) ::kill(pid, sig);
            }
        }
        status = reap(pid);
    }
    *child_gone = true;
    killer.cancel();

    // 4. Release (deletes the node at once, so the next waiter need not wait for the session to close), but
    //    wait for ZooKeeper's word at most release_limit: a cancelled release goes on in the background.
    asio::steady_timer limit(ex, release_limit);
    auto r = co_await (g.release(asio::as_tuple(asio::use_awaitable)) ||
                       limit.async_wait(asio::as_tuple(asio::use_awaitable)));
    if (r.index() == 1) {
        tell("ZooKeeper did not confirm the release of " + o.path + " within " + seconds(release_limit) +
             "; the lock node " + node + " is left until the session expires (" + seconds(s.negotiated_timeout()) +
             " after ZooKeeper last heard from zklock)");
        co_await close_within(s, close_limit / 4);  // the server is silent: only let the close go out
        co_return lost ? ex_software : *status;
    }
    auto [rel] = std::get<0>(r);
    if (!lost && rel && rel != zklock::error::not_held) {
        // The loss was noticed only now: COMMAND ran (at least at its end) without the lock.
        lost = rel;
        tell("lock " + o.path + " was lost before COMMAND exited (" + rel.message() + ")");
    }
    co_return co_await close_and(lost ? ex_software : *status);
}

}  // namespace

int main(int argc, char** argv)
{
    options o;
    if (auto code = parse(argc, argv, o)) return *code;
    int code = ex_software;
    try {
        asio::io_context ioc;
        asio::co_spawn(ioc, run(o), [&](std::exception_ptr e, int c) {
            ioc.stop();  // an unconfirmed close may still hold work on the io_context
            if (!e) {
                code = c;
                return;
            }
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                say(x.what());
            }
            code = ex_software;
        });
        ioc.run();
    } catch (const std::exception& x) {
        say(x.what());
        return ex_software;
    }
    if (close_unconfirmed) {  // a helper thread still waits for a silent server: do not join it
        std::cout.flush();
        std::cerr.flush();
        std::_Exit(code);
    }
    return code;
}
