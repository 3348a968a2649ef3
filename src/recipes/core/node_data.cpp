#include "node_data.hpp"

#include <charconv>

namespace zklock::detail {

namespace {
constexpr std::string_view lease_key = "lease-until-ms=";
constexpr std::string_view max_permits_key = "max-permits=";

// The number after `key` on `line`, if the line is that key's and the rest is all digits.
template <class T>
std::optional<T> number_after(std::string_view key, std::string_view line)
{
    if (line.substr(0, key.size()) != key) return std::nullopt;
    T v{};
    const auto digits = line.substr(key.size());
    const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec != std::errc{} || p != digits.data() + digits.size()) return std::nullopt;
    return v;
}
}

std::string encode_node_data(std::string_view owner, std::optional<std::int64_t> lease_until_ms,
                             std::optional<std::size_t> max_permits)
{
    // A newline in the owner would forge a lease line: the owner is cut at the first one.
    std::string out(owner.substr(0, owner.find('\n')));
    if (lease_until_ms) out += "\n" + std::string(lease_key) + std::to_string(*lease_until_ms);
    if (max_permits) out += "\n" + std::string(max_permits_key) + std::to_string(*max_permits);
    return out;
}

node_data decode_node_data(std::string_view data)
{
    node_data out;
    if (data == revoke_request) {
        out.revoke_requested = true;
        return out;
    }
    const auto eol = data.find('\n');
    out.owner = std::string(data.substr(0, eol));
    for (auto rest = eol == std::string_view::npos ? std::string_view{} : data.substr(eol + 1); !rest.empty();) {
        const auto end = rest.find('\n');
        const auto line = rest.substr(0, end);
        rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
        // Any other line (a later version's) is skipped.
        if (auto v = number_after<std::int64_t>(lease_key, line)) out.lease_until_ms = v;
        if (auto v = number_after<std::size_t>(max_permits_key, line)) out.max_permits = v;
    }
    return out;
}

}  // namespace zklock::detail
