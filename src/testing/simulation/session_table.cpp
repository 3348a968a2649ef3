#include "session_table.hpp"

#include <algorithm>

namespace zklock::testing::simulation {

session_table::session_table(session_limits limits, std::int64_t now_ms)
    : limits_(limits), next_bucket_((now_ms / limits.tick_ms + 1) * limits.tick_ms)
{
}

std::int64_t session_table::negotiate(std::int64_t requested_ms) const noexcept
{
    const auto lo = limits_.min_timeout_ms.value_or(2 * limits_.tick_ms);
    const auto hi = limits_.max_timeout_ms.value_or(20 * limits_.tick_ms);
    return std::clamp(requested_ms, lo, std::max(lo, hi));
}

session_table::opened session_table::open(std::int64_t now_ms, std::int64_t requested_ms)
{
    const opened o{next_id_++, negotiate(requested_ms)};
    const auto due = bucket_after(now_ms + o.timeout_ms);
    live_.emplace(o.id, live_session{o.timeout_ms, due});
    buckets_[due].insert(o.id);
    return o;
}

void session_table::leave_bucket(session_id id, std::int64_t due)
{
    auto& bucket = buckets_[due];
    bucket.erase(id);
    if (bucket.empty()) buckets_.erase(due);
}

bool session_table::touch(session_id id, std::int64_t now_ms)
{
    auto it = live_.find(id);
    if (it == live_.end()) return false;
    const auto due = bucket_after(now_ms + it->second.timeout_ms);
    if (due == it->second.due_ms) return true;
    leave_bucket(id, it->second.due_ms);
    it->second.due_ms = due;
    buckets_[due].insert(id);
    return true;
}

bool session_table::close(session_id id)
{
    auto it = live_.find(id);
    if (it == live_.end()) return false;
    leave_bucket(id, it->second.due_ms);
    live_.erase(it);
    return true;
}

std::vector<session_id> session_table::expire_due(std::int64_t now_ms)
{
    std::vector<session_id> expired;
    for (; next_bucket_ <= now_ms; next_bucket_ += limits_.tick_ms) {
        const auto it = buckets_.find(next_bucket_);
        if (it == buckets_.end()) continue;
        for (const auto id : it->second) {
            expired.push_back(id);
            live_.erase(id);
        }
        buckets_.erase(it);
    }
    return expired;
}

std::optional<std::int64_t> session_table::expires_at(session_id id) const
{
    const auto it = live_.find(id);
    if (it == live_.end()) return std::nullopt;
    return it->second.due_ms;
}

}  // namespace zklock::testing::simulation
