// Running work only while a lock is held: the loss signal and the work, joined so that either side ends both.
#pragma once

#include <zklock/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <exception>
#include <memory>
#include <optional>
#include <type_traits>

namespace zklock {

/**
 * Runs the coroutine `work` while `g` (a `guard` or a `multi_guard`) holds its lock, and ends when either
 * side ends: the work's result, or its exception, as soon as it has one; or, when the lock is lost first,
 * the work is cancelled (terminal cancellation, seen at its next `co_await`) and, once it has stopped,
 * `boost::system::system_error` is thrown with the loss reason (`error::lock_node_deleted`,
 * `error::ownership_uncertain`, `error::session_expired`, `error::session_closed`, `error::lease_expired`).
 *
 *     auto g = co_await m.acquire(5s);
 *     auto balance = co_await zklock::while_held(g, transfer(from, to, amount));
 *     co_await g.release();
 *
 * Unlike `co_await (work() || g.async_wait_lost(...))`, which waits for the first *success* and so keeps
 * waiting (with the lock held) when the work throws, this returns as soon as the work fails.
 *
 * The guard is not released: it stays the caller's, held or lost, to release or destroy.
 * `error::not_held` (thrown, the work not started) for an empty guard; the loss reason (thrown, the work
 * not started: no step of it runs) for a guard whose loss is already known (`g.lost()`).
 *
 * A coroutine, not an operation with a completion token; the paragraphs below say the same things as for
 * the asynchronous verbs.
 *
 * @par Executor
 * The work runs on the calling coroutine's executor, and so does everything here: the loss wait runs on the
 * guard's session's executor and completes on the calling one (with several threads on one io_context,
 * call it on a strand).
 *
 * @par Per-operation cancellation
 * A cancellation of the calling coroutine that its filter lets in (terminal by default; partial and total
 * too after `this_coro::reset_cancellation_state(enable_total_cancellation())`, and always under `||`) is
 * passed to the work as terminal; it then ends as the work does (its result, or its exception, typically
 * `operation_aborted`). Meanwhile the calling coroutine's `throw_if_cancelled` is turned off, and put back
 * before it returns.
 *
 * @par Errors
 * Thrown: `boost::system::system_error` with the loss reason when the lock is lost first
 * (`error::lock_node_deleted`, `error::ownership_uncertain`, `error::session_expired`,
 * `error::session_closed`, `error::lease_expired`, `error::auth_failed`), once the work, cancelled, has
 * stopped (whatever it returned or threw then), or at once, the work not started, when the loss was
 * already known at the call; `boost::system::system_error` with `error::not_held` for an empty guard (the
 * work not started); the work's own exception, rethrown as soon as it has one. A release
 * of `g` by other code meanwhile is no error: only the loss watch ends, and the work runs on.
 *
 * @par Thread safety
 * Call it from a coroutine whose executor does not run two handlers at once (a strand, or an io_context
 * run by one thread): the work's completion and the loss wait's meet there. The loss wait itself hops
 * onto the session's executor. `g` must not be used by another thread while the call starts.
 *
 * @par Object lifetimes
 * `g` must outlive the call. The work is moved in and has ended before this returns, and so has the loss
 * wait: nothing here outlives the call. What the work refers to must outlive it, as for any coroutine.
 */
template <class T, class Guard>
boost::asio::awaitable<T> while_held(Guard& g, boost::asio::awaitable<T> work)
{
    namespace asio = boost::asio;
    using boost::system::error_code;
    if (!g.owns_lock()) throw boost::system::system_error(make_error_code(error::not_held), "zklock::while_held");
    // A loss already known runs no step of the work: its first step, before any suspension, is usually its
    // first write, and the loss wait below would stop it only at its first co_await.
    if (auto why = g.lost()) throw boost::system::system_error(why, "zklock::while_held: the lock was already lost");

    auto ex = co_await asio::this_coro::executor;
    struct state {
        explicit state(const asio::any_io_executor& e) : wake(e, asio::steady_timer::time_point::max()) {}
        asio::steady_timer wake;  // cancelled whenever one side ends: the coroutine below looks again
        asio::cancellation_signal stop_work, stop_wait;
        bool work_done = false, wait_done = false, lost_first = false;
        std::exception_ptr failure;
        std::conditional_t<std::is_void_v<T>, bool, std::optional<T>> value{};
        error_code loss;
    };
    auto st = std::make_shared<state>(ex);

    auto on_work_done = [st](std::exception_ptr e, auto&&... v) {
        st->work_done = true;
        st->failure = e;
        if constexpr (!std::is_void_v<T>)
            if (!e) st->value.emplace(std::forward<decltype(v)>(v)...);
        st->wake.cancel();
    };
    asio::co_spawn(ex, std::move(work),
                   asio::bind_cancellation_slot(st->stop_work.slot(), asio::bind_executor(ex, std::move(on_work_done))));
    g.async_wait_lost(asio::bind_cancellation_slot(
        st->stop_wait.slot(), asio::bind_executor(ex, [st](error_code ec, error_code why) {
            st->wait_done = true;
            if (!ec && !st->work_done) {  // lost while the work runs: stop it
                st->lost_first = true;
                st->loss = why;
                st->stop_work.emit(asio::cancellation_type::terminal);
            }
            st->wake.cancel();
        })));

    // Wait for the work; a cancellation of ours goes on to it. Then stop the loss wait and wait for it too,
    // so that nothing here outlives the call. (The setting is the calling coroutine's: it is put back.)
    const bool throw_if_cancelled = co_await asio::this_coro::throw_if_cancelled();
    co_await asio::this_coro::throw_if_cancelled(false);
    bool passed_on = false;
    while (!st->work_done) {
        co_await st->wake.async_wait(asio::as_tuple(asio::use_awaitable));
        auto cs = co_await asio::this_coro::cancellation_state;
        if (!st->work_done && !passed_on && cs.cancelled() != asio::cancellation_type::none) {
            passed_on = true;
            st->stop_work.emit(asio::cancellation_type::terminal);
        }
    }
    if (!st->wait_done) st->stop_wait.emit(asio::cancellation_type::terminal);
    while (!st->wait_done) co_await st->wake.async_wait(asio::as_tuple(asio::use_awaitable));
    co_await asio::this_coro::throw_if_cancelled(throw_if_cancelled);

    if (st->lost_first) throw boost::system::system_error(st->loss, "zklock::while_held: the lock was lost");
    if (st->failure) std::rethrow_exception(st->failure);
    if constexpr (!std::is_void_v<T>) co_return std::move(*st->value);
}

}  // namespace zklock
