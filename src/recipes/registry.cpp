// The registry's part in a statistics snapshot: the gauges are read from the lock states when asked,
// so that nothing is kept up to date for them on the way.
#include "lock_base.hpp"

namespace zklock::detail {

void add_lock_gauges(const recipe_registry& r, session_stats& into)
{
    for (const auto& [key, weak] : r.states)
        if (auto q = weak.lock(); q && q->counted()) q->add_gauges(into.by_label[q->stats_label()]);
}

}  // namespace zklock::detail
