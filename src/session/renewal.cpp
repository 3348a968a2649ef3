// Session renewal (session_config::on_expiry): when the server expires the session, a new one is opened
// under the same session_impl, so that lock objects and guards stay usable. The recipes hear `expired`
// and then `connected`, and decide what becomes of their holders and waiters (recipes/lock_base.hpp:
// renewed, requeues, expired_into_renewal).
#include "c_client.hpp"

namespace zklock::detail {

error_code session_impl::refusal_to_wait(std::string_view path) const
{
    if (opening_renewed && state == session_state::connecting)
        return valid_path(path) ? error_code{} : error_code(zklock::error::invalid_path);
    return refusal(path);
}

bool session_impl::renews_on_expiry() const
{
    return cfg.on_expiry != expiry_policy::fail && !renewal_stopped && !link_->detached();
}

// The server expired the session and the policy renews it: everything of the old session fails with
// session_expired; the state passes through `expired` (listeners and waiters hear it: the recipes tell
// their holders, and keep or fail their waiters) to `connecting`, and a new handle is made, with no
// session id, to the same hosts (as followed so far). Its first `connected` starts the recipes again.
void session_impl::renew()
{
    // Closed meanwhile, or renewed already: the expiry is seen both by the session event and by the
    // handle's state (leave_if_unrecoverable), and only the handle that expired is let go.
    if (is_final(state) || port_->state() != session_state::expired) return;
    const auto sid = id_text();
    log->write(log_level::warning, "ZooKeeper session " + sid +
                                       " expired: opening a new session (session_config::on_expiry)");
    set_state(session_state::expired);
    let_go_of_handle(zklock::error::session_expired, nullptr);
    id = 0;
    negotiated = std::chrono::milliseconds{0};
    last_answered_send_ = {};
    c_queue_stale_ = false;
    ++stats.renewals;
    opening_renewed = true;
    set_state(session_state::connecting);
    // To the names followed so far (the ensemble's members, if it published them), with the chroot.
    const auto slash = cfg.hosts.find('/');
    port_->open(followed_hosts_ + (slash == std::string::npos ? std::string() : cfg.hosts.substr(slash)));
}

}  // namespace zklock::detail
