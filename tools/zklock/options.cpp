#include "options.hpp"

#include "exit_codes.hpp"
#include "messages.hpp"

#include <zklock/validation.hpp>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string_view>

// The project's version, project(zklock VERSION ...) in CMakeLists.txt, which does not pass it to this
// program: kept in step by hand (the CLI test compares the two), unless the build defines it.
#ifndef ZKLOCK_VERSION
#define ZKLOCK_VERSION "0.1.0"
#endif

namespace zklock_cli {
namespace {

using std::chrono::milliseconds;

const char* const usage_line = "usage: zklock [OPTIONS] PATH -- COMMAND [ARG...]\n"
                               "       zklock [OPTIONS] -c 'SHELL COMMAND' PATH\n"
                               "       zklock [OPTIONS] PATH   (no COMMAND: print the token, hold until stdin ends)\n"
                               "       zklock [OPTIONS] elect [--id ID] [--style S] [--again] PATH -- COMMAND [ARG...]\n"
                               "       zklock [--hosts HOSTS] leader [--watch] PATH\n"
                               "       zklock [--hosts HOSTS] ls|stat [--json] PATH\n"
                               "       zklock [--hosts HOSTS] revoke|break PATH";

void print_help()
{
    std::cout << usage_line << R"(

Runs COMMAND (with -c, a shell command; without either, see "Without COMMAND" below) while
holding the ZooKeeper lock at PATH: flock(1) for a cluster. The lock is the mutex recipe
of Curator's InterProcessMutex (an ephemeral sequential node under PATH), so zklock,
Curator and other zklock programs exclude one another on the same PATH. With
--read or --write it is one side of Curator's InterProcessReadWriteLock on PATH, with
--limit N a semaphore of N permits compatible with Curator's InterProcessSemaphoreV2.
A PATH holding another kind of lock's nodes is refused (exit 70): the kinds would not
exclude one another.
PATH is a ZooKeeper path other than "/": absolute, no trailing slash, no empty, '.' or '..'
part, valid UTF-8 without control characters, at most 32,704 bytes to take a lock (its nodes
go below it and must fit in ZooKeeper's 32 KiB) and 32 KiB for ls, revoke and break.

Options:
  --hosts HOSTS      ZooKeeper servers, "host:port[,host:port...][/chroot]", ports 1 to 65535.
                     Default: $ZKLOCK_HOSTS, else 127.0.0.1:2181.
  --read             Take the read side of the read/write lock at PATH: shared with other
                     readers, never with a writer (a reader queues behind a waiting writer).
  --write            Take the write side of the read/write lock at PATH: exclusive.
  --limit N          Take one of the N permits of the semaphore at PATH (N from 1 to 1000000;
                     every user of PATH must give the same N: zklock warns when
                     another zklock holder of PATH gave another).
  --timeout SECONDS  Give up (exit 75, or -E's N) if the lock is not held SECONDS after zklock
                     started: connecting counts against it (fractions allowed; 0: one look,
                     give up at once if someone else holds it). Default: wait forever.
  -n, --nonblock     The same as --timeout 0 (flock's -n); not together with --timeout.
  --session-timeout SECONDS
                     The ZooKeeper session timeout to ask for (1 to 86400, fractions allowed;
                     default 10). The server bounds it (by default to 2 to 20 of its ticks: 4
                     to 40 seconds). If zklock dies without a word, its node goes this long
                     after; cut off from ZooKeeper, it takes the lock as lost after half of it.
  -E, --conflict-exit-code N
                     Exit with N (0 to 255) instead of 75 when the lock is not obtained in time
                     (flock's -E). The message on stderr stays (-q silences it).
  -c, --command STRING
                     Run STRING with /bin/sh -c instead of COMMAND (flock's -c); not together
                     with -- COMMAND. The shell and all it runs are COMMAND's job (below).
  --lease SECONDS    Hold the lock at most SECONDS (fractions allowed, > 0): when the lease
                     runs out zklock releases the lock, its job gets SIGTERM (then SIGKILL
                     after --kill-after), and zklock exits 70 saying "lease expired". The
                     deadline is written into the lock node, where "zklock ls" shows it.
  --kill-after SECONDS
                     If the lock is lost, COMMAND's job gets SIGTERM, then SIGKILL if any of it
                     still runs SECONDS later (0: at once). Default: 5.
  --on-revoke ACTION What to do when someone asks zklock to let go ("zklock revoke PATH",
                     Curator's revocation):
                       ignore   keep the lock until COMMAND exits (the default);
                       release  stop COMMAND's job as a lost lock does (SIGTERM, SIGKILL after
                                --kill-after), release the lock and exit 70 saying "revoked";
                                without COMMAND, release and exit 70;
                       signal   send SIGUSR1 to COMMAND's job, once, and keep the lock until
                                COMMAND exits (a COMMAND that does not trap SIGUSR1 dies of it).
                     Not for elect.
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
    ZKLOCK_NODE           the full path of zklock's lock node (PATH/_c_<uuid>-lock-<seq>;
                          __READ__ or __WRIT__ instead of lock-; PATH/leases/_c_<uuid>-lease-<seq>)
  COMMAND runs in a process group of its own, its job: COMMAND and all it starts there (on
  a terminal, the job is in the foreground while it runs). SIGINT, SIGTERM and SIGHUP sent
  to zklock are forwarded to the whole job. The job never outlives zklock: if zklock dies,
  even by SIGKILL, COMMAND gets SIGKILL from the kernel and the rest of the job from a
  watchdog process ("zklock-watchdog"), so it never runs on without the lock.
  If the lock is lost (session expired, lock node deleted by someone else, or the
  connection lost for longer than half the session timeout), the job gets SIGTERM (and
  SIGKILL after --kill-after), zklock says why on stderr and exits 70 once all of the job
  is gone. When COMMAND exits, the lock is released; what COMMAND left running in its job
  is not waited for (a daemon should leave the job: setsid). If ZooKeeper does not confirm
  the release within 2 seconds (a dead or frozen server), zklock says so and exits with
  COMMAND's status anyway: the lock node then stays until the session expires.

Without COMMAND (zklock [OPTIONS] PATH: no -- COMMAND, no -c):
  Once the lock is held, zklock prints its fencing token (as ZKLOCK_FENCING_TOKEN) and a
  newline on stdout, then holds the lock until its stdin reaches end of file or it gets
  SIGINT, SIGTERM or SIGHUP; it then releases the lock and exits 0. A stdin that is
  /dev/null, a regular file or closed ends at once: the lock is released as soon as it is
  held. (A shell script's "zklock PATH &" gets /dev/null as stdin: give it a pipe, e.g.
  bash's coproc.) If the lock is lost meanwhile, zklock says why on stderr and exits 70.

Operators' actions (on any lock at PATH: mutex, read/write lock or semaphore; zklock's,
Curator's or kazoo's nodes):
  ls PATH       Print the holders, then the waiters in order: one line each with the role
                (mutex, read, write, permit, waiter), HOLDS or WAITS, the node, its owner
                (the node's data: zklock's owner identity, Curator's client address), its
                age, and the lease left (by this machine's clock: an estimate). Exit 0.
  ls --json PATH
                The same as a JSON array: one object per node, with role, holds, node,
                owner, age_ms, lease_left_ms (null: no lease), revoke_requested and
                session_id.
  stat [--json] PATH
                The queue in figures: holders, waiters, the oldest hold, the least lease
                left, the longest wait, and whether a revocation was requested (times by
                this machine's clock; "-", or null, where there is none). Exit 0.
  revoke PATH   Ask every holder to let go (Curator's revocation: "__REVOKE__" written into
                its node; a holder decides, a zklock holder by its --on-revoke). Exit 0, or
                1 if nobody holds PATH.
  break PATH    Delete every holder's node by force (an operator's last resort: the holder
                is told through its loss signal; a zklock holder's job gets SIGTERM).
                Prints what it removed. Exit 0, or 1 if nobody holds PATH.

Leader election (by default Curator's LeaderSelector on the same PATH: zklock and Curator
candidates take turns, and each names the same leader):
  elect [--id ID] [--style selector|latch|kazoo] [--again] PATH -- COMMAND
                Campaign at PATH as participant ID (default: HOSTNAME:PID; one line of text)
                and run COMMAND while leading, with the options and environment above
                (--timeout bounds the campaign). If leadership is lost, COMMAND gets
                SIGTERM (SIGKILL after --kill-after) and zklock exits 70 saying why. When
                COMMAND exits, zklock resigns: the next candidate leads at once. With
                --again (COMMAND required) zklock campaigns again after every term, as a
                supervisor would (a term shorter than a second is followed by a second's
                pause), until it gets SIGINT, SIGTERM or SIGHUP. --style latch campaigns
                beside Curator's LeaderLatch, --style kazoo beside kazoo's Election.
  leader [--watch] PATH
                Print who leads PATH: "ID TOKEN" (the term's fencing token), exit 0; or
                nothing, "nobody leads" on stderr and exit 1. With --watch, print a line
                at every change ("-" while nobody leads) until SIGINT, SIGTERM or SIGHUP
                (exit 0). Reads zklock's, Curator's and kazoo's elections.
  "zklock ls PATH" lists an election's candidates, their ids as OWNER, the leader HOLDS.

Interrupted while connecting or waiting (SIGINT, SIGTERM, SIGHUP): zklock withdraws from
the queue, closes its session (no lock node is left behind) and exits 128+signal.

Exit status:
  COMMAND's exit status, or 128+N if COMMAND was killed by signal N
  0    without COMMAND: the lock was held and released (end of stdin, or a signal)
  1    revoke or break: nobody holds PATH
  64   usage error: unknown option, "--" without COMMAND, invalid PATH, HOSTS, SECONDS
       or N, -c with COMMAND or empty, -n with --timeout
  69   no ZooKeeper server answered, a host name cannot be resolved, or the session
       expired while waiting for the lock or the leadership
  70   the lock was lost while COMMAND ran (or while held without COMMAND), its --lease
       expired, or another internal error
  75   the lock was not obtained within --timeout (or at once with -n): -E N changes it
  126  COMMAND could not be executed; 127  COMMAND not found
  129, 130, 143  interrupted by SIGHUP, SIGINT, SIGTERM before the lock was held
)";
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

// An exit code: 1 to 3 digits, 0 to 255 (what a process can exit with).
std::optional<int> parse_exit_code(const std::string& v)
{
    if (v.empty() || v.size() > 3 || v.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    const int n = std::stoi(v);
    if (n > 255) return std::nullopt;
    return n;
}

}  // namespace

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
    // -X VALUE or -XVALUE (getopt's forms for flock's -E and -c); nullopt: not this option.
    auto short_value = [&](std::string_view arg, std::string_view name, std::string& out) -> std::optional<bool> {
        if (arg == name) {
            if (i + 1 >= argc) return false;
            out = argv[++i];
            return true;
        }
        if (arg.size() > name.size() && arg.starts_with(name)) {
            out = std::string(arg.substr(name.size()));
            return true;
        }
        return std::nullopt;
    };
    // The spelling the user gave, for messages ("-E" or "--conflict-exit-code").
    auto spelled = [](std::string_view arg) { return std::string(arg.substr(0, arg.find('='))); };
    const char* timeout_from = nullptr;  // --timeout or -n, which cannot be combined
    std::optional<std::string> shell;    // -c STRING
    std::string shell_from;
    const char* mode_from = nullptr;  // the option that chose the lock's kind
    auto set_mode = [&](lock_mode m, const char* name) -> std::optional<int> {
        if (mode_from) return usage_error(std::string(name) + " and " + mode_from + " cannot be combined: one lock kind");
        mode_from = name;
        o.mode = m;
        return std::nullopt;
    };
    for (; i < argc; ++i) {
        std::string_view a = argv[i];
        std::string v;
        if (a == "--read" || a == "--write") {
            if (auto r = set_mode(a == "--read" ? lock_mode::read : lock_mode::write, a == "--read" ? "--read" : "--write")) return r;
            continue;
        }
        if (auto r = value(a, "--limit", v)) {
            if (!*r) return usage_error("--limit needs a value");
            if (auto e = set_mode(lock_mode::limit, "--limit")) return e;
            const bool digits = !v.empty() && v.size() <= 7 && v.find_first_not_of("0123456789") == std::string::npos;
            o.limit = digits ? std::stoul(v) : 0;
            if (o.limit < 1 || o.limit > 1'000'000)
                return usage_error("invalid --limit '" + shown(v) + "': expected a whole number of permits from 1 to 1000000");
            continue;
        }
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
            if (timeout_from && std::string_view(timeout_from) != "--timeout")
                return usage_error(std::string("--timeout and ") + timeout_from +
                                   " cannot be combined: " + timeout_from + " is --timeout 0");
            timeout_from = "--timeout";
            o.timeout = parse_seconds(v);
            if (!o.timeout)
                return usage_error("invalid --timeout '" + shown(v) + "': expected a number of seconds >= 0");
            continue;
        }
        if (auto r = value(a, "--session-timeout", v)) {
            if (!*r) return usage_error("--session-timeout needs a value");
            const auto t = parse_seconds(v);
            if (!t || *t < std::chrono::seconds(1) || *t > std::chrono::hours(24))
                return usage_error("invalid --session-timeout '" + shown(v) +
                                   "': expected a number of seconds from 1 to 86400");
            o.session_timeout = *t;
            continue;
        }
        if (a == "-n" || a == "--nonblock") {
            const char* name = a == "-n" ? "-n" : "--nonblock";
            if (timeout_from && std::string_view(timeout_from) == "--timeout")
                return usage_error(std::string(name) + " and --timeout cannot be combined: " + name +
                                   " is --timeout 0");
            timeout_from = name;
            o.timeout = milliseconds::zero();
            continue;
        }
        if (auto r = a.starts_with("--") ? value(a, "--conflict-exit-code", v) : short_value(a, "-E", v)) {
            const auto name = spelled(a.starts_with("--") ? a : a.substr(0, 2));
            if (!*r) return usage_error(name + " needs a value");
            const auto code = parse_exit_code(v);
            if (!code)
                return usage_error("invalid " + name + " '" + shown(v) + "': expected an exit code from 0 to 255");
            o.conflict_exit_code = *code;
            continue;
        }
        if (auto r = a.starts_with("--") ? value(a, "--command", v) : short_value(a, "-c", v)) {
            shell_from = spelled(a.starts_with("--") ? a : a.substr(0, 2));
            if (!*r) return usage_error(shell_from + " needs a value: a shell command");
            if (v.empty()) return usage_error(shell_from + " '' is empty: expected a shell command");
            shell = v;
            continue;
        }
        if (auto r = value(a, "--lease", v)) {
            if (!*r) return usage_error("--lease needs a value");
            o.lease = parse_seconds(v);
            if (!o.lease || *o.lease <= milliseconds::zero())
                return usage_error("invalid --lease '" + shown(v) + "': expected a number of seconds > 0");
            continue;
        }
        if (auto r = value(a, "--kill-after", v)) {
            if (!*r) return usage_error("--kill-after needs a value");
            auto k = parse_seconds(v);
            if (!k) return usage_error("invalid --kill-after '" + shown(v) + "': expected a number of seconds >= 0");
            o.kill_after = *k;
            continue;
        }
        if (auto r = value(a, "--on-revoke", v)) {
            if (!*r) return usage_error("--on-revoke needs a value: ignore, release or signal");
            if (v == "ignore") o.on_revoke = revoke_action::ignore;
            else if (v == "release") o.on_revoke = revoke_action::release;
            else if (v == "signal") o.on_revoke = revoke_action::signal;
            else return usage_error("invalid --on-revoke '" + shown(v) + "': expected ignore, release or signal");
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
    // An election's verbs, with their own options between the verb and PATH.
    if (const std::string_view verb = argv[i]; verb == "elect" || verb == "leader") {
        o.what = verb == "elect" ? action::elect : action::leader;
        for (++i; i < argc; ++i) {
            const std::string_view a = argv[i];
            std::string v;
            if (auto r = o.what == action::elect ? value(a, "--id", v) : std::nullopt) {
                if (!*r) return usage_error("--id needs a value");
                if (v.empty() || v.find_first_of("\r\n") != std::string::npos || v == "__REVOKE__")
                    return usage_error("invalid --id '" + shown(v) + "': expected one line of text (not __REVOKE__)");
                o.id = v;
            } else if (auto st = o.what == action::elect ? value(a, "--style", v) : std::nullopt) {
                if (!*st || (v != "selector" && v != "latch" && v != "kazoo"))
                    return usage_error("invalid --style '" + shown(v) + "': expected selector, latch or kazoo");
                o.style = v;
            } else if (a == "--again" && o.what == action::elect) {
                o.again = true;
            } else if (a == "--watch" && o.what == action::leader) {
                o.watch = true;
            } else if (a.size() > 1 && a.front() == '-') {
                return usage_error("unknown option '" + shown(a) + "' for '" + std::string(verb) + "'");
            } else {
                break;
            }
        }
        if (i >= argc) return usage_error("missing PATH after '" + std::string(verb) + "'");
        if (o.what == action::leader) {
            if (i + 1 < argc) return usage_error("'leader PATH' takes no COMMAND");
            if (shell) return usage_error("-c cannot be combined with 'leader'");
        }
    }
    // An operator's action before PATH (a PATH starts with '/', so these cannot be one).
    if (const std::string_view verb = argv[i]; verb == "ls" || verb == "stat" || verb == "revoke" || verb == "break") {
        o.what = verb == "ls"       ? action::list
                 : verb == "stat"   ? action::stat
                 : verb == "revoke" ? action::revoke
                                    : action::force_break;
        if (++i < argc && std::string_view(argv[i]) == "--json") {
            if (o.what != action::list && o.what != action::stat)
                return usage_error("--json is for 'ls' and 'stat', not for '" + std::string(verb) + "'");
            o.json = true;
            ++i;
        }
        if (i >= argc) return usage_error("missing PATH after '" + std::string(verb) + "'");
        if (i + 1 < argc) return usage_error("'" + std::string(verb) + " PATH' takes no COMMAND");
        if (shell) return usage_error("-c cannot be combined with '" + std::string(verb) + "'");
    }
    if (o.on_revoke != revoke_action::ignore && o.what != action::lock)
        return usage_error(std::string("--on-revoke is for taking a lock, not for '") +
                           (o.what == action::elect    ? "elect"
                            : o.what == action::leader ? "leader"
                            : o.what == action::list   ? "ls"
                            : o.what == action::stat   ? "stat"
                            : o.what == action::revoke ? "revoke"
                                                       : "break") +
                           "'");
    o.path = argv[i++];
    // A lock's nodes go below PATH, so PATH itself has less room; the operators' actions only read it.
    const bool locks = o.what == action::lock || o.what == action::elect;
    if (std::string why; locks ? zklock::check_lock_path(o.path, &why) : zklock::check_path(o.path, &why))
        return usage_error("invalid PATH '" + shown(o.path) + "': " + why);
    if (o.path == "/") return usage_error("invalid PATH '/': the lock needs a node of its own below the root");
    if (shell) {
        // One command only: a STRING and a COMMAND would leave the user guessing which runs.
        if (i < argc) return usage_error(shell_from + " and COMMAND cannot be combined: give one command");
        o.command = {"/bin/sh", "-c", *shell};
        return std::nullopt;
    }
    if (i >= argc) {  // no COMMAND: hold the lock until stdin ends
        if (o.again) return usage_error("--again needs a COMMAND to run in every term");
        if (o.on_revoke == revoke_action::signal) return usage_error("--on-revoke signal needs a COMMAND to signal");
        return std::nullopt;
    }
    // "PATH --" with nothing after is a COMMAND forgotten, not a request to hold without one.
    if (std::string_view(argv[i]) == "--" && ++i >= argc) return usage_error("missing COMMAND after '--'");
    for (; i < argc; ++i) o.command.emplace_back(argv[i]);
    return std::nullopt;
}

}  // namespace zklock_cli
