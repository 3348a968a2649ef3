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
 * Completes with success once the request is written. Signature `void(error_code)`.
 *
 * @par Executor
 * The write runs on the session's executor; the completion runs on the handler's associated executor,
 * never inside the initiating call.
 *
 * @par Per-operation cancellation
 * Before the write is handed to ZooKeeper's client (while the operation hops onto the session's executor
 * from another thread), terminal, partial and total complete it at once with `operation_aborted`, and
 * nothing is written. Once handed over (at once when initiated on the session's executor; a client that
 * is not connected sends it on reconnection), terminal and partial complete it at once with
 * `operation_aborted`, and the request may still be written; total is not supported then: it is ignored,
 * and the operation completes with its real result. So
 * `co_await (async_request_revoke(s, n) || timer.async_wait())` returns at the timer (`||` emits every
 * type). A signal after the completion does nothing.
 *
 * @par Errors
 * `zk_errc::no_node` when the node is gone (the holder already let go); `error::invalid_path` (the root,
 * or a path ZooKeeper would reject; nothing is sent), `error::no_session` (a moved-from session), the session's
 * errors (`error::not_connected` before async_connect, `error::session_expired`, `error::session_closed`,
 * `error::auth_failed`), and ZooKeeper's, as for `session::async_set_data` (`zk_errc::no_auth` when the
 * node's ACL forbids writing). A lost answer is `zk_errc::connection_loss` or
 * `zk_errc::operation_timeout` (or the session's end, when it ends with the request out): the request
 * may have been written; asking again is harmless. It does not wait for a reconnection.
 *
 * @par Thread safety
 * May be initiated from any thread and cancelled from the thread that owns the signal (it hops onto the
 * session's executor).
 *
 * @par Object lifetimes
 * `s` and `node` are not referred to after the initiation: the operation shares the session's state.
 * Destroying the session closes it, and a pending request then completes with `error::session_closed`
 * (it may have been written).
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
