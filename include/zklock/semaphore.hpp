// The distributed counting semaphore: at most N permits held at once across every process on a path.
#pragma once

#include <zklock/acl.hpp>
#include <zklock/detail/acquire.hpp>
#include <zklock/detail/executor_owned.hpp>
#include <zklock/guard.hpp>
#include <zklock/session.hpp>

#include <string>
#include <vector>

namespace zklock {

/// Options of a semaphore, taken by the zklock::semaphore constructor; each field is explained below.
struct semaphore_options {
    /// How many times in a row a released permit may pass to a coroutine of this session that waits for
    /// one, without a round trip, before it goes back to ZooKeeper so that other processes get a turn.
    std::size_t local_handoff_limit = 10;
    /// ACL of the permit nodes (`PATH/leases/...`), of the internal lock's nodes and of the parents created
    /// on demand.
    zklock::acl acl = open_acl();
    /// The label this semaphore's figures are counted under (see mutex_options::stats_label).
    std::string stats_label{};

    /// Equal when every field is: semaphore objects of one session on one path must have equal options.
    friend bool operator==(const semaphore_options&, const semaphore_options&) = default;
};

namespace detail {
class semaphore_queue;
std::shared_ptr<semaphore_queue> semaphore_queue_for(const std::shared_ptr<session_impl>&, const std::string& path,
                                                     std::size_t max_permits, const semaphore_options&,
                                                     error_code& refusal);
void async_acquire_leases(std::shared_ptr<semaphore_queue>, std::size_t n, deadline, lease_length,
                          handler<std::vector<guard>>);
void async_acquire_lease(std::shared_ptr<semaphore_queue>, deadline, lease_length, handler<guard>);
void refuse_leases(error_code why, handler<std::vector<guard>>);
void drop_on_executor(std::shared_ptr<semaphore_queue>) noexcept;
}  // namespace detail

/**
 * A semaphore of `max_permits` permits on a ZooKeeper path, shared with every process that uses the same
 * path and count: zklock's semaphore and Curator's InterProcessSemaphoreV2 take permits from one pool.
 * (Curator and kazoo call a permit a *lease*; zklock keeps that word for a hold-time limit, zklock::lease.
 * On the server a permit is Curator's lease node, and `zklock ls` lists it as a "lease".)
 *
 * The recipe (Curator SemaphoreV2's): under an internal lock at `PATH/locks` (a mutex), a waiter creates
 * its permit nodes `PATH/leases/_c_<uuid>-lease-N` and waits, watching `PATH/leases`, until that
 * directory has at most `max_permits` children; then it releases the internal lock and holds its permits.
 * (A session whose last run held at its first count sends the lock's delete right behind the creates
 * and the listing: ZooKeeper answers the listing first, so the count is the same, one write sooner. If
 * that count is over, the permits go and the waiter takes the lock again and waits under it.)
 * Only one waiter at a time (the internal lock's holder) watches the permits, so a release wakes one
 * process, not all. Several permits are taken all together or not at all. Before its first permit on a
 * path, a session looks at PATH: another kind of lock's nodes there refuse it before anything is created.
 *
 * The coroutines of one session that wait on one semaphore are served in the order they asked, whatever
 * each asks for. A permit released by one of them passes to the oldest one waiting here without a round
 * trip, if that one wants a single permit: up to `local_handoff_limit` times in a row, and beyond that
 * while no other process waits for a permit. When the oldest wants several, released permits go back to
 * ZooKeeper until it has them all, so that nobody here waits behind younger waiters.
 *
 * The count is not stored on the server (as with Curator): every user of a path must agree on it.
 * (zklock writes its own count into its permit nodes, see participant::max_permits, so that `zklock
 * --limit` can warn about a disagreement.)
 *
 * Each permit is a `guard`: `node()` is its permit node, `token()` its fencing token, `async_wait_lost()`
 * tells of its loss (its node deleted, the session expired, no answer within the loss grace).
 */
class semaphore {
public:
    /// Make it on the session's executor. Another semaphore object of this session on the same path must
    /// have the same count and options (else `error::conflicting_options`); a count of 0 makes every
    /// acquire fail with `error::invalid_permit_count`.
    semaphore(session& s, std::string path, std::size_t max_permits, semaphore_options options = {})
        : path_(std::move(path)), max_permits_(max_permits),
          queue_(detail::semaphore_queue_for(s.impl(), path_, max_permits, options, refusal_))
    {
    }
    // Copies, moves, assignment and the destructor may run on any thread: the shared state is let go on
    // the session's executor (detail::executor_owned).

    /// The semaphore's path, as given to the constructor.
    const std::string& path() const noexcept { return path_; }
    /// How many permits may be held at once on the path, as given to the constructor.
    std::size_t max_permits() const noexcept { return max_permits_; }
    /// The old name of max_permits(), from when a permit was called a lease as in Curator.
    [[deprecated("a semaphore's leases are now called permits: use max_permits()")]]
    std::size_t max_leases() const noexcept { return max_permits_; }

    /**
     * One permit, waiting at most `timeout` (zero: one look). Completion `void(error_code, guard)`: the
     * guard holds the permit.
     *
     * @par Executor
     * The recipe runs on the session's executor; the completion runs on the handler's associated executor,
     * never inside this call.
     *
     * @par Per-operation cancellation
     * Terminal, partial and total: the acquire completes at once with `operation_aborted`. A permit node
     * already created is deleted in the background, one still being created is deleted when it is, and the
     * internal lock is let go: nothing is left behind.
     *
     * @par Errors
     * `error::timeout` when `timeout` passed first (reconnects included); `error::invalid_permit_count`
     * for a semaphore of 0 permits; `error::schema_mismatch` when PATH holds another kind of lock's nodes
     * (nothing is created); `error::conflicting_options`; and those of mutex::acquire (session ended or
     * closed, invalid path, `error::no_session`, ACL refusals, ZooKeeper's codes).
     *
     * @par Thread safety
     * May be started from any thread (it hops onto the session's executor), and cancelled from the thread
     * that owns the cancellation signal.
     *
     * @par Object lifetimes
     * Keep this semaphore object (or another of the same session and path) while the acquire is pending:
     * when the last one and the last guard of a path go, pending acquires complete with
     * `operation_aborted`. The session must still be open for the acquire to succeed.
     */
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
        requires(!std::is_same_v<std::decay_t<CompletionToken>, lease>)
    auto acquire(std::chrono::duration<Rep, Period> timeout, CompletionToken&& token = {})
    {
        return initiate_one(detail::deadline_after(timeout), token);
    }
    /// As above, the permit held at most for `l` once acquired (see zklock::lease and mutex::acquire): when
    /// it runs out the permit goes back to the pool and the guard's loss signal says `error::lease_expired`.
    /// A lease of zero or less completes with `error::invalid_lease`.
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
    auto acquire(std::chrono::duration<Rep, Period> timeout, lease l, CompletionToken&& token = {})
    {
        return initiate_one(detail::deadline_after(timeout), token, l.length);
    }
    /// As above, waiting until acquired, failed or cancelled.
    template <class CompletionToken = asio::deferred_t>
        requires(!detail::is_duration<std::decay_t<CompletionToken>>::value)
    auto acquire(CompletionToken&& token = {})
    {
        return initiate_one(detail::deadline{}, token);
    }

    /**
     * One look: a permit if one is free now, else `error::timeout` at once (after the round trips that
     * one look takes). Completion `void(error_code, guard)`.
     *
     * @par Executor
     * As acquire: on the session's executor; the completion on the handler's associated executor.
     * @par Per-operation cancellation
     * As acquire: terminal, partial and total complete it at once with `operation_aborted`, nothing left.
     * @par Errors
     * As acquire, `error::timeout` meaning that no permit was free.
     * @par Thread safety
     * As acquire: from any thread.
     * @par Object lifetimes
     * As acquire: keep the semaphore object until it completes.
     */
    template <class CompletionToken = asio::deferred_t>
    auto try_acquire(CompletionToken&& token = {})
    {
        return acquire(std::chrono::steady_clock::duration::zero(), std::forward<CompletionToken>(token));
    }

    /**
     * One permit, waiting until `deadline` on the steady clock. Completion `void(error_code, guard)`.
     *
     * @par Executor
     * As acquire: on the session's executor; the completion on the handler's associated executor.
     * @par Per-operation cancellation
     * As acquire: terminal, partial and total complete it at once with `operation_aborted`, nothing left.
     * @par Errors
     * As acquire, `error::timeout` once `deadline` has passed.
     * @par Thread safety
     * As acquire: from any thread.
     * @par Object lifetimes
     * As acquire: keep the semaphore object until it completes.
     */
    template <class CompletionToken = asio::deferred_t>
        requires(!std::is_same_v<std::decay_t<CompletionToken>, lease>)
    auto acquire_until(std::chrono::steady_clock::time_point deadline, CompletionToken&& token = {})
    {
        return initiate_one(deadline, token);
    }
    /// As above, the permit held at most for `l` once acquired (see acquire with a lease).
    template <class CompletionToken = asio::deferred_t>
    auto acquire_until(std::chrono::steady_clock::time_point deadline, lease l, CompletionToken&& token = {})
    {
        return initiate_one(deadline, token, l.length);
    }

    /**
     * `n` permits, all or none, waiting at most `timeout`. Completion `void(error_code, std::vector<guard>)`:
     * `n` guards on success, none otherwise. Counted as one acquire in the statistics.
     *
     * @par Executor
     * As acquire: on the session's executor; the completion on the handler's associated executor.
     * @par Per-operation cancellation
     * Terminal, partial and total complete it at once with `operation_aborted`; every permit node it
     * created is deleted: none of the `n` stays held.
     * @par Errors
     * As acquire, and `error::invalid_permit_count` for 0 permits, more than `max_permits()`, or more
     * than 4096 in one call.
     * @par Thread safety
     * As acquire: from any thread.
     * @par Object lifetimes
     * As acquire: keep the semaphore object until it completes.
     */
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
        requires(!std::is_same_v<std::decay_t<CompletionToken>, lease>)
    auto acquire_many(std::size_t n, std::chrono::duration<Rep, Period> timeout, CompletionToken&& token = {})
    {
        return initiate_many(n, detail::deadline_after(timeout), token);
    }
    /// As above, each permit held at most for `l` once acquired.
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
    auto acquire_many(std::size_t n, std::chrono::duration<Rep, Period> timeout, lease l, CompletionToken&& token = {})
    {
        return initiate_many(n, detail::deadline_after(timeout), token, l.length);
    }

private:
    template <class CompletionToken>
    auto initiate_many(std::size_t n, detail::deadline d, CompletionToken& token, detail::lease_length l = {})
    {
        return asio::async_initiate<CompletionToken, void(error_code, std::vector<guard>)>(
            [](auto h, detail::executor_owned<detail::semaphore_queue> q, error_code refusal, std::size_t count,
               detail::deadline dl, detail::lease_length ll) {
                if (q.get()) detail::async_acquire_leases(std::move(q).take(), count, dl, ll, std::move(h));
                else detail::refuse_leases(refusal, std::move(h));
            },
            token, queue_, refusal_, n, d, l);
    }
    template <class CompletionToken>
    auto initiate_one(detail::deadline d, CompletionToken& token, detail::lease_length l = {})
    {
        return asio::async_initiate<CompletionToken, void(error_code, guard)>(
            [](auto h, detail::executor_owned<detail::semaphore_queue> q, error_code refusal, detail::deadline dl,
               detail::lease_length ll) {
                if (q.get()) detail::async_acquire_lease(std::move(q).take(), dl, ll, std::move(h));
                else detail::refuse_acquire(refusal, std::move(h));
            },
            token, queue_, refusal_, d, l);
    }

    std::string path_;
    std::size_t max_permits_;
    error_code refusal_;
    detail::executor_owned<detail::semaphore_queue> queue_;
};

}  // namespace zklock
