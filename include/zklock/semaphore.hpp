// The distributed counting semaphore: at most N leases held at once across every process on a path.
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
    /// How many times in a row a released lease may pass to a coroutine of this session that waits for
    /// one, without a round trip, before it goes back to ZooKeeper so that other processes get a turn.
    std::size_t local_handoff_limit = 10;
    /// ACL of the lease and lock nodes and of the parents created on demand.
    zklock::acl acl = open_acl();
    /// The label this semaphore's figures are counted under (see mutex_options::stats_label).
    std::string stats_label{};

    /// Equal when every field is: semaphore objects of one session on one path must have equal options.
    friend bool operator==(const semaphore_options&, const semaphore_options&) = default;
};

namespace detail {
class semaphore_queue;
std::shared_ptr<semaphore_queue> semaphore_queue_for(const std::shared_ptr<session_impl>&, const std::string& path,
                                                     std::size_t max_leases, const semaphore_options&,
                                                     error_code& refusal);
void async_acquire_leases(std::shared_ptr<semaphore_queue>, std::size_t n, deadline, lease_length,
                          handler<std::vector<guard>>);
void async_acquire_lease(std::shared_ptr<semaphore_queue>, deadline, lease_length, handler<guard>);
void refuse_leases(error_code why, handler<std::vector<guard>>);
void drop_on_executor(std::shared_ptr<semaphore_queue>) noexcept;
}  // namespace detail

/**
 * A semaphore of `max_leases` leases on a ZooKeeper path, shared with every process that uses the same
 * path and count: zklock's semaphore and Curator's InterProcessSemaphoreV2 take leases from one pool.
 *
 * The recipe (Curator SemaphoreV2's): under an internal lock at `PATH/locks` (a mutex), a waiter creates
 * its lease nodes `PATH/leases/_c_<uuid>-lease-N` and waits, watching `PATH/leases`, until that
 * directory has at most `max_leases` children; then it releases the internal lock and holds its leases.
 * (A session whose last run held at its first count sends the lock's delete right behind the creates
 * and the listing: ZooKeeper answers the listing first, so the count is the same, one write sooner. If
 * that count is over, the leases go and the waiter takes the lock again and waits under it.)
 * Only one waiter at a time (the internal lock's holder) watches the leases, so a release wakes one
 * process, not all. Several leases are taken all together or not at all. Before its first lease on a path,
 * a session looks at PATH: another kind of lock's nodes there refuse it before anything is created.
 *
 * The coroutines of one session that wait on one semaphore are served in the order they asked, whatever
 * each asks for. A lease released by one of them passes to the oldest one waiting here without a round
 * trip, if that one wants a single lease: up to `local_handoff_limit` times in a row, and beyond that
 * while no other process waits for a lease. When the oldest wants several, released leases go back to
 * ZooKeeper until it has them all, so that nobody here waits behind younger waiters.
 *
 * The count is not stored on the server (as with Curator): every user of a path must agree on it.
 *
 * Each lease is a `guard`: `node()` is its lease node, `token()` its fencing token, `async_wait_lost()`
 * tells of its loss (its node deleted, the session expired, no answer within the loss grace).
 *
 * @par Errors
 * As for `mutex::acquire`, and `error::invalid_lease_count` for 0 leases, more than `max_leases`, or more
 * than 4096 in one `acquire_many`; `error::schema_mismatch` when the path holds another kind of lock's
 * nodes (nothing is created).
 *
 * @par Cancellation, executor, thread safety, lifetimes
 * As for `zklock::mutex`: any cancellation type completes the acquire at once with `operation_aborted`
 * and deletes whatever it created in the background; initiation from any thread; completion on the
 * handler's executor; keep a semaphore object while its acquires are pending.
 */
class semaphore {
public:
    /// Make it on the session's executor. Another semaphore object of this session on the same path must
    /// have the same count and options (else `error::conflicting_options`).
    semaphore(session& s, std::string path, std::size_t max_leases, semaphore_options options = {})
        : path_(std::move(path)), max_leases_(max_leases),
          queue_(detail::semaphore_queue_for(s.impl(), path_, max_leases, options, refusal_))
    {
    }
    // Copies, moves, assignment and the destructor may run on any thread: the shared state is let go on
    // the session's executor (detail::executor_owned).

    /// The semaphore's path, as given to the constructor.
    const std::string& path() const noexcept { return path_; }
    /// How many leases may be held at once on the path, as given to the constructor.
    std::size_t max_leases() const noexcept { return max_leases_; }

    /// One lease, waiting at most `timeout` (zero: one look). Completion `void(error_code, guard)`.
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
        requires(!std::is_same_v<std::decay_t<CompletionToken>, lease>)
    auto acquire(std::chrono::duration<Rep, Period> timeout, CompletionToken&& token = {})
    {
        return initiate_one(detail::deadline_after(timeout), token);
    }
    /// One lease, held at most for `l` once acquired (see zklock::lease and mutex::acquire): when it
    /// runs out the lease goes back to the pool. Completion `void(error_code, guard)`.
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
    auto acquire(std::chrono::duration<Rep, Period> timeout, lease l, CompletionToken&& token = {})
    {
        return initiate_one(detail::deadline_after(timeout), token, l.length);
    }
    /// One lease, waiting until acquired, failed or cancelled. Completion `void(error_code, guard)`.
    template <class CompletionToken = asio::deferred_t>
        requires(!detail::is_duration<std::decay_t<CompletionToken>>::value)
    auto acquire(CompletionToken&& token = {})
    {
        return initiate_one(detail::deadline{}, token);
    }
    /// One look: a lease if one is free now, else `error::timeout` at once. Completion `void(error_code, guard)`.
    template <class CompletionToken = asio::deferred_t>
    auto try_acquire(CompletionToken&& token = {})
    {
        return acquire(std::chrono::steady_clock::duration::zero(), std::forward<CompletionToken>(token));
    }

    /// One lease, waiting until `deadline` on the steady clock. Completion `void(error_code, guard)`.
    template <class CompletionToken = asio::deferred_t>
    auto acquire_until(std::chrono::steady_clock::time_point deadline, CompletionToken&& token = {})
    {
        return initiate_one(deadline, token);
    }

    /// `n` leases, all or none, waiting at most `timeout`. Completion `void(error_code, std::vector<guard>)`.
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
        requires(!std::is_same_v<std::decay_t<CompletionToken>, lease>)
    auto acquire_many(std::size_t n, std::chrono::duration<Rep, Period> timeout, CompletionToken&& token = {})
    {
        return initiate_many(n, detail::deadline_after(timeout), token);
    }
    /// `n` leases, all or none, each held at most for `l` once acquired.
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
    std::size_t max_leases_;
    error_code refusal_;
    detail::executor_owned<detail::semaphore_queue> queue_;
};

}  // namespace zklock
