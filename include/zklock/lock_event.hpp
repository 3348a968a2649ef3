// What session_config::observer hears: a lock granted, released, lost, a lease run out, the session's state.
#pragma once

#include <zklock/fencing_token.hpp>
#include <zklock/session_state.hpp>

#include <boost/system/error_code.hpp>

#include <chrono>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

namespace zklock {

enum class lock_event_type {
    granted,        ///< an acquire completed with a guard (`waited`, `token`, `local`)
    released,       ///< a hold ended by its release (`held`)
    lost,           ///< a hold lost the lock (`reason`); its release follows when the holder lets go
    lease_expired,  ///< a hold's lease ran out and the library ended it (`held`); `lost` follows
    state_changed,  ///< the session's state changed (`state`; no path)
};

/// "granted", "released", "lost", "lease_expired", "state_changed".
std::string_view to_string(lock_event_type t) noexcept;
/// Writes to_string(t).
std::ostream& operator<<(std::ostream& os, lock_event_type t);

/// One event of a session's locks, for a user's own metrics or tracing (zklock/stats.hpp counts the
/// same things already). A semaphore's events are its permits': one `granted` per acquire (the first
/// permit's token), one `released` per permit.
struct lock_event {
    lock_event_type type = lock_event_type::granted;  ///< what happened; it says which of the fields below are set
    std::string path;         ///< the lock's path (empty for state_changed)
    std::string stats_label;  ///< the lock's stats label (mutex_options::stats_label, ...)
    std::chrono::steady_clock::duration waited{};  ///< granted: from the acquire's start
    std::chrono::steady_clock::duration held{};    ///< released, lease_expired: from the grant
    fencing_token token{};                         ///< granted
    bool local = false;                            ///< granted: by a local hand-off, with no round trip
    boost::system::error_code reason{};            ///< lost
    session_state state = session_state::idle;     ///< state_changed
};

/// Receives a session's lock_events (session_config::observer), posted to the session's executor in the
/// order they happened, after the state they report changed. It may start and release locks.
using lock_observer = std::function<void(const lock_event&)>;

}  // namespace zklock
