// The distributed mutex: `auto g = co_await m.acquire(5s);`.
#pragma once

#include <zklock/acl.hpp>
#include <zklock/guard.hpp>
#include <zklock/session.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <type_traits>

namespace zklock {

struct mutex_options {
    /// How many times in a row the lock may pass between coroutines of this session, without a round trip,
    /// before its node is released so that other processes get their turn. 0: every hand-off goes through
    /// ZooKeeper (strict FIFO across processes, one node per waiting coroutine's turn).
    std::size_t local_handoff_limit = 10;
    /// Keep the lock node after the last local release while no other process waits, so that this
    /// session's next acquire costs no round trip (Chubby's lock caching). Other processes see the lock
    /// held until they queue for it; ZooKeeper then tells us, and the node is deleted at once.
    bool linger = false;
    /// ACL of the lock node and of the parents created on demand.
    zklock::acl acl = open_acl();
};

namespace detail {
class lock_queue;
std::shared_ptr<lock_queue> lock_queue_for(const std::shared_ptr<session_impl>&, const std::string& path,
                                           const mutex_options&);
using deadline = std::optional<std::chrono::steady_clock::time_point>;
void async_acquire(std::shared_ptr<lock_queue>, deadline, handler<guard>);
/// Drops a reference on the session's executor, so that the last one is never dropped elsewhere.
void drop_on_executor(std::shared_ptr<lock_queue>) noexcept;
const std::string& lock_path(const lock_queue&) noexcept;

template <class T>
struct is_duration : std::false_type {};
template <class R, class P>
struct is_duration<std::chrono::duration<R, P>> : std::true_type {};
}  // namespace detail

/**
 * An exclusive lock on a ZooKeeper path, shared with every process that locks the same path (zklock,
 * Curator's InterProcessMutex, and kazoo's Lock with `extra_lock_patterns=["-lock-"]`).
 *
 * The recipe: an EPHEMERAL|SEQUENTIAL node `PATH/_c_<uuid>-lock-N` (Curator's protected name), its
 * getChildren pipelined behind the create (an uncontended acquire is one round trip), and a watch on the
 * one contender just ahead (no herd). All mutexes of one session on one path share one node: their
 * coroutines queue locally and the lock passes between them without a round trip, up to
 * `local_handoff_limit` times in a row.
 *
 * Not reentrant: a coroutine that acquires twice waits for itself.
 *
 * @par Per-operation cancellation
 * Any type (terminal, partial, total) completes the acquire at once with `operation_aborted`; a node
 * already created is deleted in the background, and a create still in flight is deleted when it
 * completes. No node and no watch is left behind.
 *
 * @par Errors
 * `error::timeout` when the deadline passed first (it covers the whole acquire, reconnects included),
 * `error::session_expired`, `error::session_closed`, `error::invalid_path`, ZooKeeper's codes
 * (`zk_errc::no_auth` when the path's ACL refuses us).
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
    mutex(session& s, std::string path, mutex_options options = {})
        : queue_(detail::lock_queue_for(s.impl(), path, options))
    {
    }
    mutex(const mutex&) = default;
    mutex(mutex&&) noexcept = default;
    mutex& operator=(mutex other) noexcept
    {
        std::swap(queue_, other.queue_);
        return *this;
    }
    /// May run on any thread: the shared state is let go on the session's executor.
    ~mutex() { detail::drop_on_executor(std::move(queue_)); }

    const std::string& path() const noexcept { return detail::lock_path(*queue_); }

    /// Waits at most `timeout` (zero: one look, as try_acquire). Completion `void(error_code, guard)`.
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
    auto acquire(std::chrono::duration<Rep, Period> timeout, CompletionToken&& token = {})
    {
        auto d = std::chrono::steady_clock::now() +
                 std::chrono::ceil<std::chrono::steady_clock::duration>(std::max(timeout, decltype(timeout)::zero()));
        return initiate(detail::deadline{d}, token);
    }

    /// Waits until acquired, failed or cancelled. Completion `void(error_code, guard)`.
    template <class CompletionToken = asio::deferred_t>
        requires(!detail::is_duration<std::decay_t<CompletionToken>>::value)
    auto acquire(CompletionToken&& token = {})
    {
        return initiate(detail::deadline{}, token);
    }

    /// One look: the lock if nobody holds it, else `error::timeout` at once. Completion `void(error_code, guard)`.
    template <class CompletionToken = asio::deferred_t>
    auto try_acquire(CompletionToken&& token = {})
    {
        return acquire(std::chrono::steady_clock::duration::zero(), std::forward<CompletionToken>(token));
    }

private:
    template <class CompletionToken>
    auto initiate(detail::deadline d, CompletionToken& token)
    {
        return asio::async_initiate<CompletionToken, void(error_code, guard)>(
            [](auto h, std::shared_ptr<detail::lock_queue> q, detail::deadline dl) {
                detail::async_acquire(std::move(q), dl, std::move(h));
            },
            token, queue_, d);
    }

    std::shared_ptr<detail::lock_queue> queue_;
};

}  // namespace zklock
