// Contender ordering and node naming, shared by the lock recipes.
#include <zklock/detail/sequence.hpp>

#include <algorithm>
#include <cstdio>
#include <random>

namespace zklock::detail {

std::optional<std::int32_t> parse_sequence(std::string_view name) noexcept
{
    // ZooKeeper formats the parent's cversion with "%010d": ten characters, a minus sign among them for
    // small negative numbers ("-000000005"), and eleven for negative numbers of ten digits
    // ("-2147483647"). Prefixes end in a separator ("-lock-", "__lock__", "x-<session>-"), so a minus
    // before ten digits is a sign only where it follows another separator (or starts the name).
    if (name.size() < 10) return std::nullopt;
    auto tail = name.substr(name.size() - 10);
    const bool short_negative = tail[0] == '-';
    std::int64_t v = 0;
    for (std::size_t i = short_negative ? 1 : 0; i < tail.size(); ++i) {
        if (tail[i] < '0' || tail[i] > '9') return std::nullopt;
        v = v * 10 + (tail[i] - '0');
    }
    if (short_negative) return static_cast<std::int32_t>(-v);
    const std::size_t n = name.size();
    const bool long_negative = n >= 11 && name[n - 11] == '-' && (n == 11 || name[n - 12] == '-' || name[n - 12] == '_');
    if (long_negative) {
        if (v > 2147483648LL) return std::nullopt;
        return static_cast<std::int32_t>(-v);
    }
    if (v > INT32_MAX) return std::nullopt;
    return static_cast<std::int32_t>(v);
}

bool is_mutex_contender(std::string_view name) noexcept
{
    for (std::string_view marker : {std::string_view("lock-"), std::string_view("__lock__")}) {
        const auto p = name.rfind(marker);
        if (p == std::string_view::npos) continue;
        const auto rest = name.size() - p - marker.size();  // the sequence: ten characters, or a sign and ten
        if (rest == 10 || (rest == 11 && name[p + marker.size()] == '-')) return parse_sequence(name).has_value();
    }
    return false;
}

queue_position locate(const std::vector<std::string>& children, std::string_view own, std::size_t max_holders,
                      bool (*is_contender)(std::string_view) noexcept)
{
    queue_position pos;
    auto mine = parse_sequence(own);
    if (!mine) return pos;
    // Distance from us, in creates: negative means created before us. Unsigned subtraction wraps safely.
    struct entry {
        std::int32_t distance;
        const std::string* name;
    };
    std::vector<entry> before;
    for (const auto& c : children) {
        if (c == own) {
            pos.found = true;
            continue;
        }
        if (is_contender && !is_contender(c)) continue;
        auto seq = parse_sequence(c);
        if (!seq) continue;
        auto d = static_cast<std::int32_t>(static_cast<std::uint32_t>(*seq) - static_cast<std::uint32_t>(*mine));
        if (d < 0) before.push_back({d, &c});
    }
    if (!pos.found) return pos;
    pos.ahead = before.size();
    if (before.size() < max_holders) return pos;
    std::sort(before.begin(), before.end(), [](const entry& a, const entry& b) { return a.distance < b.distance; });
    // Watch the contender max_holders places ahead: when it goes, we may be among the holders.
    const auto& watched = before[before.size() - max_holders];
    pos.predecessor = *watched.name;
    pos.predecessor_is_head = before.size() == max_holders;
    return pos;
}

std::string make_uuid()
{
    thread_local std::mt19937_64 rng{std::random_device{}() ^ (std::uint64_t{std::random_device{}()} << 32)};
    std::uint64_t hi = rng(), lo = rng();
    hi = (hi & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // version 4
    lo = (lo & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // IETF variant
    char buf[37];
    std::snprintf(buf, sizeof buf, "%08llx-%04llx-%04llx-%04llx-%012llx", static_cast<unsigned long long>(hi >> 32),
                  static_cast<unsigned long long>((hi >> 16) & 0xffff), static_cast<unsigned long long>(hi & 0xffff),
                  static_cast<unsigned long long>(lo >> 48), static_cast<unsigned long long>(lo & 0xffffffffffffULL));
    return buf;
}

}  // namespace zklock::detail
