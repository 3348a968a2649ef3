// Words and stream insertion for the small value types (fencing_token, session_state, watch_event_type), so
// that a log line or a test message can print them as they are.
#include <zklock/fencing_token.hpp>
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

}  // namespace zklock
