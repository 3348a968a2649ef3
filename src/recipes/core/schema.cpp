// Node names and the holding predicates of every recipe.
#include "schema.hpp"

#include <zklock/detail/sequence.hpp>

#include <algorithm>

namespace zklock::detail {

std::string_view describe(lock_schema s) noexcept
{
    switch (s) {
    case lock_schema::mutex: return "a mutex (-lock- or kazoo's __lock__/__rlock__ nodes)";
    case lock_schema::read_write: return "a read/write lock (Curator's __READ__/__WRIT__ nodes)";
    case lock_schema::semaphore: return "a semaphore (Curator SemaphoreV2's locks and leases children)";
    case lock_schema::latch: return "a leader latch (Curator LeaderLatch's -latch- nodes)";
    }
    return "another lock";
}

std::string_view marker(contender_kind k) noexcept
{
    switch (k) {
    case contender_kind::exclusive: return "lock-";
    case contender_kind::writer: return "__WRIT__";
    case contender_kind::reader: return "__READ__";
    case contender_kind::latch: return "latch-";
    }
    return "lock-";
}

lock_schema schema_of(contender_kind k) noexcept
{
    switch (k) {
    case contender_kind::exclusive: return lock_schema::mutex;
    case contender_kind::writer:
    case contender_kind::reader: return lock_schema::read_write;
    case contender_kind::latch: return lock_schema::latch;
    }
    return lock_schema::mutex;
}

namespace {
// Whether `name` is `...<m><sequence>`: ZooKeeper's "%010d" (ten characters, or a sign and ten digits).
bool sequenced_after(std::string_view name, std::string_view m) noexcept
{
    const auto p = name.rfind(m);
    if (p == std::string_view::npos) return false;
    const auto rest = name.size() - p - m.size();
    return (rest == 10 || (rest == 11 && name[p + m.size()] == '-')) && parse_sequence(name).has_value();
}
}  // namespace

child_role classify(std::string_view name) noexcept
{
    if (name == "locks" || name == "leases") return {lock_schema::semaphore, false, false};
    if (sequenced_after(name, "__READ__")) return {lock_schema::read_write, true, false};
    if (sequenced_after(name, "__WRIT__")) return {lock_schema::read_write, true, true};
    for (std::string_view m : {"lock-", "__lock__", "__rlock__"})
        if (sequenced_after(name, m)) return {lock_schema::mutex, true, true};
    if (sequenced_after(name, "latch-")) return {lock_schema::latch, true, true};
    return {};
}

verdict decide(contender_kind kind, const std::vector<std::string>& children, std::string_view own,
               std::string_view passed_over)
{
    verdict v;
    const auto mine = parse_sequence(own);
    if (!mine) return v;
    const auto ours = schema_of(kind);
    // The contenders ahead of us that count for our kind: (distance in creates, negative; name).
    std::vector<std::pair<std::int32_t, const std::string*>> ahead;
    for (const auto& c : children) {
        if (c == own) {
            v.found = true;
            continue;
        }
        if (c == passed_over) continue;
        const auto role = classify(c);
        if (!role.schema) continue;
        if (*role.schema != ours) {
            if (!v.foreign) v.foreign = role.schema;
            continue;
        }
        if (!role.contender || (kind == contender_kind::reader && !role.excludes_readers)) continue;
        // Unsigned subtraction wraps safely; valid while live contenders span less than 2^31 creates.
        const auto d = static_cast<std::int32_t>(static_cast<std::uint32_t>(*parse_sequence(c)) -
                                                 static_cast<std::uint32_t>(*mine));
        if (d < 0) ahead.emplace_back(d, &c);
    }
    if (!v.found) return v;
    v.ahead = ahead.size();
    v.holds = ahead.empty();
    if (v.holds) return v;
    // Nearest first: a waiter too far back to watch them all watches the nearest.
    const auto named = ahead.begin() + static_cast<std::ptrdiff_t>(std::min(ahead.size(), most_obstacles_listed));
    std::partial_sort(ahead.begin(), named, ahead.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (auto it = ahead.begin(); it != named; ++it) v.obstacles.push_back(*it->second);
    return v;
}

bool someone_waits_behind(contender_kind kind, const std::vector<std::string>& children, std::string_view own)
{
    const auto mine = parse_sequence(own);
    if (!mine) return false;
    for (const auto& c : children) {
        const auto role = classify(c);
        if (c == own || !role.contender || role.schema != schema_of(kind)) continue;
        if (kind == contender_kind::reader && !role.excludes_readers) continue;
        const auto d = static_cast<std::int32_t>(static_cast<std::uint32_t>(*parse_sequence(c)) -
                                                 static_cast<std::uint32_t>(*mine));
        if (d > 0) return true;
    }
    return false;
}

std::optional<bool> lease_holds(const std::vector<std::string>& leases, std::string_view own, std::size_t max_permits)
{
    if (std::find(leases.begin(), leases.end(), own) == leases.end()) return std::nullopt;
    return leases.size() <= max_permits;
}

bool lease_waiter_present(const std::vector<std::string>& lock_children, std::string_view own)
{
    for (const auto& c : lock_children)
        if (c != own && classify(c).contender) return true;
    return false;
}

std::vector<queued> queue_order(const std::vector<std::string>& children)
{
    std::vector<queued> out;
    for (const auto& c : children)
        if (auto role = classify(c); role.contender) out.push_back({c, role, false});
    if (out.empty()) return out;
    // Relative to one of them, so that the order stays right across the signed 32-bit wrap.
    const auto base = static_cast<std::uint32_t>(*parse_sequence(out.front().name));
    auto rank = [&](const queued& q) {
        return static_cast<std::int32_t>(static_cast<std::uint32_t>(*parse_sequence(q.name)) - base);
    };
    std::stable_sort(out.begin(), out.end(), [&](const queued& a, const queued& b) { return rank(a) < rank(b); });
    bool excluder_ahead = false;
    for (std::size_t i = 0; i < out.size(); ++i) {
        auto& q = out[i];
        const bool reader = q.role.schema == lock_schema::read_write && !q.role.excludes_readers;
        q.holds = reader ? !excluder_ahead : i == 0;
        excluder_ahead = excluder_ahead || q.role.excludes_readers;
    }
    return out;
}

std::optional<lock_schema> foreign_to_semaphore(const std::vector<std::string>& children) noexcept
{
    for (const auto& c : children)
        if (auto role = classify(c); role.schema && *role.schema != lock_schema::semaphore) return role.schema;
    return std::nullopt;
}

}  // namespace zklock::detail
