// How a session connects: hosts, timeouts, credentials, and where the C client's log goes.
#pragma once

#include <zklock/lock_event.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zklock {

enum class log_level { error = 1, warning = 2, info = 3, debug = 4 };

/// Receives the ZooKeeper C client's log lines (and zklock's own), on the session's executor
/// or on the helper thread that opens and closes the handle. The session keeps a copy of the sink until
/// that thread has closed the handle, which can be after the session object is destroyed: a sink owns
/// (or shares) what it writes to, and guards it if it is also read elsewhere.
using log_sink = std::function<void(log_level, std::string_view)>;

/// Turns one entry of session_config::hosts, a host name (or address) and its port, into the addresses
/// to connect to: literals with the port, "10.0.0.7:2181" or "[fd00::7]:2181". Empty, or an exception:
/// the name does not resolve (it is skipped, and logged).
using host_resolver = std::function<std::vector<std::string>(const std::string& host, const std::string& port)>;

/// A sink that writes "zklock LEVEL: message" to stderr, for programs that want the C client's chatter.
log_sink stderr_log_sink();

/// One credential that the session adds with zoo_add_auth (see session_config::credentials).
struct credential {
    std::string scheme = "digest";  ///< ZooKeeper auth scheme
    std::string secret;             ///< for digest: "user:password"
};

/// What a session does when ZooKeeper expires it (session_config::on_expiry). Under every policy the
/// holders of the old session are told `error::session_expired` (their nodes went with the session, and
/// another process may hold the lock already) and never hold again: each guard stays lost until released.
enum class expiry_policy {
    /// The session ends: its state stays `expired`, and every lock object and request fails from then
    /// on. A program that goes on makes a new session (and new lock objects).
    fail,
    /// A new session is opened under the same `zklock::session` object, to the same hosts. Lock objects
    /// and guards of the old one stay usable; acquires still waiting join the lock's queue again on the
    /// new session (a one look, a try_acquire, fails with `error::session_expired`). Requests and
    /// watches in flight fail with `error::session_expired`.
    renew_requeue,
    /// As renew_requeue, but acquires still waiting fail with `error::session_expired`.
    renew_fail_pending,
};

/// How a session connects and behaves: the zklock::session constructor takes it, and each field is explained
/// below.
struct session_config {
    /// Comma-separated "host:port" list, optionally followed by a chroot: "10.0.0.1:2181,10.0.0.2:2181/app".
    std::string hosts = "127.0.0.1:2181";
    /// Asked of the server, which bounds it to [2, 20] ticks (4 s to 40 s by default).
    std::chrono::milliseconds session_timeout{10'000};
    /// async_connect gives up after this long with error::connect_timeout.
    std::chrono::milliseconds connect_timeout{10'000};
    /// A lock holder learns `error::ownership_uncertain` when no request sent within this long has been
    /// answered: the clock counts from the *send* time of the newest request the server answered (the
    /// server touched the session after that), connected or not. Unset: half the negotiated session
    /// timeout T. Only answers that certainly went through the leader count: successful writes and syncs,
    /// and the write errors only the leader gives (node exists, no node, bad version, not empty); a
    /// follower that lost the leader still answers reads, and answers some write errors itself. While a
    /// lock is held or awaited, the session sends a sync whenever nothing has been answered for T/6, so a
    /// healthy holder's clock never runs out; a mutex's or read/write lock's acquire that would complete
    /// after the clock ran out (a waiter back from a partition) waits for a sync's answer first, so that
    /// it never hands out a guard already lost. In an ensemble the leader expires sessions and hears of a
    /// follower's touches only when it pings that follower (every half tick, and a tick is at most T/2),
    /// so it may count from a touch up to T/6 + T/4 older than ours: it cannot expire the session before
    /// 7T/12 after that send time (about 0.8 T with common ticks), and the holder is told at T/2
    /// (docs/DESIGN.md, "Loss timing"). So a grace above 7/12 of `session_timeout` is refused:
    /// async_connect fails with `error::invalid_config`, and the log says the bound. If the server
    /// negotiates a shorter timeout than asked, a grace above 7/12 of it is lowered to that bound, with a
    /// warning in the log. Like ZooKeeper's own sessions this assumes clocks that run at about the same
    /// rate; fencing tokens need no such assumption.
    std::optional<std::chrono::milliseconds> loss_grace{};
    /// Who this session is, written into every lock node it makes (the first line of the node's data),
    /// so that `async_participants` and `zklock ls` can say who holds and who waits. Empty: "hostname:pid".
    /// Anything after a newline is dropped.
    std::string owner{};
    /// How host names are resolved. Empty: getaddrinfo (the system's resolver, /etc/hosts and DNS).
    /// Names are resolved when the session starts, and again every second while it is disconnected; when
    /// the addresses changed (a ZooKeeper pod rescheduled under the same name), the session connects to
    /// the new ones and is kept if one of them answers within the session timeout (the change is logged).
    /// Called on a helper thread, never on the session's executor: it may block, and must be safe to call
    /// from another thread while the session runs. A call may still be running, or start, after the session
    /// is gone: the resolver must own what it uses (capture by value or by shared_ptr, not by reference).
    host_resolver resolver{};
    /// Follow the ensemble's membership as ZooKeeper 3.5+ publishes it in /zookeeper/config (read at every
    /// connect, and watched): when it lists client addresses, they replace the host list (the chroot
    /// stays), so that members added or moved by `reconfig` are reached and removed ones are left, as
    /// Curator's EnsembleTracker does. The C client may then move the session to another member to
    /// spread the load (the session is kept). Each change is logged. A static configuration that names no
    /// client address changes nothing. Off: the host list given here is all the session ever uses.
    bool follow_ensemble = true;
    /// What happens when the server expires the session (see expiry_policy). With a renewing policy the
    /// state goes from `expired` to `connecting` at once, and `connected` under a new session id;
    /// `session::stats().renewals` counts the sessions opened this way. A session that is draining, or closing,
    /// is not renewed.
    expiry_policy on_expiry = expiry_policy::fail;
    /// Added with zoo_add_auth right after the handle is created (and again for a renewed session).
    std::vector<credential> credentials{};
    /// Where log lines go. Empty: errors and warnings are dropped too (the C client never writes to stderr).
    log_sink log{};
    /// The most verbose level that reaches `log`: lines at this level or more severe are passed on, the rest dropped.
    log_level log_threshold = log_level::warning;
    /// Hears every lock event of the session (zklock/lock_event.hpp), on the session's executor: for a
    /// user's own metrics or tracing. Empty (the default): nothing is made or posted for it.
    lock_observer observer{};
    /// Whether the session counts its locks: session_stats::locks, by_label and the lock gauges. Each
    /// acquire then costs a few counter increments, two histogram records and a timer entry (measured
    /// below the benchmark's noise; scripts/bench.sh prints the pair). False: the lock figures stay zero
    /// and that bookkeeping is skipped; requests, connections and the observer's events are unaffected.
    bool lock_statistics = true;
};

}  // namespace zklock
