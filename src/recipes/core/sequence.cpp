// Sequence numbers, shared by the lock recipes.
#include <zklock/detail/sequence.hpp>

#include <cstdint>
#include <cstdio>

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

std::string sequence_suffix(std::int32_t seq)
{
    char digits[16];
    std::snprintf(digits, sizeof digits, "%010d", static_cast<int>(seq));
    return digits;
}

}  // namespace zklock::detail
