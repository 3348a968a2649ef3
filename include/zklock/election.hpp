// Leader election: `auto l = co_await e.campaign(30s);` leads until resigned or lost; `async_leader` and
// `async_wait_leader_change` observe without campaigning.
#pragma once

#include <zklock/leader_info.hpp>
#include <zklock/mutex.hpp>

#include <optional>
#include <string>

namespace zklock {

/// Whose candidates an election's nodes are like: zklock campaigns beside that peer on the same path.
/// One path holds one kind: observers and campaigns refuse a mixed one (`error::schema_mismatch`).
enum class election_style {
    selector,  ///< Curator's LeaderSelector: a mutex node "_c_<uuid>-lock-N" (the default)
    latch,     ///< Curator's LeaderLatch: "_c_<uuid>-latch-N"
    kazoo,     ///< kazoo's Election (a kazoo Lock): "<uuid hex>__lock__N"
};

/// Options of a candidate, taken by the zklock::election constructor; each field is explained below.
struct election_options {
    /// ACL of the candidate's node and of the parents created on demand.
    zklock::acl acl = open_acl();
    /// The peer whose candidates share the path. Each writes the participant id as its node's whole data.
    election_style style = election_style::selector;
};

namespace detail {
/// The session's candidate state for `path` with participant id `id`.
std::shared_ptr<lock_queue> election_queue_for(const std::shared_ptr<session_impl>&, const std::string& path,
                                               const std::string& id, const election_options&, error_code& refusal);
/// Reads the leader of `dir` (known: none), or waits until it differs from `known`.
void async_observe_leader(std::shared_ptr<session_impl> s, std::string dir, std::optional<leader_info> known,
                          handler<leader_info> h);
/// The same through a candidate's session (no candidate: completes with `refusal`).
void async_observe_election(std::shared_ptr<lock_queue> q, error_code refusal, std::string dir,
                            std::optional<leader_info> known, handler<leader_info> h);
}  // namespace detail

/**
 * Leadership of an election: a guard on the leader's node (see guard.hpp) that also resigns and
 * proclaims. `token()` is the term's fencing token (the creation zxid of its node: every later term has
 * a greater one); `async_wait_lost` tells the leader that it was deposed: before another candidate can
 * lead when no answer came through the ZooKeeper leader for the loss grace (the session would expire
 * next); at the same moment as the next candidate when someone else deleted its node or ended its
 * session (see docs/loss-and-fencing.md). Guarded writes are refused by the server once it no longer
 * leads, whoever hears first.
 */
class leadership : public guard {
public:
    leadership() = default;
    /// What a campaign's acquire gave (a guard on a candidate's node).
    leadership(guard g) noexcept : guard(std::move(g)) {}  // NOLINT: implicit, so that an acquire completes with it

    /// The election's path (the directory of the leader's node).
    std::string election_path() const { return node().substr(0, node().rfind('/')); }

    /**
     * Steps down: deletes the node, so that the next candidate leads at once (one round trip for it to
     * hear). This is guard::release; an election's term never passes to another coroutine of this
     * session without a round trip (each term is a node of its own), so it completes once ZooKeeper has
     * confirmed the delete. The leadership is empty once the operation is initiated, whatever its
     * outcome. Signature `void(error_code)`.
     *
     * @par Executor
     * The delete runs on the session's executor; the completion runs on the handler's associated
     * executor, never inside the initiating call.
     *
     * @par Per-operation cancellation
     * Terminal and partial complete it at once with `operation_aborted`; the node is deleted in the
     * background all the same (or goes with the session), so the next candidate still leads. Total is
     * ignored, as by guard::release (a resignation cannot be undone): it completes with its real result.
     * A signal after the completion does nothing.
     *
     * @par Errors
     * Success once the node is deleted (a node already gone counts as deleted). The loss reason when the
     * term had been lost meanwhile (`error::lock_node_deleted`, `error::session_expired`,
     * `error::session_closed`, `error::auth_failed`, `error::ownership_uncertain`); a node still there is
     * deleted all the same. `error::not_held` on an empty leadership (never given, moved from, or already
     * resigned). A lost connection is waited out (the delete is sent again once connected); the session's
     * end meanwhile (`error::session_expired`, `error::session_closed`, `error::auth_failed`) ends the
     * wait with it. ZooKeeper's code for a delete it refuses otherwise (`zk_errc::no_auth`).
     *
     * @par Thread safety
     * May be initiated from any thread or strand, and cancelled from the thread that owns the
     * cancellation signal: it hops onto the session's executor (see guard). As for any object, one
     * leadership must not be used by two threads at once.
     *
     * @par Object lifetimes
     * As with an Asio I/O object, the leadership must outlive the initiation: a deferred resign (the
     * default token) refers to it until it is awaited, and one dropped unawaited leaves it leading (its
     * destructor then resigns in the background). After the initiation nothing of the caller's is
     * referred to; keep the io_context running until the operation completes.
     */
    template <class CompletionToken = asio::deferred_t>
    auto resign(CompletionToken&& token = {})
    {
        return release(std::forward<CompletionToken>(token));
    }

    /**
     * Publishes `value` for observers as this term's (etcd's Proclaim): `async_leader` and
     * `async_wait_leader_change` report it in leader_info::value, and every observer waiting with the
     * old value is told. It is a guarded write (the check that this term's node still exists, and the
     * write of the election directory's data, as one multi), so a deposed leader cannot proclaim:
     * `error::lock_node_deleted`. The value is stored with the term's node name ("<node>\n<value>" in
     * the directory's data), so a later leader is never reported with it. It is
     * guard::async_guarded_set_data on the election's path. Signature `void(error_code)`.
     *
     * @par Executor
     * The guarded write runs on the session's executor; the completion runs on the handler's associated
     * executor, never inside the initiating call.
     *
     * @par Per-operation cancellation
     * Before the write is handed to ZooKeeper's client (while the operation hops onto the session's
     * executor from another thread), terminal, partial and total complete it at once with
     * `operation_aborted`, and nothing is written. Once handed over (at once when initiated on the
     * session's executor; a client that is not connected sends it on reconnection), terminal and partial
     * complete it at once with `operation_aborted`, and the value may still be published: read it back as
     * for `error::outcome_unknown`. Total is not supported then: it is ignored, and the write completes
     * with its real result. So `co_await (l.async_proclaim(v) || timer.async_wait())` returns at the timer.
     *
     * @par Errors
     * Success: the value is published. Nothing was written: `error::lock_node_deleted` (the server's check
     * found the term's node gone), the loss reason when the loss is already known (nothing is sent:
     * `error::lock_node_deleted`, `error::session_expired`, `error::session_closed`, `error::auth_failed`;
     * `error::ownership_uncertain` is left to the server's check), `error::not_held` on an empty or
     * resigned leadership, the session's end or `error::not_connected` when the session cannot send
     * (nothing is sent), ZooKeeper's code when the server refuses the write (`zk_errc::no_auth`: the
     * directory's ACL). `error::outcome_unknown`: the write was sent and its answer was lost (connection
     * loss, timeout, the session's end); it may or may not have been applied. `operation_aborted`:
     * cancelled (above).
     *
     * @par Thread safety
     * May be initiated from any thread and cancelled from the thread that owns the signal (it hops onto
     * the session's executor).
     *
     * @par Object lifetimes
     * The node's name and `value` are copied at the call (a deferred proclaim too): the leadership need
     * not outlive it, and may be resigned or destroyed meanwhile. A resignation that reaches the session's
     * executor first refuses the write (`error::not_held`); otherwise the write was sent ahead of the
     * delete, and lands.
     */
    template <class CompletionToken = asio::deferred_t>
    auto async_proclaim(std::string value, CompletionToken&& token = {})
    {
        const auto& n = node();
        return async_guarded_set_data(election_path(), n.substr(n.rfind('/') + 1) + "\n" + value, -1,
                                      std::forward<CompletionToken>(token));
    }
};

/**
 * The leader of the election at `path` now, read after a sync (so it is at least as recent as anything
 * this session has seen: never a leader already superseded in ZooKeeper's order). An empty leader_info
 * (false) when nobody leads or `path` does not exist. It reads any election that orders its candidates
 * by sequence: zklock's, Curator's LeaderSelector (its getLeader() names the same participant),
 * Curator's LeaderLatch, kazoo's Election; the id is the first line of the leader's node data.
 *
 * Completion `void(error_code, leader_info)`.
 *
 * @par Executor
 * The reads (a sync, a listing, the leader's node and the directory's data) run on the session's
 * executor; the completion runs on the handler's associated executor, never inside the initiating call.
 *
 * @par Per-operation cancellation
 * Terminal, partial and total, at any stage, complete it at once with `operation_aborted` (only reads
 * are made: the requests already sent finish unseen, and the watches they set are dropped). No type is
 * refused. A signal after the completion does nothing.
 *
 * @par Errors
 * `error::invalid_path` (`path` is "/" or one ZooKeeper would reject), `error::schema_mismatch` (the
 * path mixes candidates of two recipes: no client can agree who leads), `error::no_session` (a
 * moved-from session), the session's (`error::not_connected` before async_connect,
 * `error::session_expired`, `error::session_closed`, `error::auth_failed`, also when the session ends
 * while the reads are out), ZooKeeper's (`zk_errc::no_auth` when the ACL forbids reading). A lost
 * connection is waited out: ZooKeeper's retryable codes (`zk_errc::connection_loss`,
 * `zk_errc::operation_timeout`, ..., see is_retryable) are not reported; the reads start again once the
 * session is connected. No deadline: race it against a timer with `||` to bound it.
 *
 * @par Thread safety
 * May be initiated from any thread or strand, and cancelled from the thread that owns the signal: it
 * hops onto the session's executor.
 *
 * @par Object lifetimes
 * `s` and `path` are not referred to after the initiation: the operation shares the session's state.
 * Destroying the session closes it, and a pending operation then completes with
 * `error::session_closed`. Keep the io_context running until it completes.
 */
template <class CompletionToken = asio::deferred_t>
auto async_leader(session& s, std::string path, CompletionToken&& token = {})
{
    return asio::async_initiate<CompletionToken, void(error_code, leader_info)>(
        [](auto h, std::shared_ptr<detail::session_impl> impl, std::string p) {
            detail::async_observe_leader(impl, std::move(p), std::nullopt, std::move(h));
        },
        token, s.impl(), std::move(path));
}

/**
 * Completes once the leader of `path` differs from `known` (another term, nobody, or a new proclaimed
 * value), with the new one: observe without a herd. Each round reads as async_leader does, then watches
 * only the leader's node and the election directory's data (or, while nobody leads, its children), so
 * observers are not woken by candidates joining or leaving behind the leader. Pass what the last call
 * returned to follow every change in order:
 *
 *     for (zklock::leader_info l;;) {
 *         l = co_await zklock::async_wait_leader_change(s, "/election/scheduler", l, asio::use_awaitable);
 *         std::cout << (l ? l.id : "nobody") << " leads\n";
 *     }
 *
 * Changes closer together than a round trip may be seen as one (the latest). Signature
 * `void(error_code, leader_info)`.
 *
 * @par Executor
 * As async_leader: the reads and watches run on the session's executor; the completion runs on the
 * handler's associated executor, never inside the initiating call.
 *
 * @par Per-operation cancellation
 * As async_leader: terminal, partial and total, at any stage (while a round reads, or while it waits
 * for a watch), complete it at once with `operation_aborted`, and its watches are dropped. No type is
 * refused. A signal after the completion does nothing.
 *
 * @par Errors
 * As async_leader. It has no deadline and waits out lost connections; a session that ends while it
 * waits fails it with the session's error (`error::session_expired`, also for a session that renews on
 * expiry, `error::session_closed`, `error::auth_failed`).
 *
 * @par Thread safety
 * As async_leader: may be initiated from any thread, and cancelled from the thread that owns the signal.
 *
 * @par Object lifetimes
 * As async_leader: `s`, `path` and `known` are not referred to after the initiation (`known` is
 * taken by value); destroying the session completes it with `error::session_closed`.
 */
template <class CompletionToken = asio::deferred_t>
auto async_wait_leader_change(session& s, std::string path, leader_info known, CompletionToken&& token = {})
{
    return asio::async_initiate<CompletionToken, void(error_code, leader_info)>(
        [](auto h, std::shared_ptr<detail::session_impl> impl, std::string p, leader_info k) {
            detail::async_observe_leader(impl, std::move(p), std::move(k), std::move(h));
        },
        token, s.impl(), std::move(path), std::move(known));
}

/**
 * A candidate in the leader election at `path`, as participant `id`. By default it is compatible with
 * Curator's LeaderSelector on the same path: a candidate is a mutex node `PATH/_c_<uuid>-lock-N` whose
 * data is the participant id (LeaderSelector.setId), and the first node leads. zklock candidates and
 * Curator selectors take turns; Curator's getLeader() and zklock's async_leader name the same
 * participant. election_options::style makes its nodes those of Curator's LeaderLatch or of kazoo's
 * Election instead, to campaign beside those. A path that holds another recipe's nodes (a LeaderLatch's
 * `-latch-` for a selector, a read/write lock's, a semaphore's) is refused with `error::schema_mismatch`.
 * (A kazoo candidate that joins a path of selectors, or the reverse, is seen by observers, not by a
 * campaign: kazoo and Curator ignore each other's names, so give them one style per path.)
 *
 * One candidate per session and path: a second election object of the same session on the path with
 * another id completes its campaigns with `error::conflicting_options`; with the same id, its campaigns
 * queue behind this session's (each term is a node of its own, so observers see every term).
 *
 * Campaigns (`campaign`, `campaign_until`) are those of a mutex::acquire on the candidate's node; the
 * observers (`async_leader`, `async_wait_leader_change`) are zklock's free functions of those names,
 * through this candidate's session. Each verb below says what it does on each executor, which
 * cancellations it honours, its errors, from which threads it may be used, and what must outlive it.
 */
class election {
public:
    /// Make it on the session's executor.
    election(session& s, std::string path, std::string id, election_options options = {})
        : path_(std::move(path)), id_(std::move(id)),
          queue_(detail::election_queue_for(s.impl(), path_, id_, options, refusal_))
    {
    }

    /// The election's path, as given to the constructor.
    const std::string& path() const noexcept { return path_; }
    /// This candidate's participant id, written as its node's data.
    const std::string& id() const noexcept { return id_; }

    /**
     * Campaigns for at most `timeout` (zero: leads only if nobody else does; a timeout too long for the
     * clock, such as seconds::max(): no deadline). Completes with a `leadership` when this candidate
     * leads: `void(error_code, leadership)`. A leader that loses its session or node hears it through its
     * leadership's async_wait_lost (before another candidate can lead when its session stops hearing from
     * ZooKeeper; at the same moment as the next candidate when someone else deletes its node); to run
     * work only while leading, use `zklock::while_held(l, work())`.
     *
     * @par Executor
     * The campaign (the candidate's node, the watches on the one ahead) runs on the session's executor;
     * the completion runs on the handler's associated executor, never inside the initiating call.
     *
     * @par Per-operation cancellation
     * Terminal, partial and total alike complete it at once with `operation_aborted`, at any stage before
     * it leads: a candidate's node already created is deleted in the background, and one still being
     * created is deleted when its create completes; no node is left behind. A watch already set on the
     * node ahead stays on the server until that node changes or the session ends. No type is refused. A
     * signal that comes once it leads (its completion on the way) does nothing: it completes with its
     * leadership.
     *
     * @par Errors
     * `error::timeout` when the deadline passed first (it covers the whole campaign, reconnects included);
     * `error::invalid_participant_id` for an id that is not one line of text, or is "__REVOKE__";
     * `error::conflicting_options` when another election of this session on the path has another id,
     * style or ACL; `error::schema_mismatch` when the path holds another recipe's nodes (nothing is
     * created); `error::draining` once the session drains (session::async_drain);
     * `error::session_expired` (unless session_config::on_expiry is `renew_requeue`: the campaign then
     * waits on for the new session), `error::session_closed`, `error::auth_failed`,
     * `error::not_connected` (before async_connect), `error::invalid_path`, `error::no_session` (a
     * moved-from session), `error::no_create_permission`, `error::no_delete_permission`,
     * `error::no_read_permission` (the election directory's ACL; nothing is created then), and
     * ZooKeeper's codes for anything else the server refuses. A lost connection is waited out.
     *
     * @par Thread safety
     * May be initiated from any thread or strand, and cancelled from the thread that owns the
     * cancellation signal (e.g. a connection's strand with `||`): it hops onto the session's executor.
     * Make the election itself on the session's executor.
     *
     * @par Object lifetimes
     * Keep this election (or another of the same session on the path with the same id and options), or
     * a leadership of it, while the campaign is pending: when the last of them goes, pending campaigns
     * complete with `operation_aborted`. The election is not referred to after the initiation (a
     * deferred campaign holds its own reference to the candidate's state).
     */
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
    auto campaign(std::chrono::duration<Rep, Period> timeout, CompletionToken&& token = {})
    {
        return initiate(detail::deadline_after(timeout), token);
    }

    /// As above, campaigning until it leads, fails or is cancelled (no deadline, so no `error::timeout`).
    /// `void(error_code, leadership)`.
    template <class CompletionToken = asio::deferred_t>
        requires(!detail::is_duration<std::decay_t<CompletionToken>>::value)
    auto campaign(CompletionToken&& token = {})
    {
        return initiate(detail::deadline{}, token);
    }

    /**
     * Campaigns until `deadline` on the steady clock (one deadline for several steps).
     * `void(error_code, leadership)`.
     *
     * @par Executor
     * As campaign: on the session's executor; the completion on the handler's associated executor.
     * @par Per-operation cancellation
     * As campaign: terminal, partial and total complete it at once with `operation_aborted`, no node left.
     * @par Errors
     * As campaign, `error::timeout` once `deadline` has passed (a deadline already past: one look).
     * @par Thread safety
     * As campaign: initiated from any thread, cancelled from the thread that owns the signal.
     * @par Object lifetimes
     * As campaign: keep the election (or a leadership of it) until it completes.
     */
    template <class CompletionToken = asio::deferred_t>
    auto campaign_until(std::chrono::steady_clock::time_point deadline, CompletionToken&& token = {})
    {
        return initiate(deadline, token);
    }

    /**
     * zklock::async_leader on this election's path, through this candidate's session (no campaign needed).
     * `void(error_code, leader_info)`.
     *
     * @par Executor
     * As zklock::async_leader: the reads on the session's executor; the completion on the handler's
     * associated executor, never inside the initiating call.
     * @par Per-operation cancellation
     * As zklock::async_leader: terminal, partial and total, at any stage, complete it at once with
     * `operation_aborted`.
     * @par Errors
     * As zklock::async_leader; and, with nothing read, the refusal this election was made with:
     * `error::invalid_participant_id`, `error::conflicting_options`, `error::no_session`,
     * `error::invalid_path` (a path too long for a candidate's node).
     * @par Thread safety
     * As zklock::async_leader: initiated from any thread, cancelled from the thread that owns the signal.
     * @par Object lifetimes
     * The election is not referred to after the initiation (a deferred operation holds copies): it may
     * be destroyed meanwhile. Destroying the session completes it with `error::session_closed`.
     */
    template <class CompletionToken = asio::deferred_t>
    auto async_leader(CompletionToken&& token = {})
    {
        return observe(std::nullopt, token);
    }

    /**
     * zklock::async_wait_leader_change on this election's path, through this candidate's session.
     * `void(error_code, leader_info)`.
     *
     * @par Executor
     * As zklock::async_wait_leader_change: on the session's executor; the completion on the handler's
     * associated executor.
     * @par Per-operation cancellation
     * As zklock::async_wait_leader_change: terminal, partial and total, at any stage (a watch's wait
     * too), complete it at once with `operation_aborted`.
     * @par Errors
     * As zklock::async_wait_leader_change, and the election's refusal as for the member async_leader.
     * @par Thread safety
     * As zklock::async_leader: initiated from any thread, cancelled from the thread that owns the signal.
     * @par Object lifetimes
     * As the member async_leader: the election may be destroyed meanwhile; `known` is taken by value.
     */
    template <class CompletionToken = asio::deferred_t>
    auto async_wait_leader_change(leader_info known, CompletionToken&& token = {})
    {
        return observe(std::move(known), token);
    }

private:
    template <class CompletionToken>
    auto initiate(detail::deadline d, CompletionToken& token)
    {
        return asio::async_initiate<CompletionToken, void(error_code, leadership)>(
            [](auto h, detail::executor_owned<detail::lock_queue> qq, error_code why, detail::deadline dl) {
                // The acquire's guard becomes a leadership on the way out (an implicit conversion).
                detail::handler<guard> as_guard(detail::handler<leadership>(std::move(h)));
                if (qq.get()) detail::async_acquire(std::move(qq).take(), dl, {}, std::move(as_guard));
                else detail::refuse_acquire(why, std::move(as_guard));
            },
            token, queue_, refusal_, d);
    }

    /**
     * The initiation of both observers above (`known`: none for async_leader): the free function's work
     * through this candidate's session, or the election's refusal (completed without reading).
     *
     * @par Executor
     * As zklock::async_leader.
     * @par Per-operation cancellation
     * As zklock::async_leader: any type (terminal, partial, total) completes at once with
     * `operation_aborted`. A refusal completes at once and has nothing to cancel.
     * @par Errors
     * As the member async_leader.
     * @par Thread safety
     * As zklock::async_leader.
     * @par Object lifetimes
     * `known` and the path are copied into the operation, with a reference to the candidate's state that
     * is let go on the session's executor once the observation has started (it needs only the session).
     */
    template <class CompletionToken>
    auto observe(std::optional<leader_info> known, CompletionToken& token)
    {
        return asio::async_initiate<CompletionToken, void(error_code, leader_info)>(
            [](auto h, detail::executor_owned<detail::lock_queue> qq, error_code why, std::string p,
               std::optional<leader_info> k) {
                detail::async_observe_election(std::move(qq).take(), why, std::move(p), std::move(k), std::move(h));
            },
            token, queue_, refusal_, path_, std::move(known));
    }

    std::string path_, id_;
    error_code refusal_;
    detail::executor_owned<detail::lock_queue> queue_;
};

}  // namespace zklock
