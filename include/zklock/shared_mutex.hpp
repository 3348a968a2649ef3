// The distributed read/write lock: `auto g = co_await rw.acquire_shared(5s);` for readers,
// `co_await rw.acquire(5s)` for writers.
#pragma once

#include <zklock/detail/executor_owned.hpp>
#include <zklock/mutex.hpp>

namespace zklock {

namespace detail {
/// The session's queue for one side of the read/write lock on `path`.
std::shared_ptr<lock_queue> rw_queue_for(const std::shared_ptr<session_impl>&, const std::string& path, bool readers,
                                         const mutex_options&, error_code& refusal);
/// The read side for the holder of `write` (see shared_mutex::acquire_shared(const guard&)).
void async_downgrade(std::shared_ptr<lock_queue> readers, std::shared_ptr<lock_queue> writers, hold_ref write,
                     handler<guard> h);
}  // namespace detail

/**
 * A read/write lock on a ZooKeeper path, shared with every process that locks it the same way: zklock's
 * shared_mutex and Curator's InterProcessReadWriteLock queue together on one path.
 *
 * The recipe (Curator's): writers create `PATH/_c_<uuid>-__WRIT__N` and hold when first among readers
 * and writers, watching those ahead; readers create `PATH/_c_<uuid>-__READ__N` and hold when no
 * writer is ahead, watching the writers ahead. Readers of one session share one read node: their
 * coroutines join it freely while no writer queues behind it, and once one does, only while the node has
 * had at most `local_handoff_limit + 1` grants, so that the writer gets its turn; writers of one session
 * queue locally behind one write node, as with `zklock::mutex`.
 *
 * A path that holds another kind of lock's nodes (a mutex's `-lock-`, kazoo's `__lock__`/`__rlock__`, a
 * semaphore's `locks`/`leases`) is refused with `error::schema_mismatch`: the two kinds would not
 * exclude each other.
 *
 * Acquires, guards, deadlines, cancellation, errors, executors and lifetimes are as for `zklock::mutex`
 * (see mutex.hpp); each guard's `token()` grows with every grant, and `async_wait_lost` tells a reader
 * or a writer that its node is gone. Each asynchronous verb below says so in its own paragraphs
 * (executor, per-operation cancellation, errors, thread safety, object lifetimes).
 */
class shared_mutex {
public:
    /// Make it on the session's executor. Options as for `mutex` (linger applies to both sides).
    shared_mutex(session& s, std::string path, mutex_options options = {})
        : path_(std::move(path)),
          readers_(detail::rw_queue_for(s.impl(), path_, true, options, read_refusal_)),
          writers_(detail::rw_queue_for(s.impl(), path_, false, options, write_refusal_))
    {
    }
    // Copies, moves, assignment and the destructor may run on any thread: the shared state is let go on
    // the session's executor (detail::executor_owned).

    /// The lock's path, as given to the constructor.
    const std::string& path() const noexcept { return path_; }

    /**
     * The write side: exclusive. Waits at most `timeout` (zero: one look; too long for the clock: no
     * deadline). `void(error_code, guard)`. These paragraphs hold for the write side's overloads below
     * (with a lease, with no deadline).
     *
     * @par Executor
     * The recipe runs on the session's executor: the initiation hops onto it (inline when already there),
     * and the write node, its watches and the deadline are handled there. The completion runs on the
     * handler's associated executor, never inside this call; until then the operation keeps work
     * outstanding on that executor.
     *
     * @par Per-operation cancellation
     * Terminal, partial and total alike complete the acquire at once with `operation_aborted`, at any stage
     * before the grant: a write node already created is deleted in the background, and a create still in
     * flight is deleted when it completes (other writers of this session queued on the same node keep it;
     * with mutex_options::linger a node that had already become the head lingers, as after a release). A
     * watch already set on a node ahead stays on the server until that node changes or the session ends. A
     * signal after the grant does nothing.
     *
     * @par Errors
     * `error::timeout` when the deadline passed first (reconnects included), or for a one look when the lock
     * was not free (held or awaited by this session's writers, a reader or writer ahead on the server, the
     * session not connected, no answer within the one look's limit). The session's end before the grant:
     * `error::session_expired` (unless session_config::on_expiry is `renew_requeue`: the acquire then waits
     * on for the new session, a one look excepted), `error::session_closed` (also when the session object
     * is destroyed), `error::auth_failed`; `error::not_connected` when the session was never connected.
     * Refusals, which leave nothing behind: `error::schema_mismatch` (the path holds another kind of lock's
     * nodes, above), `error::invalid_path`, `error::invalid_lease` (a lease of zero or less),
     * `error::conflicting_options` (another shared_mutex of this session on the path has other options),
     * `error::no_session`, `error::draining` (session::async_drain), `error::no_create_permission`,
     * `error::no_delete_permission`, `error::no_read_permission` (the lock directory's ACL). ZooKeeper's
     * codes (`zk_errc`) for anything else the server refuses; a lost connection is no error. And
     * `operation_aborted` when cancelled, or when the last lock object and guard of the path's write side
     * went.
     *
     * @par Thread safety
     * May be initiated from any thread or strand (the initiation only reads this object, and hops onto the
     * session's executor), and cancelled from the thread or strand that owns the signal: the slot is bound
     * during the initiation, never emit concurrently with it.
     *
     * @par Object lifetimes
     * Keep this shared_mutex (or another lock object of the same session and path, or a guard of its write
     * side) while the acquire is pending: when the last one goes, pending acquires complete with
     * `operation_aborted`. The session object may be destroyed meanwhile (the acquire then completes with
     * `error::session_closed`); the io_contexts of the session's executor and the handler's must run until
     * it completes.
     */
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
        requires(!std::is_same_v<std::decay_t<CompletionToken>, lease>)
    auto acquire(std::chrono::duration<Rep, Period> timeout, CompletionToken&& token = {})
    {
        return detail::initiate_acquire(token, writers_, write_refusal_, detail::deadline_after(timeout));
    }
    /// As above, the write side held at most for `l` once acquired (see zklock::lease and mutex::acquire).
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
    auto acquire(std::chrono::duration<Rep, Period> timeout, lease l, CompletionToken&& token = {})
    {
        return detail::initiate_acquire(token, writers_, write_refusal_, detail::deadline_after(timeout), l.length);
    }
    /// As above, the write side with no deadline: waits until acquired, failed or cancelled.
    /// `void(error_code, guard)`.
    template <class CompletionToken = asio::deferred_t>
        requires(!detail::is_duration<std::decay_t<CompletionToken>>::value)
    auto acquire(CompletionToken&& token = {})
    {
        return detail::initiate_acquire(token, writers_, write_refusal_, detail::deadline{});
    }
    /**
     * The write side, one look: the lock if nobody holds it, else `error::timeout` as soon as that is
     * known. `void(error_code, guard)`. The same as acquire with a zero timeout.
     *
     * @par Executor
     * As acquire: on the session's executor (one hop); the completion runs on the handler's associated
     * executor, never inside this call.
     *
     * @par Per-operation cancellation
     * As acquire: terminal, partial and total alike complete it at once with `operation_aborted`, and a
     * write node it created is deleted; a signal after the grant does nothing.
     *
     * @par Errors
     * `error::timeout` when the lock was not free (held or awaited by this session's writers, a reader or
     * writer ahead on the server, the session not connected, no answer within the one look's limit). Otherwise
     * as acquire: the session's end (`error::session_expired`, even when the session is renewed), the
     * refusals (`error::schema_mismatch`, `error::invalid_path`, `error::conflicting_options`, ...),
     * ZooKeeper's codes, `operation_aborted`.
     *
     * @par Thread safety
     * As acquire: from any thread or strand; cancelled from the thread or strand that owns the signal.
     *
     * @par Object lifetimes
     * As acquire: keep this shared_mutex (or another lock object or a write guard of the path) until it
     * completes.
     */
    template <class CompletionToken = asio::deferred_t>
    auto try_acquire(CompletionToken&& token = {})
    {
        return acquire(std::chrono::steady_clock::duration::zero(), std::forward<CompletionToken>(token));
    }

    /**
     * The write side until `deadline` on the steady clock (one already passed: a one look).
     * `void(error_code, guard)`.
     *
     * @par Executor
     * As acquire: on the session's executor (one hop); the completion runs on the handler's associated
     * executor, never inside this call.
     *
     * @par Per-operation cancellation
     * As acquire: terminal, partial and total alike complete it at once with `operation_aborted` before the
     * grant, and what it created is given back; a signal after the grant does nothing.
     *
     * @par Errors
     * As acquire: `error::timeout` once `deadline` has passed first; the session's end; the refusals
     * (`error::schema_mismatch`, `error::invalid_path`, `error::conflicting_options`, `error::no_session`,
     * `error::draining`, the ACL's); ZooKeeper's codes; `operation_aborted`.
     *
     * @par Thread safety
     * As acquire: from any thread or strand; cancelled from the thread or strand that owns the signal.
     *
     * @par Object lifetimes
     * As acquire: keep this shared_mutex (or another lock object or a write guard of the path) until it
     * completes.
     */
    template <class CompletionToken = asio::deferred_t>
    auto acquire_until(std::chrono::steady_clock::time_point deadline, CompletionToken&& token = {})
    {
        return detail::initiate_acquire(token, writers_, write_refusal_, deadline);
    }
    /**
     * The read side until `deadline` on the steady clock (one already passed: a one look).
     * `void(error_code, guard)`.
     *
     * @par Executor
     * As acquire_shared: on the session's executor (one hop); the completion runs on the handler's
     * associated executor, never inside this call.
     *
     * @par Per-operation cancellation
     * As acquire_shared: terminal, partial and total alike complete it at once with `operation_aborted`
     * before the grant, and what it created is given back; a signal after the grant does nothing.
     *
     * @par Errors
     * As acquire_shared: `error::timeout` once `deadline` has passed first; the session's end; the refusals
     * (`error::schema_mismatch`, `error::invalid_path`, `error::conflicting_options`, `error::no_session`,
     * `error::draining`, the ACL's); ZooKeeper's codes; `operation_aborted`.
     *
     * @par Thread safety
     * As acquire_shared: from any thread or strand; cancelled from the thread or strand that owns the
     * signal.
     *
     * @par Object lifetimes
     * As acquire_shared: keep this shared_mutex (or another lock object or a read guard of the path) until
     * it completes.
     */
    template <class CompletionToken = asio::deferred_t>
    auto acquire_shared_until(std::chrono::steady_clock::time_point deadline, CompletionToken&& token = {})
    {
        return detail::initiate_acquire(token, readers_, read_refusal_, deadline);
    }

    /**
     * The read side: shared with other readers, never with a writer. Waits at most `timeout` (zero: one
     * look; too long for the clock: no deadline). `void(error_code, guard)`. These paragraphs hold for the
     * read side's overloads below (with a lease, with no deadline); the downgrade,
     * `acquire_shared(const guard&)`, has its own.
     *
     * @par Executor
     * The recipe runs on the session's executor: the initiation hops onto it (inline when already there),
     * and the read node, its watches and the deadline are handled there. The completion runs on the
     * handler's associated executor, never inside this call; until then the operation keeps work
     * outstanding on that executor.
     *
     * @par Per-operation cancellation
     * Terminal, partial and total alike complete the acquire at once with `operation_aborted`, at any stage
     * before the grant. The session's readers share one read node: it stays while another reader of this
     * session waits or holds, else it is deleted in the background (a create still in flight: when it
     * completes; with mutex_options::linger a node that had already become the head lingers, as after a
     * release). A watch already set on a writer ahead stays on the server until that node changes or the
     * session ends. A signal after the grant does nothing.
     *
     * @par Errors
     * `error::timeout` when the deadline passed first (reconnects included), or for a one look when the lock
     * could not be had at once (a writer holds or waits ahead, this session's read node is not joinable,
     * the session not connected, no answer within the one look's limit). The session's end
     * before the grant: `error::session_expired` (unless session_config::on_expiry is `renew_requeue`: the
     * acquire then waits on for the new session, a one look excepted), `error::session_closed` (also when
     * the session object is destroyed), `error::auth_failed`; `error::not_connected` when the session was
     * never connected. Refusals, which leave nothing behind: `error::schema_mismatch` (the path holds another
     * kind of lock's nodes, above), `error::invalid_path`, `error::invalid_lease` (a lease of zero or less),
     * `error::conflicting_options` (another shared_mutex of this session on the path has other options),
     * `error::no_session`, `error::draining` (session::async_drain), `error::no_create_permission`,
     * `error::no_delete_permission`, `error::no_read_permission` (the lock directory's ACL). ZooKeeper's
     * codes (`zk_errc`) for anything else the server refuses; a lost connection is no error. And
     * `operation_aborted` when cancelled, or when the last lock object and guard of the path's read side
     * went.
     *
     * @par Thread safety
     * May be initiated from any thread or strand (the initiation only reads this object, and hops onto the
     * session's executor), and cancelled from the thread or strand that owns the signal: the slot is bound
     * during the initiation, never emit concurrently with it.
     *
     * @par Object lifetimes
     * Keep this shared_mutex (or another lock object of the same session and path, or a guard of its read
     * side) while the acquire is pending: when the last one goes, pending acquires complete with
     * `operation_aborted`. The session object may be destroyed meanwhile (the acquire then completes with
     * `error::session_closed`); the io_contexts of the session's executor and the handler's must run until
     * it completes.
     */
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
        requires(!std::is_same_v<std::decay_t<CompletionToken>, lease>)
    auto acquire_shared(std::chrono::duration<Rep, Period> timeout, CompletionToken&& token = {})
    {
        return detail::initiate_acquire(token, readers_, read_refusal_, detail::deadline_after(timeout));
    }
    /// As above, the read side held at most for `l` once acquired (see zklock::lease and mutex::acquire).
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
    auto acquire_shared(std::chrono::duration<Rep, Period> timeout, lease l, CompletionToken&& token = {})
    {
        return detail::initiate_acquire(token, readers_, read_refusal_, detail::deadline_after(timeout), l.length);
    }
    /// As above, the read side with no deadline: waits until acquired, failed or cancelled.
    /// `void(error_code, guard)`.
    template <class CompletionToken = asio::deferred_t>
        requires(!detail::is_duration<std::decay_t<CompletionToken>>::value && !std::is_same_v<std::decay_t<CompletionToken>, guard>)
    auto acquire_shared(CompletionToken&& token = {})
    {
        return detail::initiate_acquire(token, readers_, read_refusal_, detail::deadline{});
    }
    /**
     * The read side, one look: the lock if no writer holds it or waits ahead, else `error::timeout` as soon
     * as that is known. `void(error_code, guard)`. The same as acquire_shared with a zero timeout.
     *
     * @par Executor
     * As acquire_shared: on the session's executor (one hop); the completion runs on the handler's
     * associated executor, never inside this call.
     *
     * @par Per-operation cancellation
     * As acquire_shared: terminal, partial and total alike complete it at once with `operation_aborted`,
     * and a read node made for it alone is deleted; a signal after the grant does nothing.
     *
     * @par Errors
     * `error::timeout` when the lock could not be had at once (a writer holds or waits ahead, this session's
     * read node is not joinable, the session not connected, no answer within the one look's limit).
     * Otherwise as acquire_shared: the session's end (`error::session_expired`, even when the session is
     * renewed), the refusals (`error::schema_mismatch`, `error::invalid_path`, `error::conflicting_options`,
     * ...), ZooKeeper's codes, `operation_aborted`.
     *
     * @par Thread safety
     * As acquire_shared: from any thread or strand; cancelled from the thread or strand that owns the
     * signal.
     *
     * @par Object lifetimes
     * As acquire_shared: keep this shared_mutex (or another lock object or a read guard of the path) until
     * it completes.
     */
    template <class CompletionToken = asio::deferred_t>
    auto try_acquire_shared(CompletionToken&& token = {})
    {
        return acquire_shared(std::chrono::steady_clock::duration::zero(), std::forward<CompletionToken>(token));
    }

    /**
     * Downgrade: the read side for the holder of the write guard `write`, in one round trip, with no
     * writer slipping in between: release `write` and keep reading under the returned guard. The read
     * guard has a read node of its own, made while the write node is held and not waiting for it; so once
     * `write` is released, other readers (of this session and of other processes, Curator's included) read
     * beside it, while a writer still waits for it. (Curator's downgrade, by contrast, lets in a writer
     * that queued while the write lock was held.) If a writer of another session queued between the write
     * node and the new read node, the guard instead holds the write node too, until it goes: that writer,
     * and readers behind it, wait for it.
     *
     * Completes with `error::not_held` if `write` is not a write guard of this lock (of this session and
     * path), holds nothing, or lost its lock; with `error::ownership_uncertain` if the session has had no
     * answer through the leader for longer than the loss grace (the guard would be lost at birth; `write`
     * hears the same); with the read node's error if it could not be made (e.g. `error::not_connected`).
     * Signature `void(error_code, guard)`.
     *
     * @par Executor
     * The initiation hops onto the session's executor (inline when already there), where the read node is
     * made and listed once (a one look: when the read node cannot be had at once, e.g. no answer within the
     * one look's limit, the guard holds the write node too, as when a writer is in between). The
     * completion runs on the handler's associated executor, never inside this call.
     *
     * @par Per-operation cancellation
     * Terminal, partial and total alike complete it at once with `operation_aborted`: before the hop nothing
     * is made; after it, the read node, if made (or once its create completes), is deleted in the
     * background. `write` keeps holding, undisturbed. A signal after the completion does nothing.
     *
     * @par Errors
     * `error::not_held` (not a write guard of this lock, empty, released or lost, or this shared_mutex has
     * no state); `error::ownership_uncertain` (the loss clock ran out); the read node's error, as
     * acquire_shared reports it (the session's end, `error::not_connected`, `error::draining`,
     * `error::schema_mismatch`, the ACL's refusals, ZooKeeper's codes); `operation_aborted` when cancelled.
     *
     * @par Thread safety
     * May be initiated from any thread or strand: the initiation only reads this shared_mutex and `write`
     * (neither may be modified by another thread meanwhile). Cancel from the thread or strand that owns the
     * signal (the slot is bound during the initiation).
     *
     * @par Object lifetimes
     * What the operation needs of this shared_mutex and of `write` is copied when it is called, and it
     * keeps both sides' state and its read node's own: the shared_mutex may go right after. `write` must
     * still hold when the operation reaches the session's executor (else `error::not_held`); the returned
     * guard then holds on its own: release `write` whenever convenient.
     */
    template <class CompletionToken = asio::deferred_t>
    auto acquire_shared(const guard& write, CompletionToken&& token = {})
    {
        return asio::async_initiate<CompletionToken, void(error_code, guard)>(
            [](auto h, detail::executor_owned<detail::lock_queue> r, detail::executor_owned<detail::lock_queue> w,
               detail::hold_ref g) {
                detail::async_downgrade(std::move(r).take(), std::move(w).take(), std::move(g), std::move(h));
            },
            token, readers_, writers_, hold_of(write));
    }

    /**
     * The write side's place in the queue (see mutex::async_wait_place): readers and writers of other
     * sessions ahead of this session's write node, 0 once it holds. `void(error_code, std::size_t)`.
     *
     * @par Executor
     * As mutex::async_wait_place: the wait runs on the session's executor (one hop); the completion runs on
     * the handler's associated executor, never inside this call (after the hop at once when the place
     * already differs from `known`).
     *
     * @par Per-operation cancellation
     * Terminal, partial and total alike complete it at once with `operation_aborted`; the acquire goes on
     * undisturbed. A signal after the completion does nothing.
     *
     * @par Errors
     * Success with the new place; `operation_aborted` when cancelled or when the last lock object and guard
     * of the write side went; this object's constructor refusal (`error::conflicting_options`,
     * `error::no_session`, `error::invalid_path`) when it has no state; the session's end
     * (`error::session_closed`, `error::session_expired`, `error::auth_failed`), with the last place.
     *
     * @par Thread safety
     * From any thread or strand (the initiation only reads this object); cancelled from the thread or
     * strand that owns the signal.
     *
     * @par Object lifetimes
     * Keep this shared_mutex (or another lock object or a write guard of the path) while it waits.
     */
    template <class CompletionToken = asio::deferred_t>
    auto async_wait_place(std::size_t known, CompletionToken&& token = {})
    {
        return detail::initiate_wait_place(token, writers_, write_refusal_, known);
    }
    /**
     * The read side's place: writers ahead of this session's read node, 0 once it holds.
     * `void(error_code, std::size_t)`.
     *
     * @par Executor
     * As mutex::async_wait_place: the wait runs on the session's executor (one hop); the completion runs on
     * the handler's associated executor, never inside this call (after the hop at once when the place
     * already differs from `known`).
     *
     * @par Per-operation cancellation
     * Terminal, partial and total alike complete it at once with `operation_aborted`; the acquire goes on
     * undisturbed. A signal after the completion does nothing.
     *
     * @par Errors
     * Success with the new place; `operation_aborted` when cancelled or when the last lock object and guard
     * of the read side went; this object's constructor refusal (`error::conflicting_options`,
     * `error::no_session`, `error::invalid_path`) when it has no state; the session's end
     * (`error::session_closed`, `error::session_expired`, `error::auth_failed`), with the last place.
     *
     * @par Thread safety
     * From any thread or strand (the initiation only reads this object); cancelled from the thread or
     * strand that owns the signal.
     *
     * @par Object lifetimes
     * Keep this shared_mutex (or another lock object or a read guard of the path) while it waits.
     */
    template <class CompletionToken = asio::deferred_t>
    auto async_wait_shared_place(std::size_t known, CompletionToken&& token = {})
    {
        return detail::initiate_wait_place(token, readers_, read_refusal_, known);
    }

private:
    std::string path_;
    error_code read_refusal_, write_refusal_;
    detail::executor_owned<detail::lock_queue> readers_, writers_;
};

}  // namespace zklock
