// What a one-shot watch reports when it fires.
#pragma once

#include <string>

namespace zklock {

enum class watch_event_type { created, deleted, data_changed, children_changed };

struct watch_event {
    watch_event_type type;
    std::string path;
};

}  // namespace zklock
