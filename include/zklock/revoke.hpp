// Asking a lock's holder to let go: cooperative revocation, compatible with Curator's Revoker.
#pragma once

#include <zklock/session.hpp>

namespace zklock {

namespace detail {
void async_request_revoke(const std::shared_ptr<session_impl>& s, std::string node, handler<> h);
}  // namespace detail

/// What a revocation request writes into the holder's lock node (Curator's Revoker.REVOKE_MESSAGE).
inline constexpr std::string_view revoke_message = "__REVOKE__";

/**
 * Asks the holder of the lock node `node` (a full path, e.g. a guard's `node()` or one listed by `zklock
 * ls`) to let go, as Curator's `Revoker.attemptRevoke(client, node)` does: writes "__REVOKE__" into the
 * node. A zklock holder hears it through `guard::async_wait_revoked`; a Curator holder whose lock was made
 * revocable (`makeRevocable`) hears it through its listener. Nothing forces the holder.
 *
 * Completes with success once the request is written; `zk_errc::no_node` when the node is gone (the holder
 * already let go); `error::invalid_path`, the session's errors, and ZooKeeper's, as for
 * `session::async_set_data` (a lost answer is `zk_errc::connection_loss` or `operation_timeout`: the
 * request may have been written; asking again is harmless). Signature `void(error_code)`.
 *
 * Cancellation: before the write is sent, any type completes at once with `operation_aborted` and nothing
 * is written. Once sent (at once when initiated on the session's executor), terminal and partial complete
 * at once with `operation_aborted` and the request may still be written; total is ignored and the
 * operation completes with its real result. So `co_await (async_request_revoke(s, n) || timer.async_wait())`
 * returns at the timer (`||` emits every type).
 *
 * Executor: completes on the handler's associated executor. Thread safety: may be initiated from any
 * thread and cancelled from the thread that owns the signal (it hops onto the session's executor).
 */
template <class CompletionToken = asio::deferred_t>
auto async_request_revoke(session& s, std::string node, CompletionToken&& token = {})
{
    return asio::async_initiate<CompletionToken, void(error_code)>(
        [](auto h, std::shared_ptr<detail::session_impl> impl, std::string n) {
            detail::async_request_revoke(impl, std::move(n), std::move(h));
        },
        token, s.impl(), std::move(node));
}

}  // namespace zklock
