// The distributed mutex: `auto g = co_await m.acquire(5s);`.
#pragma once

#include <zklock/acl.hpp>
#include <zklock/detail/acquire.hpp>
#include <zklock/detail/executor_owned.hpp>
#include <zklock/guard.hpp>
#include <zklock/lease.hpp>
#include <zklock/session.hpp>

#include <chrono>
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
 * @par Per-operation cancellation
 * Any type (terminal, partial, total) completes the acquire at once with `operation_aborted`; a node
 * already created is deleted in the background, and a create still in flight is deleted when it
 * completes. No node is left behind. A watch already set on the node ahead stays on the server until
 * that node changes or the session ends (the C client cannot remove it there).
 *
 * @par Errors
 * `error::timeout` when the deadline passed first (it covers the whole acquire, reconnects included),
 * `error::session_expired` (unless session_config::on_expiry is `renew_requeue`: the acquire then waits
 * on for the new session), `error::session_closed`, `error::not_connected`, `error::invalid_path`,
 * `error::conflicting_options`, `error::no_session`, `error::no_create_permission`,
 * `error::no_delete_permission`, `error::no_read_permission` (the lock directory's ACL; nothing is
 * created then), and ZooKeeper's codes for anything else the server refuses.
 *
 * @par Executor and thread safety
 * Make a mutex on its session's executor. `acquire` may be initiated from any thread or strand, and
 * cancelled from the thread that owns the cancellation signal (e.g. a connection's strand with `||`): it
 * hops onto the session's executor, and completes on the handler's associated executor. A mutex may be
 * destroyed on any thread.
 *
 * @par Lifetimes
 * Keep a mutex (or another of the same session and path) while its acquires are pending: when the last
 * one and the last guard of a path go, pending acquires complete with `operation_aborted`.
 */
class mutex {
public:
    /// Make it on the session's executor (it looks up the session's state for this path).
    /// A second mutex of the same session on the same path must have the same options; otherwise its
    /// acquires complete with `error::conflicting_options`. A moved-from session gives `error::no_session`.
    mutex(session& s, std::string path, mutex_options options = {})
        : path_(std::move(path)), queue_(detail::lock_queue_for(s.impl(), path_, options, refusal_))
    {
    }
    // Copies, moves, assignment and the destructor may run on any thread: the shared state is let go on
    // the session's executor (detail::executor_owned).

    /// The lock's path, as given to the constructor.
    const std::string& path() const noexcept { return path_; }

    /// Waits at most `timeout` (zero: one look, as try_acquire; a timeout too long for the clock, such
    /// as seconds::max(): no deadline). Completion `void(error_code, guard)`.
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

    /// Waits until acquired, failed or cancelled. Completion `void(error_code, guard)`.
    template <class CompletionToken = asio::deferred_t>
        requires(!detail::is_duration<std::decay_t<CompletionToken>>::value &&
                 !std::is_same_v<std::decay_t<CompletionToken>, guard> &&
                 !std::is_same_v<std::decay_t<CompletionToken>, lease>)
    auto acquire(CompletionToken&& token = {})
    {
        return initiate(detail::deadline{}, token);
    }

    /// Waits with no deadline, holding at most for `l` once acquired. Completion `void(error_code, guard)`.
    template <class CompletionToken = asio::deferred_t>
    auto acquire(lease l, CompletionToken&& token = {})
    {
        return initiate(detail::deadline{}, token, l.length);
    }

    /// Waits until `deadline` on the steady clock (one deadline for several steps, as multi_lock uses).
    /// Completion `void(error_code, guard)`.
    template <class CompletionToken = asio::deferred_t>
        requires(!std::is_same_v<std::decay_t<CompletionToken>, lease>)
    auto acquire_until(std::chrono::steady_clock::time_point deadline, CompletionToken&& token = {})
    {
        return initiate(deadline, token);
    }

    /// Waits until `deadline`, holding at most for `l` once acquired. Completion `void(error_code, guard)`.
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
     * Completion `void(error_code, guard)`. Cancellation: none (it completes after one hop onto the
     * session's executor, with nothing to undo).
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

    /// One look: the lock if nobody holds it, else `error::timeout` at once. Completion `void(error_code, guard)`.
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
     * `void(error_code, std::size_t place)`; `operation_aborted` when cancelled (any type) or the last
     * lock object of the path goes. Executor, thread safety: as for `acquire`.
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

    std::string path_;
    error_code refusal_;
    detail::executor_owned<detail::lock_queue> queue_;
};

}  // namespace zklock
