// zklock: flock(1) for a cluster. Holds a ZooKeeper lock while a command runs.
//
//   zklock [--hosts HOSTS] [--timeout SECONDS] PATH -- COMMAND [ARG...]
//
// One process, one io_context, one coroutine: connect, acquire (racing SIGINT/SIGTERM/SIGHUP), spawn the
// command, then wait for whichever comes first of: the child's exit (SIGCHLD), a signal to forward, or the
// loss of the lock. The session is pumped by the same io_context the whole time, so it keeps its
// heartbeats while the command runs. See usage() for the exit codes.
#include <zklock/config.hpp>
#include <zklock/error.hpp>
#include <zklock/guard.hpp>
#include <zklock/mutex.hpp>
#include <zklock/session.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
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

namespace {

namespace asio = boost::asio;
using namespace boost::asio::experimental::awaitable_operators;
using boost::system::error_code;
using std::chrono::milliseconds;

// sysexits.h values, spelled out (and documented in usage()).
constexpr int ex_ok = 0;
constexpr int ex_usage = 64;        // EX_USAGE: bad options, invalid PATH or host string
constexpr int ex_unavailable = 69;  // EX_UNAVAILABLE: no ZooKeeper server answered
constexpr int ex_software = 70;     // EX_SOFTWARE: the lock was lost while COMMAND ran, other errors
constexpr int ex_tempfail = 75;     // EX_TEMPFAIL: the lock was not obtained in time
constexpr int ex_noexec = 126;      // COMMAND found but not executable (as env(1), timeout(1))
constexpr int ex_notfound = 127;    // COMMAND not found

constexpr milliseconds max_connect_timeout{10'000};
constexpr milliseconds min_connect_timeout{2'000};

const char* const usage_line = "usage: zklock [--hosts HOSTS] [--timeout SECONDS] PATH -- COMMAND [ARG...]";

void print_help()
{
    std::cout << usage_line << R"(

Runs COMMAND while holding the ZooKeeper lock at PATH: flock(1) for a cluster. The lock is
the mutex recipe of Curator's InterProcessMutex (an ephemeral sequential node under PATH),
so zklock, Curator and other zklock programs exclude one another on the same PATH.

Options:
  --hosts HOSTS      ZooKeeper servers, "host:port[,host:port...][/chroot]".
                     Default: $ZKLOCK_HOSTS, else 127.0.0.1:2181.
  --timeout SECONDS  Give up if the lock is not held after SECONDS (fractions allowed;
                     0: try once and give up at once if someone else holds it).
                     The time to connect counts against it. Default: wait forever.
  -v, --verbose      Show the ZooKeeper client's warnings and errors on stderr.
  -h, --help         Show this help.

Connecting: zklock gives up with exit code 69 if no ZooKeeper server answers within
10 seconds, or within --timeout if that is smaller (but never less than 2 seconds, so that
--timeout 0 still reaches a healthy server).

While COMMAND runs:
  COMMAND inherits zklock's standard streams and environment, plus
    ZKLOCK_FENCING_TOKEN  the lock's fencing token, "ZXID.N": greater for every later
                          holder of PATH (compare the two numbers, not the strings)
    ZKLOCK_NODE           the full path of zklock's lock node (PATH/_c_<uuid>-lock-<seq>)
  SIGINT, SIGTERM and SIGHUP sent to zklock are forwarded to COMMAND.
  If the lock is lost (session expired, lock node deleted by someone else, or the
  connection lost for longer than a sixth of the session timeout), COMMAND gets SIGTERM,
  zklock says why on stderr and exits 70 once COMMAND has exited.
  When COMMAND exits, the lock is released.

Interrupted while connecting or waiting (SIGINT, SIGTERM, SIGHUP): zklock withdraws from
the queue, closes its session (no lock node is left behind) and exits 128+signal.

Exit status:
  COMMAND's exit status, or 128+N if COMMAND was killed by signal N
  64   usage error: unknown option, missing COMMAND, invalid PATH or HOSTS
  69   no ZooKeeper server answered
  70   the lock was lost while COMMAND ran, or another internal error
  75   the lock was not obtained within --timeout
  126  COMMAND could not be executed; 127  COMMAND not found
  130, 143, 129  interrupted by SIGINT, SIGTERM, SIGHUP before COMMAND started
)";
}

int usage_error(const std::string& msg)
{
    std::cerr << "zklock: " << msg << "\n" << usage_line << "\nTry 'zklock --help' for more information.\n";
    return ex_usage;
}

// The rules ZooKeeper applies to a path (checked before connecting, so a typo fails fast with 64).
bool valid_lock_path(std::string_view p)
{
    if (p.size() < 2 || p.front() != '/' || p.back() == '/') return false;
    std::size_t start = 1;
    while (start <= p.size()) {
        auto end = std::min(p.find('/', start), p.size());
        auto part = p.substr(start, end - start);
        if (part.empty() || part == "." || part == "..") return false;
        for (char c : part)
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
        start = end + 1;
    }
    return true;
}

struct options {
    std::string hosts;
    std::optional<milliseconds> timeout;
    bool verbose = false;
    std::string path;
    std::vector<std::string> command;
};

// Returns an exit code if the program should stop (help, usage error), else nullopt.
std::optional<int> parse(int argc, char** argv, options& o)
{
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
        if (a == "-v" || a == "--verbose") {
            o.verbose = true;
            continue;
        }
        if (auto r = value(a, "--hosts", v)) {
            if (!*r) return usage_error("--hosts needs a value");
            if (v.empty()) return usage_error("--hosts must not be empty");
            o.hosts = v;
            continue;
        }
        if (auto r = value(a, "--timeout", v)) {
            if (!*r) return usage_error("--timeout needs a value");
            char* end = nullptr;
            errno = 0;
            double secs = std::strtod(v.c_str(), &end);
            if (v.empty() || *end != '\0' || errno != 0 || !std::isfinite(secs) || secs < 0 || secs > 1e9)
                return usage_error("invalid --timeout '" + v + "': expected a number of seconds >= 0");
            o.timeout = milliseconds(static_cast<long long>(std::ceil(secs * 1000.0)));
            continue;
        }
        if (a == "--") {  // "--" before PATH: PATH may then start with '-' (it cannot, but be flock-like)
            ++i;
            break;
        }
        if (a.size() > 1 && a.front() == '-') return usage_error("unknown option '" + std::string(a) + "'");
        break;
    }
    if (i >= argc) return usage_error("missing PATH");
    o.path = argv[i++];
    if (!valid_lock_path(o.path))
        return usage_error("invalid PATH '" + o.path +
                           "': it must be absolute, without a trailing slash, empty, '.' or '..' parts");
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

double seconds(milliseconds d) { return static_cast<double>(d.count()) / 1000.0; }

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
        co_await s.async_close(asio::as_tuple(asio::use_awaitable));
        co_return code;
    };

    // 1. Connect, unless interrupted.
    {
        auto r = co_await (s.async_connect(asio::as_tuple(asio::use_awaitable)) ||
                           interrupts.async_wait(asio::use_awaitable));
        if (r.index() == 1) co_return co_await close_and(128 + std::get<1>(r));
        auto [ec] = std::get<0>(r);
        if (ec == zklock::error::invalid_hosts) {
            std::cerr << "zklock: invalid host string '" << o.hosts << "'\n";
            co_return co_await close_and(ex_usage);
        }
        if (ec == zklock::error::connect_timeout) {
            std::cerr << "zklock: no ZooKeeper server answered at " << o.hosts << " within "
                      << seconds(cfg.connect_timeout) << " s\n";
            co_return co_await close_and(ex_unavailable);
        }
        if (ec) {
            // (With nothing listening at all, the library currently reports session_expired at once.)
            std::cerr << "zklock: no ZooKeeper server answered at " << o.hosts << " (" << ec.message() << ")\n";
            co_return co_await close_and(ex_unavailable);
        }
    }

    // 2. Acquire, until the deadline or a signal. Giving up closes the session *first*: the server then
    //    drops our place in the queue (the ephemeral node) in one step, and the pending acquire completes
    //    with session_closed. (Cancelling the acquire instead would withdraw it request by request, and
    //    the process would still have to close its session afterwards.)
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
        if (o.timeout && *o.timeout == milliseconds::zero()) {
            m.try_acquire(on_acquired);  // one look: completes at once if someone is ahead
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
        if (st->signal) {
            if (!ec) co_await g.release(asio::as_tuple(asio::use_awaitable));
            co_return co_await close_and(128 + st->signal);
        }
        if (st->timed_out || ec == zklock::error::timeout) {
            if (!ec) co_await g.release(asio::as_tuple(asio::use_awaitable));  // won the lock at the last moment
            std::cerr << "zklock: " << o.path << " is locked by someone else; gave up after "
                      << seconds(o.timeout.value_or(milliseconds::zero())) << " s\n";
            co_return co_await close_and(ex_tempfail);
        }
        if (ec == zklock::error::invalid_path) {
            std::cerr << "zklock: invalid PATH '" << o.path << "': " << ec.message() << "\n";
            co_return co_await close_and(ex_usage);
        }
        if (ec) {
            std::cerr << "zklock: cannot lock " << o.path << ": " << ec.message() << "\n";
            co_return co_await close_and(ex_software);
        }
    }

    // 3. Run COMMAND while holding the lock.
    auto env = child_environment(g);
    auto envp = c_strings(env);
    auto args = o.command;
    auto argv = c_strings(args);
    pid_t pid = 0;
    if (int err = ::posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data()); err != 0) {
        std::cerr << "zklock: cannot run " << o.command[0] << ": " << std::strerror(err) << "\n";
        co_await g.release(asio::as_tuple(asio::use_awaitable));
        co_return co_await close_and(err == ENOENT ? ex_notfound : ex_noexec);
    }

    std::optional<int> status = reap(pid);  // it may have exited before SIGCHLD was waited for
    error_code lost;
    bool watching_loss = true;
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
                    std::cerr << "zklock: lock " << o.path << " lost while COMMAND ran (" << why.message()
                              << "); sending SIGTERM to " << o.command[0] << " (pid " << pid << ")\n";
                    ::kill(pid, SIGTERM);
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

    // 4. Release (deletes the node at once, so the next waiter need not wait for the session to close).
    auto [rel] = co_await g.release(asio::as_tuple(asio::use_awaitable));
    if (!lost && rel && rel != zklock::error::not_held) {
        // The loss was noticed only now: COMMAND ran (at least at its end) without the lock.
        lost = rel;
        std::cerr << "zklock: lock " << o.path << " was lost before COMMAND exited (" << rel.message() << ")\n";
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
            if (!e) {
                code = c;
                return;
            }
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                std::cerr << "zklock: " << x.what() << "\n";
            }
            code = ex_software;
        });
        ioc.run();
    } catch (const std::exception& x) {
        std::cerr << "zklock: " << x.what() << "\n";
        return ex_software;
    }
    return code;
}
