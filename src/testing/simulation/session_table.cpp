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
    timeout_[o.id] = o.timeout_ms;
    due_[o.id] = bucket_after(now_ms + o.timeout_ms);
    buckets_[due_[o.id]].insert(o.id);
    return o;
}

bool session_table::touch(session_id id, std::int64_t now_ms)
{
    auto it = due_.find(id);
    if (it == due_.end()) return false;
    const auto due = bucket_after(now_ms + timeout_.at(id));
    if (due == it->second) return true;
    auto& old = buckets_[it->second];
    old.erase(id);
    if (old.empty()) buckets_.erase(it->second);
    it->second = due;
    buckets_[due].insert(id);
    return true;
}

bool session_table::close(session_id id)
{
    auto it = due_.find(id);
    if (it == due_.end()) return false;
    auto& bucket = buckets_[it->second];
    bucket.erase(id);
    if (bucket.empty()) buckets_.erase(it->second);
    due_.erase(it);
    timeout_.erase(id);
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
            due_.erase(id);
            timeout_.erase(id);
        }
        buckets_.erase(it);
    }
    return expired;
}

std::optional<std::int64_t> session_table::expires_at(session_id id) const
{
    const auto it = due_.find(id);
    if (it == due_.end()) return std::nullopt;
    return it->second;
}

}  // namespace zklock::testing::simulation
