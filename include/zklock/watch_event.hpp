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

/// What a watch reports when it fires (watch::async_wait): the kind of change, and the node it happened to.
struct watch_event {
    watch_event_type type;  ///< what changed: the node was created, deleted, or its data or children changed
    std::string path;       ///< the full path of the watched node
};

}  // namespace zklock
