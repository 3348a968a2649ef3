// The distributed mutex: `auto g = co_await m.acquire(5s);`.
#pragma once

#include <zklock/acl.hpp>
#include <zklock/detail/acquire.hpp>
#include <zklock/detail/executor_owned.hpp>
#include <zklock/guard.hpp>
#include <zklock/lease.hpp>
#include <zklock/session.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

namespace zklock {

/// Options of a mutex, taken by the zklock::mutex and zklock::shared_mutex constructors; each field is
/// explained below.
struct mutex_options {
    /// How many times in a row the lock may pass between coroutines of this session, without a round trip,
    /// once another process waits for it: then the node is released so that the other process gets its
    /// turn. While nobody else waits the node stays (once its waiters could pass the bound, the session
    /// looks at the lock directory with a children watch, and one notification tells it when someone
    /// queues). 0: every hand-off goes through ZooKeeper (strict FIFO across processes, one node per
    /// waiting coroutine's turn).
    std::size_t local_handoff_limit = 10;
    /// Keep the lock node after the last local release while no other process waits, so that this
    /// session's next acquire costs no round trip (Chubby's lock caching). Other processes see the lock
    /// held until they queue for it; ZooKeeper then tells us, and the node is deleted at once.
    bool linger = false;
    /// ACL of the lock node and of the parents created on demand.
    zklock::acl acl = open_acl();
    /// The label this lock's figures are counted under in the session's statistics (session_stats::by_label,
    /// the `lock` label of write_prometheus), beside the session's totals. Give one name to a family of
    /// paths ("orders"), not one per path: each label is a series of its own.
    std::string stats_label{};

    /// Equal when every field is: lock objects of one session on one path must have equal options.
    friend bool operator==(const mutex_options&, const mutex_options&) = default;
};

namespace detail {
/// The session's shared state for `path`; null with `refusal` set when there is none to be had (a
/// moved-from session, other options for the same path).
std::shared_ptr<lock_queue> lock_queue_for(const std::shared_ptr<session_impl>&, const std::string& path,
                                           const mutex_options&, error_code& refusal);
}  // namespace detail

/**
 * An exclusive lock on a ZooKeeper path, shared with every process that locks the same path (zklock,
 * Curator's InterProcessMutex, and kazoo's Lock with `extra_lock_patterns=["-lock-"]`).
 *
 * The recipe: an EPHEMERAL|SEQUENTIAL node `PATH/_c_<uuid>-lock-N` (Curator's protected name), its
 * getChildren pipelined behind the create (an uncontended acquire is one round trip), and watches on the
 * contenders ahead and on its own node while at most 8 are ahead, else on the one just ahead (a release
 * wakes at most 8 waiters: no herd). All mutexes of one session on one path share one node: their
 * coroutines queue locally and the lock passes between them without a round trip, up to
 * `local_handoff_limit` times in a row once another process waits (without limit while none does).
 *
 * Not implicitly reentrant: a coroutine that acquires twice waits for itself. Re-entry is explicit:
 * `acquire(held_guard)` (below).
 *
 * Each asynchronous verb below (acquire, acquire_until, try_acquire, async_wait_place) says in its own
 * paragraphs on which executor it runs and completes, which cancellation types it supports, its errors,
 * its thread safety and what must outlive it. In short, common to all of them: make a mutex on its
 * session's executor (the constructor looks up the session's state for the path); a mutex may be copied,
 * moved, assigned and destroyed on any thread. The verbs may be initiated from any thread or strand and
 * cancelled from the thread that owns the cancellation signal (e.g. a connection's strand with `||`): they
 * hop onto the session's executor, and complete on the handler's associated executor. Every cancellation
 * type ends a pending acquire or place wait at once with `operation_aborted`, and no node is left behind.
 * Keep a mutex (or another of the same session and path) while its acquires are pending: when the last one
 * and the last guard of a path go, pending acquires complete with `operation_aborted`.
 */
class mutex {
public:
    /// Make it on the session's executor (it looks up the session's state for this path).
    /// A second mutex of the same session on the same path must have the same options; otherwise its
    /// acquires complete with `error::conflicting_options`. A moved-from session gives `error::no_session`.
    mutex(session& s, std::string path, mutex_options options = {})
        : path_(std::make_shared<const std::string>(std::move(path))),
          queue_(detail::lock_queue_for(s.impl(), *path_, options, refusal_))
    {
    }
    // Copies, moves, assignment and the destructor may run on any thread: the shared state is let go on
    // the session's executor (detail::executor_owned).

    /// The lock's path, as given to the constructor (empty for a moved-from mutex).
    const std::string& path() const noexcept
    {
        static const std::string none;
        return path_ ? *path_ : none;
    }

    /**
     * Waits at most `timeout` (zero: one look, as try_acquire; a timeout too long for the clock, such
     * as seconds::max(): no deadline). Completion `void(error_code, guard)`: on success the guard holds the
     * lock. These paragraphs hold for the overloads below that wait (with a lease, with no deadline); the
     * re-entry overload, `acquire(const guard&)`, has its own.
     *
     * @par Executor
     * The recipe runs on the session's executor: the initiation hops onto it (inline when already there),
     * and the lock node, its watches and the deadline are handled there. The completion runs on the
     * handler's associated executor, never inside this call (a plain callback has the system executor: it
     * runs on the thread that completes the operation, usually the session's); until then the operation
     * keeps work outstanding on that executor.
     *
     * @par Per-operation cancellation
     * Terminal, partial and total alike complete the acquire at once with `operation_aborted` (after a hop
     * through the session's executor), at any stage before the grant: a node already created is deleted in
     * the background, and a create still in flight is deleted when it completes. No node is left behind
     * (other coroutines of this session queued on the same node keep it, and with mutex_options::linger a
     * node that had already become the head lingers, as after a release). A watch already set on the node
     * ahead stays on the server until that node changes or the session ends (the C client cannot remove it
     * there). A signal after the grant does nothing: the guard is delivered, and holds.
     *
     * @par Errors
     * `error::timeout` when the deadline passed first (it covers the whole acquire, reconnects included);
     * for a one look (a zero timeout, try_acquire, a deadline already passed), when the lock was not free
     * (held or awaited by this session, a contender of another process ahead, the session not connected)
     * or ZooKeeper did not answer within the one look's limit (the lesser of 1 s and a quarter of the
     * session timeout). The session's end before the grant: `error::session_expired` (unless
     * session_config::on_expiry is `renew_requeue`: the acquire then waits on for the new session, a one
     * look excepted), `error::session_closed` (also when the session object is destroyed),
     * `error::auth_failed`; and `error::not_connected` when the session was never connected. Refusals,
     * which leave nothing behind: `error::invalid_path` (a path ZooKeeper would reject, "/", or one too long
     * for the lock's nodes), `error::invalid_lease` (a lease of zero or less), `error::conflicting_options`
     * (another lock object of this session on the path has other options), `error::no_session` (a
     * moved-from session), `error::draining` (the session drains, see session::async_drain; waiters already
     * queued fail with it too), `error::schema_mismatch` (the path holds another kind of lock's nodes),
     * `error::no_create_permission`, `error::no_delete_permission`, `error::no_read_permission` (the lock
     * directory's ACL; nothing is created then). ZooKeeper's codes (`zk_errc`) for anything else the server
     * refuses (e.g. `zk_errc::invalid_acl`); a lost connection is no error: the acquire goes on once
     * reconnected. `operation_aborted` when cancelled (above), or when the last lock object and the last
     * guard of the path went (below).
     *
     * @par Thread safety
     * May be initiated from any thread or strand: the initiation only reads this mutex (several threads may
     * start acquires on one mutex at once, as long as none assigns or destroys it meanwhile) and hops onto
     * the session's executor. The handler's cancellation slot is bound during the initiation, and a signal
     * hops onto the session's executor: emit it from the thread or strand that owns it (e.g. the caller's,
     * with `||`), never concurrently with the initiation.
     *
     * @par Object lifetimes
     * Keep this mutex (or another lock object of the same session and path, or a guard of it) while the
     * acquire is pending: a started acquire does not keep the path's state alive, and when the last lock
     * object and the last guard of the path go, pending acquires complete with `operation_aborted` (their
     * nodes given up). A deferred acquire holds its own reference until it is started; `timeout` and the
     * lease are copied. The session object may be destroyed meanwhile: that closes the session, and the
     * acquire completes with `error::session_closed`. The io_contexts that run the session's executor and
     * the handler's must run until the acquire completes.
     */
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
        requires(!std::is_same_v<std::decay_t<CompletionToken>, lease>)
    auto acquire(std::chrono::duration<Rep, Period> timeout, CompletionToken&& token = {})
    {
        return initiate(detail::deadline_after(timeout), token);
    }

    /// As above, holding at most for `l` once acquired (see zklock::lease): when it runs out the lock
    /// is released by zklock and the guard's loss signal says `error::lease_expired`. A lease of zero or
    /// less completes with `error::invalid_lease`.
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
    auto acquire(std::chrono::duration<Rep, Period> timeout, lease l, CompletionToken&& token = {})
    {
        return initiate(detail::deadline_after(timeout), token, l.length);
    }

    /// As above, with no deadline: waits until acquired, failed or cancelled. Completion
    /// `void(error_code, guard)`.
    template <class CompletionToken = asio::deferred_t>
        requires(!detail::is_duration<std::decay_t<CompletionToken>>::value &&
                 !std::is_same_v<std::decay_t<CompletionToken>, guard> &&
                 !std::is_same_v<std::decay_t<CompletionToken>, lease>)
    auto acquire(CompletionToken&& token = {})
    {
        return initiate(detail::deadline{}, token);
    }

    /// As above, with no deadline, holding at most for `l` once acquired (see the overload with a lease).
    /// Completion `void(error_code, guard)`.
    template <class CompletionToken = asio::deferred_t>
    auto acquire(lease l, CompletionToken&& token = {})
    {
        return initiate(detail::deadline{}, token, l.length);
    }

    /**
     * Waits until `deadline` on the steady clock (one deadline for several steps, as multi_lock uses; one
     * already passed: a one look). Completion `void(error_code, guard)`.
     *
     * @par Executor
     * As acquire: the recipe runs on the session's executor (one hop, inline when already there); the
     * completion runs on the handler's associated executor, never inside this call.
     *
     * @par Per-operation cancellation
     * As acquire: terminal, partial and total alike complete it at once with `operation_aborted`, at any
     * stage before the grant, and what it created is given back (no node left behind); a signal after the
     * grant does nothing.
     *
     * @par Errors
     * As acquire: `error::timeout` once `deadline` has passed first (reconnects included); the session's end
     * (`error::session_expired`, `error::session_closed`, `error::auth_failed`) or `error::not_connected`;
     * the refusals `error::invalid_path`, `error::invalid_lease` (with a lease of zero or less),
     * `error::conflicting_options`, `error::no_session`, `error::draining`, `error::schema_mismatch` and the
     * ACL's `error::no_create_permission`, `error::no_delete_permission`, `error::no_read_permission`;
     * ZooKeeper's codes for anything else the server refuses; `operation_aborted` when cancelled or when the
     * last lock object and guard of the path went.
     *
     * @par Thread safety
     * As acquire: may be initiated from any thread or strand (it only reads this mutex), and cancelled from
     * the thread or strand that owns the signal.
     *
     * @par Object lifetimes
     * As acquire: keep this mutex (or another lock object or a guard of the path) until it completes; the
     * session must still be open for it to succeed.
     */
    template <class CompletionToken = asio::deferred_t>
        requires(!std::is_same_v<std::decay_t<CompletionToken>, lease>)
    auto acquire_until(std::chrono::steady_clock::time_point deadline, CompletionToken&& token = {})
    {
        return initiate(deadline, token);
    }

    /// As above, holding at most for `l` once acquired (see acquire with a lease). Completion
    /// `void(error_code, guard)`.
    template <class CompletionToken = asio::deferred_t>
    auto acquire_until(std::chrono::steady_clock::time_point deadline, lease l, CompletionToken&& token = {})
    {
        return initiate(deadline, token, l.length);
    }

    /**
     * Re-entry, made explicit: a second guard on the lock `held` holds, at once and without a round trip
     * (counted like Curator's reentrant mutex: the lock goes when every guard of it is released). `held`
     * must be a guard of this mutex (same session and path) that still holds; else `error::not_held`.
     * While the loss clock has run out (no answer through the leader for longer than the loss grace),
     * `error::ownership_uncertain`: the second guard would be lost at birth (`held` hears the same).
     * A plain second `acquire` by the same coroutine stays an ordinary waiter (and waits for itself).
     * Completion `void(error_code, guard)`.
     *
     * @par Executor
     * One hop onto the session's executor (inline when already there), where the second hold is taken
     * without a round trip; the completion runs on the handler's associated executor, never inside this
     * call.
     *
     * @par Per-operation cancellation
     * None: no type is supported, and a signal is ignored (nothing is bound to the slot). The operation
     * completes right after its hop, with nothing to undo.
     *
     * @par Errors
     * `error::not_held` when `held` is empty, is a guard of another lock (another path, session or kind),
     * has been released or has lost its lock, or when this mutex has no state (its constructor was
     * refused); `error::ownership_uncertain` while the loss clock has run out (above).
     *
     * @par Thread safety
     * May be initiated from any thread or strand: the initiation only reads this mutex and `held` (neither
     * may be modified by another thread meanwhile).
     *
     * @par Object lifetimes
     * What the operation needs of this mutex and of `held` is copied when it is called: the mutex may go
     * right after. `held` must still hold when the operation reaches the session's executor (released before
     * that: `error::not_held`); the second guard then holds on its own, whichever of the two goes first.
     */
    template <class CompletionToken = asio::deferred_t>
    auto acquire(const guard& held, CompletionToken&& token = {})
    {
        return asio::async_initiate<CompletionToken, void(error_code, guard)>(
            [](auto h, detail::executor_owned<detail::lock_queue> q, detail::hold_ref hr) {
                detail::async_reenter(std::move(q).take(), std::move(hr), std::move(h));
            },
            token, queue_, hold_of(held));
    }

    /**
     * One look: the lock if nobody holds it, else `error::timeout` as soon as that is known (at once when
     * a coroutine of this session holds or waits for it, else after the look's round trip). Completion
     * `void(error_code, guard)`. The same as acquire with a zero timeout.
     *
     * @par Executor
     * As acquire: the look runs on the session's executor (one hop, inline when already there); the
     * completion runs on the handler's associated executor, never inside this call.
     *
     * @par Per-operation cancellation
     * As acquire: terminal, partial and total alike complete it at once with `operation_aborted`, and the
     * node it may have created is deleted; a signal after the grant does nothing.
     *
     * @par Errors
     * `error::timeout` when the lock was not free: held or awaited by this session, a contender of another
     * process ahead, the session not connected, or no answer from ZooKeeper within the one look's limit
     * (the lesser of 1 s and a quarter of the session timeout). Otherwise as acquire: the session's end
     * (`error::session_expired`, even when the session is renewed; `error::session_closed`,
     * `error::auth_failed`), `error::not_connected`, the refusals (`error::invalid_path`,
     * `error::conflicting_options`, `error::no_session`, `error::draining`, `error::schema_mismatch`,
     * `error::no_create_permission`, `error::no_delete_permission`, `error::no_read_permission`),
     * ZooKeeper's codes, and `operation_aborted` when cancelled or when the last lock object and guard of
     * the path went.
     *
     * @par Thread safety
     * As acquire: may be initiated from any thread or strand, and cancelled from the thread or strand that
     * owns the signal.
     *
     * @par Object lifetimes
     * As acquire: keep this mutex (or another lock object or a guard of the path) until it completes.
     */
    template <class CompletionToken = asio::deferred_t>
    auto try_acquire(CompletionToken&& token = {})
    {
        return acquire(std::chrono::steady_clock::duration::zero(), std::forward<CompletionToken>(token));
    }

    /**
     * Progress for a waiter: completes once this session's place in the lock's queue differs from
     * `known`, with the new place: how many contenders (other sessions' nodes) are ahead of this
     * session's node, 0 once it holds. Run it beside the acquire, e.g.
     *
     *     auto report = [&]() -> asio::awaitable<void> {
     *         for (std::size_t place = 0;;) {
     *             place = co_await m.async_wait_place(place, asio::use_awaitable);
     *             std::cout << place << " ahead\n";
     *         }
     *     };
     *     auto r = co_await (m.acquire(30s, asio::use_awaitable) || report());
     *
     * While a place wait is pending, the session keeps a child watch on the lock directory, so every
     * change in the queue reaches it (an opt-in herd: sessions that do not ask pay nothing). Coroutines
     * of this session queued locally share the session's node and its place. Completion
     * `void(error_code, std::size_t place)`.
     *
     * @par Executor
     * The wait runs on the session's executor (one hop, inline when already there), where the place is
     * kept; the completion runs on the handler's associated executor, never inside this call. When the
     * place already differs from `known`, it completes after the hop without waiting.
     *
     * @par Per-operation cancellation
     * Terminal, partial and total alike complete it at once with `operation_aborted`; the acquire it reports
     * on goes on undisturbed. The directory watch set for it stays until it fires (it is then not set again
     * while nobody waits for the place). A signal after the completion does nothing.
     *
     * @par Errors
     * Success, with the new place. `operation_aborted` when cancelled, or when the last lock object and the
     * last guard of the path went. When this mutex has no state, its constructor's refusal:
     * `error::conflicting_options`, `error::no_session`, `error::invalid_path` (a path too long for the
     * lock's nodes). The session's end (`error::session_closed`, `error::session_expired`,
     * `error::auth_failed`), with the last place it had: no place changes after it. A failed listing does
     * not complete it (it is tried again at the next change; cancel it, as `||` does above, to stop).
     *
     * @par Thread safety
     * As acquire: may be initiated from any thread or strand (it only reads this mutex), and cancelled from
     * the thread or strand that owns the signal.
     *
     * @par Object lifetimes
     * Keep this mutex (or another lock object or a guard of the path) while it waits: when the last one
     * goes, it completes with `operation_aborted`. `known` is copied.
     */
    template <class CompletionToken = asio::deferred_t>
    auto async_wait_place(std::size_t known, CompletionToken&& token = {})
    {
        return detail::initiate_wait_place(token, queue_, refusal_, known);
    }

private:
    template <class CompletionToken>
    auto initiate(detail::deadline d, CompletionToken& token, detail::lease_length l = {})
    {
        return detail::initiate_acquire(token, queue_, refusal_, d, l);
    }

    // Shared by the copies: a coroutine that takes its own copy of a mutex would otherwise allocate a
    // copy of any path longer than the string's inline buffer, and keep it for as long as it waits.
    std::shared_ptr<const std::string> path_;
    error_code refusal_;
    detail::executor_owned<detail::lock_queue> queue_;
};

}  // namespace zklock
