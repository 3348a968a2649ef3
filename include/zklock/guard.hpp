// Ownership of a lock, as a move-only value.
#pragma once

#include <zklock/detail/handler.hpp>
#include <zklock/fencing_token.hpp>
#include <zklock/lease.hpp>
#include <zklock/multi.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/system/error_code.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zklock {

namespace detail {
/// What a guard holds a share of: one recipe's per-session state for one path (internal).
class lock_base;
void async_release(std::shared_ptr<lock_base>, std::uint64_t holder, handler<>);
void async_wait_lost(std::shared_ptr<lock_base>, std::uint64_t holder, handler<boost::system::error_code>);
void release_detached(std::shared_ptr<lock_base>, std::uint64_t holder) noexcept;
void async_wait_revoked(std::shared_ptr<lock_base>, std::uint64_t holder, handler<>);
void async_extend_lease(std::shared_ptr<lock_base>, std::uint64_t holder, std::chrono::steady_clock::duration, handler<>);
boost::system::error_code lost_reason(const std::shared_ptr<lock_base>&, std::uint64_t holder) noexcept;
/// A guard's share of its lock, for operations that start from a held lock (a downgrade).
struct hold_ref {
    std::shared_ptr<lock_base> state;
    std::uint64_t holder = 0;
    std::string node;
};
/// `ops` behind one check per hold that its lock node still exists (see guard::async_guarded_multi).
void async_guarded_multi(std::vector<hold_ref> holds, std::vector<multi_op> ops,
                         handler<std::vector<multi_result>> h);
void async_guarded_set_data(hold_ref hold, std::string path, std::string data, int version, handler<> h);
}  // namespace detail

/**
 * Proof of holding a lock (a mutex, one side of a shared_mutex, a semaphore's permit), given by an acquire.
 * Move-only; an empty guard holds nothing.
 *
 * Destroying a guard that still holds releases the lock in the background. `release()` does the same and
 * completes once ZooKeeper has confirmed it (or at once, when the lock passes to another coroutine of the
 * same session).
 *
 * @par Thread safety
 * `release()`, `async_wait_lost()` and the destructor may be called from any thread or strand, and their
 * operations may be cancelled from the thread that owns the cancellation signal: they hop onto the
 * session's executor, and their completions run on the handler's own executor. `node()` and `token()`
 * are plain values. `lost()` may be polled from any thread (a plain thread holding a `use_future`
 * guard): the recipe publishes each loss for it as it learns of it, on the session's executor. As for any
 * object, one guard must not be used by two threads at once (e.g. moved on one while polled on another).
 * Each asynchronous verb below says in its own paragraphs on which executor it runs and completes, which
 * cancellation types it supports, its errors, its thread safety and what must outlive it.
 */
class guard {
public:
    guard() = default;
    /// Made by the lock recipes when they grant an acquire (`q` is their internal state) at `granted_at`
    /// (where a lease starts); applications get their guards from an acquire.
    guard(std::shared_ptr<detail::lock_base> q, std::uint64_t holder, std::string node, fencing_token token,
          std::chrono::steady_clock::time_point granted_at = {})
        : guard(std::move(q), holder, std::make_shared<const std::string>(std::move(node)), token, granted_at)
    {
    }
    /// As above, with the node's name shared by every guard granted on it (a local grant copies no string).
    guard(std::shared_ptr<detail::lock_base> q, std::uint64_t holder, std::shared_ptr<const std::string> node,
          fencing_token token, std::chrono::steady_clock::time_point granted_at = {})
        : queue_(std::move(q)), holder_(holder), node_(std::move(node)), token_(token), granted_at_(granted_at)
    {
    }
    /// Takes over `o`'s hold; `o` is left empty (it holds nothing, and destroying it releases nothing).
    guard(guard&& o) noexcept
        : queue_(std::move(o.queue_)), holder_(o.holder_), node_(std::move(o.node_)), token_(o.token_),
          granted_at_(o.granted_at_)
    {
    }
    /// Releases what this guard held, in the background (as its destructor would), then takes over `o`'s
    /// hold; `o` is left empty.
    guard& operator=(guard&& o) noexcept
    {
        if (this != &o) {
            reset();
            queue_ = std::move(o.queue_);
            holder_ = o.holder_;
            node_ = std::move(o.node_);
            token_ = o.token_;
            granted_at_ = o.granted_at_;
        }
        return *this;
    }
    ~guard() { reset(); }

    /// True until released (it stays true after a loss: the guard still has to be released).
    bool owns_lock() const noexcept { return queue_ != nullptr; }
    /// The same as owns_lock().
    explicit operator bool() const noexcept { return owns_lock(); }

    /// The full path of the lock node ("/locks/x/_c_<uuid>-lock-0000000007").
    const std::string& node() const noexcept
    {
        static const std::string none;
        return node_ ? *node_ : none;
    }
    /// This hold's fencing token (the lock node's creation zxid and the count of local hand-offs; see
    /// fencing_token), for a resource to reject writes from holders that came before.
    fencing_token token() const noexcept { return token_; }

    /// Empty while the lock is held; otherwise why it was lost (`error::session_expired`,
    /// `error::lock_node_deleted`, `error::ownership_uncertain`, `error::session_closed`,
    /// `error::lease_expired`). From any thread: it reads what the session's executor last published
    /// (a loss shows here when the session has processed it; `async_wait_lost` is told at the same time).
    boost::system::error_code lost() const noexcept
    {
        return queue_ ? detail::lost_reason(queue_, holder_) : boost::system::error_code{};
    }

    /**
     * Completes *successfully* when the lock is lost, with the reason as its result. To run work only while
     * the lock is held, use `zklock::while_held(g, work())` (zklock/while_held.hpp), which ends when either
     * side ends; Asio's `work() || g.async_wait_lost(...)` waits for the first *success*, so a work that
     * throws would leave it waiting for a loss, with the lock held.
     *
     * An error means "not lost": `operation_aborted` when the guard was released first or the operation
     * was cancelled, `error::not_held` on an empty guard. A loss already known completes at once.
     * Signature `void(error_code, error_code reason)`.
     *
     * @par Executor
     * The wait runs on the session's executor of the guard's lock (one hop, inline when already there),
     * where losses are learnt; the completion runs on the handler's associated executor, never inside this
     * call.
     *
     * @par Per-operation cancellation
     * Terminal, partial and total alike (a pure wait) complete it at once with `operation_aborted`; the hold
     * is not affected: the lock stays held. A signal after the completion does nothing.
     *
     * @par Errors
     * Success, with the reason as result: `error::lock_node_deleted`, `error::ownership_uncertain`,
     * `error::session_expired`, `error::session_closed`, `error::auth_failed` (the session's end),
     * `error::lease_expired`. `operation_aborted` when the guard was released (or destroyed) first, or the
     * wait was cancelled; `error::not_held` on an empty guard.
     *
     * @par Thread safety
     * May be initiated from any thread or strand (the initiation only reads the guard), and cancelled from
     * the thread or strand that owns the signal: the slot is bound during the initiation (see the class).
     *
     * @par Object lifetimes
     * The guard's hold is copied when this is called: the guard may be moved meanwhile (the wait follows
     * the hold), and releasing or destroying it completes the wait with `operation_aborted`. The lock object
     * need not be kept (the hold keeps the path's state). Destroying the session ends the hold: the wait
     * completes with `error::session_closed` as the reason.
     */
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_wait_lost(CompletionToken&& token = {})
    {
        return boost::asio::async_initiate<CompletionToken,
                                           void(boost::system::error_code, boost::system::error_code)>(
            [](auto h, std::shared_ptr<detail::lock_base> q, std::uint64_t holder) {
                detail::async_wait_lost(std::move(q), holder, std::move(h));
            },
            token, queue_, holder_);
    }

    /**
     * Cooperative revocation (Curator's): completes *successfully* when another process asks this holder
     * to let go, by `zklock::async_request_revoke` (zklock/revoke.hpp), `zklock revoke PATH`, or Curator's
     * `Revoker.attemptRevoke` (each writes "__REVOKE__" into the lock node). The holder decides: release
     * when convenient, or ignore it. `operation_aborted` when the guard is released first or the wait is
     * cancelled; `error::not_held` on an empty guard. A request already made completes at once.
     * Signature `void(error_code)`.
     *
     * @par Executor
     * As async_wait_lost: the wait runs on the session's executor (one hop, inline when already there); the
     * completion runs on the handler's associated executor, never inside this call.
     *
     * @par Per-operation cancellation
     * Terminal, partial and total alike (a pure wait) complete it at once with `operation_aborted`; the hold
     * is not affected. A signal after the completion does nothing.
     *
     * @par Errors
     * Success when a revocation request was made on the node (before or during the wait), or when the
     * session drains (session::async_drain asks holders to let go the same way). `operation_aborted` when
     * the guard is released or destroyed first, when the hold ends without a release (its lease runs out;
     * a session renewal replaced the session that held it), or when the wait is cancelled;
     * `error::not_held` on an empty guard. Other losses do not end it: use async_wait_lost for those.
     *
     * @par Thread safety
     * As async_wait_lost: may be initiated from any thread or strand (it only reads the guard), and
     * cancelled from the thread or strand that owns the signal.
     *
     * @par Object lifetimes
     * As async_wait_lost: the guard's hold is copied when this is called; the guard may be moved meanwhile,
     * and releasing or destroying it completes the wait with `operation_aborted`.
     */
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_wait_revoked(CompletionToken&& token = {})
    {
        return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
            [](auto h, std::shared_ptr<detail::lock_base> q, std::uint64_t holder) {
                detail::async_wait_revoked(std::move(q), holder, std::move(h));
            },
            token, queue_, holder_);
    }

    /**
     * Moves the end of this hold's lease to `length` from now (Redisson's watchdog, made explicit), or
     * gives the hold a lease if it was acquired without one; the lock node's data shows the new deadline.
     * Completes with success, or: the loss reason when the lock was lost (`error::lease_expired` when the
     * lease ran out first: too late to extend), `error::not_held` on an empty or released guard,
     * `error::invalid_lease` for a zero or negative `length`. Signature `void(error_code)`.
     *
     * @par Executor
     * The new end applies on the session's executor (one hop, inline when already there), where the lease's
     * clock runs; it never waits for ZooKeeper (the node's data is rewritten in the background). The
     * completion runs on the handler's associated executor, never inside this call.
     *
     * @par Per-operation cancellation
     * None: no type is supported, and a signal is ignored (nothing is bound to the slot). The operation
     * completes right after its hop, with its real result.
     *
     * @par Errors
     * Success: the lease now ends `length` from now. The loss reason when the lock was lost
     * (`error::lease_expired` when the lease ran out first: too late to extend; `error::lock_node_deleted`,
     * `error::ownership_uncertain`, the session's end); `error::not_held` on an empty or released guard;
     * `error::invalid_lease` for a zero or negative `length` (checked before the hop).
     *
     * @par Thread safety
     * As release: may be initiated from any thread or strand (this one only reads the guard). No
     * cancellation to coordinate.
     *
     * @par Object lifetimes
     * The guard's hold is copied when this is called: the guard need not outlive the call. Released before
     * the extension applies, the hold is gone: `error::not_held`.
     */
    template <class Rep, class Period, class CompletionToken = boost::asio::deferred_t>
    auto async_extend_lease(std::chrono::duration<Rep, Period> length, CompletionToken&& token = {})
    {
        return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
            [](auto h, std::shared_ptr<detail::lock_base> q, std::uint64_t holder, lease l) {
                detail::async_extend_lease(std::move(q), holder, l.length, std::move(h));
            },
            token, queue_, holder_, lease(length));
    }

    /**
     * Releases the lock. Completes with success once the lock node is deleted (one round trip) or the
     * lock has passed to the next coroutine of this session; with the loss reason if it had been lost
     * meanwhile; with `error::not_held` on an empty guard. The guard is empty once the operation is
     * initiated, whatever its outcome. Signature `void(error_code)`.
     *
     * Nothing happens before initiation: a deferred release (the default token) that is dropped unawaited
     * leaves the guard holding, and its destructor releases. Lifetime: as with an Asio I/O object, the
     * guard must outlive the initiation (a deferred operation refers to it until it is awaited).
     *
     * @par Executor
     * The release runs on the session's executor (one hop, inline when already there); a delete while the
     * connection is down waits for the reconnect. The completion runs on the handler's associated executor,
     * never inside this call.
     *
     * @par Per-operation cancellation
     * Terminal and partial complete it at once with `operation_aborted`; the node is deleted in the
     * background all the same (or goes with the session), and the lock passes on as it would have. The
     * guard stays empty. Total is ignored: a release cannot be undone, and a total cancellation promises
     * that the operation had no effect; the release completes with its real result (after a reconnect,
     * when the connection was down). A signal after the completion does nothing.
     *
     * @par Errors
     * Success, also at once when the lock passes to another coroutine of this session, when others of this
     * session still hold the node (readers, a re-entered hold), or when it lingers (mutex_options::linger).
     * The loss reason if the lock had been lost meanwhile (`error::lock_node_deleted`,
     * `error::ownership_uncertain`, `error::session_expired`, `error::lease_expired`, ...; a node still
     * there is deleted all the same); the session's end (`error::session_expired`, `error::session_closed`,
     * `error::auth_failed`) if it came before ZooKeeper confirmed the delete; ZooKeeper's code if the server
     * refuses the delete; `error::not_held` on an empty guard; `operation_aborted` when cancelled.
     *
     * @par Thread safety
     * From any thread or strand (see the class), while no other thread uses this guard: the initiation
     * empties it. Cancel from the thread or strand that owns the signal (the slot is bound during the
     * initiation).
     *
     * @par Object lifetimes
     * The guard must outlive the initiation (above); after that it is empty and may go. The lock object need
     * not be kept. The session's io_context and the handler's must run until it completes.
     */
    template <class CompletionToken = boost::asio::deferred_t>
    auto release(CompletionToken&& token = {})
    {
        return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
            [](auto h, guard* self) {
                detail::async_release(std::exchange(self->queue_, nullptr), self->holder_, std::move(h));
            },
            token, this);
    }

    /**
     * Guarded writes (etcd's `IsOwner`): runs `ops` as one ZooKeeper multi whose first operation checks
     * that this guard's lock node still exists, so a holder that lost the lock (session expired, node
     * deleted, broken by an operator) cannot write: the server refuses the whole multi. Signature
     * `void(error_code, std::vector<multi_result>)`: the results of `ops` (the check's is left out) and
     * - success: every operation was applied;
     * - `error::outcome_unknown`: the multi was sent, and its answer was lost (the connection dropped or
     *   timed out, or the session ended, before ZooKeeper answered). It may or may not have been
     *   applied. Do not take it for a failure, nor write again blindly: read the data back once the
     *   session is connected, `async_sync` first, and compare. Put the guard's fencing token into what
     *   you write (with the data, or in a node of the same multi) to tell your write from another's:
     *
     *       const auto mine = "balance=90 by " + g.token().to_string();
     *       auto [ec] = co_await g.async_guarded_set_data("/accounts/a", mine, -1, as_tuple(use_awaitable));
     *       if (ec == zklock::error::outcome_unknown) {
     *           co_await s.async_sync("/accounts/a", use_awaitable);
     *           auto [data, st] = co_await s.async_get_data("/accounts/a", use_awaitable);
     *           const bool applied = data == mine;
     *       }
     *
     *   (After a session expiry, read with a new session.)
     * - nothing was applied: `error::lock_node_deleted` (the check failed), the loss reason when the loss
     *   is already known (nothing is sent; "ownership uncertain" is left to the server to decide), the
     *   session's end when it had ended before (nothing is sent), `error::not_held` for an empty guard or
     *   (multi_guard) locks of several sessions, else the first failing operation's code;
     * - `operation_aborted`: cancelled (below).
     *
     * @par Executor
     * The initiation hops onto the session's executor (inline when already there), where the multi is
     * sent; the completion runs on the handler's associated executor, never inside this call.
     *
     * @par Per-operation cancellation
     * Before the multi is sent (while the operation hops onto the session's executor from another thread),
     * any type (terminal, partial, total) completes at once with `operation_aborted` and nothing is sent.
     * Once it is sent (at once when initiated on the session's executor), terminal and partial complete at
     * once with `operation_aborted`, and the write may still be applied: resolve it as for
     * `outcome_unknown` (the code stays Asio's, which `||` and parallel groups take for "cancelled").
     * Total is ignored once sent: the write completes with its real result. So
     * `co_await (g.async_guarded_set_data(...) || timer.async_wait())` returns at the timer. A signal
     * after the completion does nothing.
     *
     * @par Errors
     * As listed above: success; `error::outcome_unknown` (sent, answer lost); nothing applied:
     * `error::lock_node_deleted` (the check failed), the loss reason when already known
     * (`error::lease_expired`, `error::session_expired`, ...; not `error::ownership_uncertain`, which the
     * server decides), the session's end when it had ended before (`error::session_expired`,
     * `error::session_closed`, `error::auth_failed`, `error::not_connected`), `error::not_held` (an empty
     * or released guard, or locks of several sessions), else the first failing operation's code (e.g.
     * `zk_errc::bad_version`, `zk_errc::no_node`); `operation_aborted` when cancelled.
     *
     * @par Thread safety
     * May be initiated from any thread or strand (the initiation only reads the guard), and cancelled from
     * the thread or strand that owns the signal (the slot is bound during the initiation).
     *
     * @par Object lifetimes
     * The guard's hold and `ops` are copied when this is called: the guard may be released or destroyed
     * meanwhile (the write then meets the server's check like any other). The session's io_context and the
     * handler's must run until it completes.
     */
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_guarded_multi(std::vector<multi_op> ops, CompletionToken&& token = {})
    {
        return boost::asio::async_initiate<CompletionToken,
                                           void(boost::system::error_code, std::vector<multi_result>)>(
            [](auto h, detail::hold_ref hold, std::vector<multi_op> o) {
                std::vector<detail::hold_ref> holds;
                holds.push_back(std::move(hold));
                detail::async_guarded_multi(std::move(holds), std::move(o), std::move(h));
            },
            token, hold_of(*this), std::move(ops));
    }

    /**
     * One guarded set_data: errors (`error::outcome_unknown` among them), cancellation, executor, thread
     * safety and lifetimes as for async_guarded_multi. Signature `void(error_code)`.
     *
     * @par Executor
     * As async_guarded_multi: the initiation hops onto the session's executor (inline when already there),
     * where the check and the set_data go out as one multi; the completion runs on the handler's associated
     * executor, never inside this call.
     *
     * @par Per-operation cancellation
     * As async_guarded_multi: before the multi is sent, any type completes it at once with
     * `operation_aborted` and nothing is sent; once sent, terminal and partial complete it at once with
     * `operation_aborted` (the write may still be applied: resolve it as for `outcome_unknown`), and total
     * is ignored (it completes with its real result). A signal after the completion does nothing.
     *
     * @par Errors
     * As async_guarded_multi: success; `error::outcome_unknown`; `error::lock_node_deleted`, a known loss
     * reason, the session's end, `error::not_held` (nothing applied); else the set_data's own code
     * (`zk_errc::bad_version` when `version` does not match, `zk_errc::no_node` when `path` does not exist);
     * `operation_aborted` when cancelled.
     *
     * @par Thread safety
     * As async_guarded_multi: from any thread or strand (it only reads the guard); cancelled from the thread
     * or strand that owns the signal.
     *
     * @par Object lifetimes
     * As async_guarded_multi: the hold, `path` and `data` are copied when this is called; the guard may be
     * released or destroyed meanwhile.
     */
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_guarded_set_data(std::string path, std::string data, int version = -1, CompletionToken&& token = {})
    {
        return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
            [](auto h, detail::hold_ref hold, std::string p, std::string d, int v) {
                detail::async_guarded_set_data(std::move(hold), std::move(p), std::move(d), v, std::move(h));
            },
            token, hold_of(*this), std::move(path), std::move(data), version);
    }

private:
    friend detail::hold_ref hold_of(const guard& g) { return {g.queue_, g.holder_, g.node()}; }
    // When the recipe granted this hold (its lease, if any, counts from then; the epoch if not known): a
    // multi_lock's lease for all its locks counts from the first one's grant, not from its completion.
    friend std::chrono::steady_clock::time_point granted_at(const guard& g) { return g.granted_at_; }
    void reset() noexcept
    {
        if (queue_) detail::release_detached(std::exchange(queue_, nullptr), holder_);
    }

    std::shared_ptr<detail::lock_base> queue_;
    std::uint64_t holder_ = 0;
    std::shared_ptr<const std::string> node_;  // immutable, so read from any thread
    fencing_token token_;
    std::chrono::steady_clock::time_point granted_at_{};
};

}  // namespace zklock
