// A one-shot ZooKeeper watch that a coroutine can await.
#pragma once

#include <zklock/detail/handler.hpp>
#include <zklock/watch_event.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/system/error_code.hpp>

#include <memory>

namespace zklock {

namespace detail {
class watch_state;
class session_impl;
void async_wait_watch(std::shared_ptr<watch_state>,
                      handler<watch_event>);
void drop_watch(const std::shared_ptr<watch_state>&) noexcept;
}  // namespace detail

/**
 * A watch set by `session::async_get_data`, `async_exists` or `async_get_children`.
 *
 * It fires once. `async_wait` completes with the event, or with `error::session_expired` /
 * `error::session_closed` if the session ends first. Reconnects within the session keep the watch.
 * Destroying an armed watch forgets it: it will never be delivered. (The server keeps it until the node
 * changes or the session ends: ZooKeeper 3.8's C client has no working server-side removal, as its
 * removeWatches sends a checkWatches request.)
 * Use it on the session's executor only (a cancellation signal aimed at a wait may be emitted from the
 * thread that owns it: the cancellation hops onto the session's executor).
 */
class watch {
public:
    watch() = default;
    /// Takes over the other watch; the moved-from watch is left empty: not armed, and destroying it forgets nothing.
    watch(watch&&) noexcept = default;
    /// Forgets the watch this object held (as destroying it would), then takes over `other`'s; `other` is left empty.
    watch& operator=(watch&& other) noexcept
    {
        if (this != &other) {
            detail::drop_watch(state_);
            state_ = std::move(other.state_);
        }
        return *this;
    }
    ~watch() { detail::drop_watch(state_); }

    /// True once a read registered it, until it fired or was dropped.
    bool armed() const noexcept;

    /// Waits for the watch to fire. Completion signature `void(error_code, watch_event)`, on the handler's
    /// associated executor. A watch that fired already completes at once with its event (at every wait).
    /// @par Executor
    /// The wait is registered on the session's executor; the completion runs on the handler's associated
    /// executor. A watch no read armed completes through Asio's system executor instead of the session's.
    /// @par Per-operation cancellation
    /// Any type (terminal, partial, total) abandons the wait at once with `operation_aborted`; the watch
    /// stays armed and can be awaited again.
    /// @par Errors
    /// `error::session_expired` / `error::session_closed` / `error::auth_failed` if the session ends first
    /// (an expiry the session renews from included); `error::watch_not_armed` if no read ever set it (or it
    /// was moved from), or its session no longer exists; `operation_aborted` when cancelled, when another
    /// async_wait on it takes its place, or when the watch is dropped: a watch whose read was cancelled (or
    /// failed) is dropped, and a wait on it completes with `operation_aborted` at once, as when the object
    /// is destroyed, assigned to or re-armed by another read. (Wait once the read has completed: a wait
    /// started while it is out is not ended by the read's failure.)
    /// @par Thread safety
    /// Start it on the session's executor; the cancellation signal may be emitted from the thread that owns
    /// it (it hops onto the session's executor).
    /// @par Object lifetimes
    /// The wait holds the watch's state, not this object: the object may be moved meanwhile (the wait goes
    /// on), and destroying it ends the wait with `operation_aborted`. Destroying the session object ends the
    /// wait with `error::session_closed`.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_wait(CompletionToken&& token = {})
    {
        return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code, watch_event)>(
            [](auto handler, std::shared_ptr<detail::watch_state> st) {
                detail::async_wait_watch(std::move(st), std::move(handler));
            },
            token, state_);
    }

private:
    friend class detail::session_impl;
    std::shared_ptr<detail::watch_state> state_;
};

}  // namespace zklock
