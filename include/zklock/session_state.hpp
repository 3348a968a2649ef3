// The life of a ZooKeeper session, as a session reports it.
#pragma once

#include <iosfwd>
#include <string_view>

namespace zklock {

enum class session_state {
    idle,          ///< constructed, async_connect not called yet
    connecting,    ///< looking for a server (first connect, or after a disconnect)
    connected,
    expired,       ///< the server forgot the session, its ephemeral nodes are gone: final, unless
                   ///< session_config::on_expiry renews it (the state is then `connecting` at once)
    auth_failed,   ///< final: credentials refused
    closed,        ///< final: closed by us
};

/// Final states admit no further operation; a new session is a new zklock::session. (A session that
/// renews on expiry reports `expired` to its waiters and moves on: its state() never stays there.)
constexpr bool is_final(session_state s) noexcept
{
    return s == session_state::expired || s == session_state::auth_failed || s == session_state::closed;
}

/// "idle", "connecting", "connected", "expired", "auth_failed", "closed".
std::string_view to_string(session_state s) noexcept;
/// Writes to_string(s).
std::ostream& operator<<(std::ostream& os, session_state s);

}  // namespace zklock
