// Who holds a lock and who waits for it, read from ZooKeeper: `co_await zklock::async_participants(s, path)`.
#pragma once

#include <zklock/session.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace zklock {

/// One node in a lock's queue, as any process can read it.
struct participant {
    std::string node;  ///< full path ("/locks/x/_c_<uuid>-lock-0000000007")
    /// "mutex" (a mutex's, or an election candidate's: zklock::election, Curator's LeaderSelector), "read",
    /// "write", "permit" (a semaphore's permit node: Curator's lease node), "waiter" (queued for a
    /// semaphore's internal lock), or "latch" (a Curator LeaderLatch candidate, or zklock's of
    /// election_style::latch). An election's leader is its first node, which `holds`.
    std::string role;
    /// Holds the lock (or permit) now; false: waits for it (a "permit" node that waits for room, see below).
    bool holds = false;
    /// The first line of the node's data: zklock's owner identity (session_config::owner), Curator's
    /// client address, kazoo's identifier; empty when there is none or a revocation request replaced it.
    std::string owner;
    /// The holder's lease deadline on *its* clock (see zklock::lease for what another machine may conclude).
    std::optional<std::chrono::system_clock::time_point> lease_until;
    /// When the node was made, by the server's clock.
    std::chrono::system_clock::time_point created;
    bool revoke_requested = false;  ///< "__REVOKE__" was written into it (Curator's Revoker, zklock revoke)
    std::int64_t session_id = 0;    ///< the ZooKeeper session that owns the node
    /// A zklock semaphore's permit node: the number of permits (N) its session uses. None for other nodes,
    /// and for Curator's permit nodes (Curator stores no N).
    std::optional<std::size_t> max_permits;
};

namespace detail {
void async_participants(const std::shared_ptr<session_impl>& s, std::string path, handler<std::vector<participant>> h);
}  // namespace detail

/**
 * The queue of the lock at `path`, whatever kind it is (a mutex, a read/write lock, a semaphore; zklock's,
 * Curator's or kazoo's nodes), in order: holders first, then waiters in the order they will get it.
 * For a read/write lock the holders are the writer at the head or the readers ahead of the first writer;
 * for a semaphore, its permit nodes followed by the sessions queued for its internal lock. A semaphore's
 * permits hold, except those of the run that holds the internal lock (Curator SemaphoreV2's protocol: a
 * waiter holds that lock while its permit nodes, one or several for `acquire_many`, wait for room): the
 * permit nodes its session made after its node there. They are listed as waiting (`holds` false; `zklock
 * break` leaves them). Curator threads that share one client and take permits at once may show a held
 * permit as waiting.
 *
 * A snapshot: one listing (for a semaphore, two: its permit nodes and its internal lock's queue, whose
 * head, if any, is looked at too) and one read per node, so a node may go between the two (it is then
 * left out). An empty list when nobody holds or waits, or `path` does not exist.
 *
 * Completion `void(error_code, std::vector<participant>)`.
 *
 * @par Executor
 * The reads run on the session's executor; the completion runs on the handler's associated executor,
 * never inside the initiating call.
 *
 * @par Per-operation cancellation
 * Terminal, partial and total, at any stage, complete it at once with `operation_aborted` (only reads
 * are made: the reads already sent finish unseen). No type is refused. So
 * `co_await (async_participants(s, p) || timer.async_wait())` returns at the timer even while ZooKeeper
 * is silent. A signal after the completion does nothing.
 *
 * @par Errors
 * `error::invalid_path` (`path` is "/" or one ZooKeeper would reject), `error::no_session` (a moved-from
 * session), the session's (`error::not_connected` before async_connect, `error::session_expired`,
 * `error::session_closed`, `error::auth_failed`, also when the session ends while the reads are out),
 * ZooKeeper's (`zk_errc::no_auth` when the ACL forbids reading; `zk_errc::connection_loss` or
 * `zk_errc::operation_timeout` when the connection is lost: unlike zklock::async_leader, it does not
 * wait for a reconnection). A node gone since the listing is left out, not an error.
 *
 * @par Thread safety
 * May be initiated from any thread and cancelled from the thread that owns the signal (it hops onto the
 * session's executor).
 *
 * @par Object lifetimes
 * `s` and `path` are not referred to after the initiation: the operation shares the session's state.
 * Destroying the session closes it, and a pending listing then completes with `error::session_closed`.
 */
template <class CompletionToken = asio::deferred_t>
auto async_participants(session& s, std::string path, CompletionToken&& token = {})
{
    return asio::async_initiate<CompletionToken, void(error_code, std::vector<participant>)>(
        [](auto h, std::shared_ptr<detail::session_impl> impl, std::string p) {
            detail::async_participants(impl, std::move(p), std::move(h));
        },
        token, s.impl(), std::move(path));
}

}  // namespace zklock
