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
 * or a writer that its node is gone.
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

    /// The write side: exclusive. Waits at most `timeout` (zero: one look). `void(error_code, guard)`.
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
        requires(!std::is_same_v<std::decay_t<CompletionToken>, lease>)
    auto acquire(std::chrono::duration<Rep, Period> timeout, CompletionToken&& token = {})
    {
        return detail::initiate_acquire(token, writers_, write_refusal_, detail::deadline_after(timeout));
    }
    /// The write side, held at most for `l` once acquired (see zklock::lease and mutex::acquire).
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
    auto acquire(std::chrono::duration<Rep, Period> timeout, lease l, CompletionToken&& token = {})
    {
        return detail::initiate_acquire(token, writers_, write_refusal_, detail::deadline_after(timeout), l.length);
    }
    /// The write side, waiting until acquired, failed or cancelled. `void(error_code, guard)`.
    template <class CompletionToken = asio::deferred_t>
        requires(!detail::is_duration<std::decay_t<CompletionToken>>::value)
    auto acquire(CompletionToken&& token = {})
    {
        return detail::initiate_acquire(token, writers_, write_refusal_, detail::deadline{});
    }
    /// The write side, one look: the lock if nobody holds it, else `error::timeout` at once.
    /// `void(error_code, guard)`.
    template <class CompletionToken = asio::deferred_t>
    auto try_acquire(CompletionToken&& token = {})
    {
        return acquire(std::chrono::steady_clock::duration::zero(), std::forward<CompletionToken>(token));
    }

    /// The write side until `deadline` on the steady clock. `void(error_code, guard)`.
    template <class CompletionToken = asio::deferred_t>
    auto acquire_until(std::chrono::steady_clock::time_point deadline, CompletionToken&& token = {})
    {
        return detail::initiate_acquire(token, writers_, write_refusal_, deadline);
    }
    /// The read side until `deadline` on the steady clock. `void(error_code, guard)`.
    template <class CompletionToken = asio::deferred_t>
    auto acquire_shared_until(std::chrono::steady_clock::time_point deadline, CompletionToken&& token = {})
    {
        return detail::initiate_acquire(token, readers_, read_refusal_, deadline);
    }

    /// The read side: shared with other readers, never with a writer. `void(error_code, guard)`.
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
        requires(!std::is_same_v<std::decay_t<CompletionToken>, lease>)
    auto acquire_shared(std::chrono::duration<Rep, Period> timeout, CompletionToken&& token = {})
    {
        return detail::initiate_acquire(token, readers_, read_refusal_, detail::deadline_after(timeout));
    }
    /// The read side, held at most for `l` once acquired (see zklock::lease and mutex::acquire).
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
    auto acquire_shared(std::chrono::duration<Rep, Period> timeout, lease l, CompletionToken&& token = {})
    {
        return detail::initiate_acquire(token, readers_, read_refusal_, detail::deadline_after(timeout), l.length);
    }
    /// The read side, waiting until acquired, failed or cancelled. `void(error_code, guard)`.
    template <class CompletionToken = asio::deferred_t>
        requires(!detail::is_duration<std::decay_t<CompletionToken>>::value && !std::is_same_v<std::decay_t<CompletionToken>, guard>)
    auto acquire_shared(CompletionToken&& token = {})
    {
        return detail::initiate_acquire(token, readers_, read_refusal_, detail::deadline{});
    }
    /// The read side, one look: the lock if no writer holds it or waits ahead, else `error::timeout` at
    /// once. `void(error_code, guard)`.
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
     * Signature `void(error_code, guard)`. Cancellation (any type):
     * completes at once with `operation_aborted`; the read node, if made, is deleted in the background.
     * Executor, thread safety: as for `acquire_shared`.
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

    /// The write side's place in the queue (see mutex::async_wait_place). `void(error_code, std::size_t)`.
    template <class CompletionToken = asio::deferred_t>
    auto async_wait_place(std::size_t known, CompletionToken&& token = {})
    {
        return detail::initiate_wait_place(token, writers_, write_refusal_, known);
    }
    /// The read side's place: writers ahead of this session's read node. `void(error_code, std::size_t)`.
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
