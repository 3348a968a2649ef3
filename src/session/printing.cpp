// Words and stream insertion for the small value types (fencing_token, session_state, watch_event_type,
// lock_event_type), so
// that a log line or a test message can print them as they are.
#include <zklock/fencing_token.hpp>
#include <zklock/lock_event.hpp>
#include <zklock/session_state.hpp>
#include <zklock/watch_event.hpp>

#include <ostream>

namespace zklock {

std::string to_string(const fencing_token& t) { return t.to_string(); }

std::ostream& operator<<(std::ostream& os, const fencing_token& t) { return os << t.zxid << '.' << t.local; }

std::ostream& operator<<(std::ostream& os, session_state s) { return os << to_string(s); }

std::string_view to_string(watch_event_type t) noexcept
{
    switch (t) {
    case watch_event_type::created: return "created";
    case watch_event_type::deleted: return "deleted";
    case watch_event_type::data_changed: return "data_changed";
    case watch_event_type::children_changed: return "children_changed";
    }
    return "unknown";
}

std::ostream& operator<<(std::ostream& os, watch_event_type t) { return os << to_string(t); }

std::string_view to_string(lock_event_type t) noexcept
{
    switch (t) {
    case lock_event_type::granted: return "granted";
    case lock_event_type::released: return "released";
    case lock_event_type::lost: return "lost";
    case lock_event_type::lease_expired: return "lease_expired";
    case lock_event_type::state_changed: return "state_changed";
    }
    return "unknown";
}

std::ostream& operator<<(std::ostream& os, lock_event_type t) { return os << to_string(t); }

}  // namespace zklock
