// What every lock object's acquire shares: the deadline from a timeout, and the initiation.
#pragma once

#include <zklock/clock.hpp>
#include <zklock/detail/executor_owned.hpp>
#include <zklock/guard.hpp>

#include <boost/asio/async_result.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <type_traits>

namespace zklock::detail {

class lock_queue;
using deadline = std::optional<std::chrono::steady_clock::time_point>;
using lease_length = std::optional<std::chrono::steady_clock::duration>;
void refuse_acquire(boost::system::error_code why, handler<guard>);
void async_acquire(std::shared_ptr<lock_queue>, deadline, lease_length, handler<guard>);
/// A second hold on the node `held` holds, if it is a hold of `q` (re-entry, a writer's downgrade);
/// else error::not_held. `void(error_code, guard)`.
void async_reenter(std::shared_ptr<lock_queue> q, hold_ref held, handler<guard> h);
/// This session's place in `q`'s queue once it differs from `known` (no queue: `refusal`).
/// `void(error_code, std::size_t)`.
void async_wait_place(std::shared_ptr<lock_queue> q, boost::system::error_code refusal, std::size_t known,
                      handler<std::size_t> h);
/// Starts a place wait on `q` (or completes it with `refusal`).
template <class CompletionToken>
auto initiate_wait_place(CompletionToken& token, const executor_owned<lock_queue>& q, boost::system::error_code refusal,
                         std::size_t known)
{
    return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code, std::size_t)>(
        [](auto h, executor_owned<lock_queue> qq, boost::system::error_code why, std::size_t k) {
            async_wait_place(std::move(qq).take(), why, k, std::move(h));
        },
        token, q, refusal, known);
}
/// Drops a reference on the session's executor, so that the last one is never dropped elsewhere.
void drop_on_executor(std::shared_ptr<lock_queue>) noexcept;

/// The deadline `timeout` from now, saturated as Asio's timers do: a timeout beyond what the clock can
/// represent (seconds::max(), an infinite duration<double>) means no deadline; zero, negative or NaN
/// means now (one look).
template <class Rep, class Period>
deadline deadline_after(std::chrono::duration<Rep, Period> timeout)
{
    using clock = zklock::clock;
    const auto now = clock::now();
    if (!(timeout > decltype(timeout)::zero())) return now;
    // Compared as floating point, which cannot overflow; half the room keeps clear of rounding.
    const std::chrono::duration<long double> room = clock::time_point::max() - now;
    if (std::chrono::duration<long double>(timeout) >= room / 2) return std::nullopt;
    return now + std::chrono::ceil<clock::duration>(timeout);
}

template <class T>
struct is_duration : std::false_type {};
template <class R, class P>
struct is_duration<std::chrono::duration<R, P>> : std::true_type {};

/// Starts an acquire on `q` (or completes it with `refusal` when there is no queue to be had).
template <class CompletionToken>
auto initiate_acquire(CompletionToken& token, const executor_owned<lock_queue>& q, boost::system::error_code refusal,
                      deadline d, lease_length lease = {})
{
    return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code, guard)>(
        [](auto h, executor_owned<lock_queue> qq, boost::system::error_code why, deadline dl, lease_length l) {
            if (qq.get()) async_acquire(std::move(qq).take(), dl, l, std::move(h));
            else refuse_acquire(why, std::move(h));
        },
        token, q, refusal, d, lease);
}

}  // namespace zklock::detail
