// What a one-shot watch reports when it fires.
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>

namespace zklock {

enum class watch_event_type { created, deleted, data_changed, children_changed };

/// "created", "deleted", "data_changed", "children_changed".
std::string_view to_string(watch_event_type t) noexcept;
/// Writes to_string(t).
std::ostream& operator<<(std::ostream& os, watch_event_type t);

struct watch_event {
    watch_event_type type;
    std::string path;
};

}  // namespace zklock
