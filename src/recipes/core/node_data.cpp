#include "node_data.hpp"

#include <charconv>

namespace zklock::detail {

namespace {
constexpr std::string_view lease_key = "lease-until-ms=";
}

std::string encode_node_data(std::string_view owner, std::optional<std::int64_t> lease_until_ms)
{
    // A newline in the owner would forge a lease line: the owner is cut at the first one.
    std::string out(owner.substr(0, owner.find('\n')));
    if (lease_until_ms) out += "\n" + std::string(lease_key) + std::to_string(*lease_until_ms);
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
        if (line.substr(0, lease_key.size()) != lease_key) continue;  // a line of a later version: skipped
        std::int64_t v = 0;
        const auto digits = line.substr(lease_key.size());
        const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
        if (ec == std::errc{} && p == digits.data() + digits.size()) out.lease_until_ms = v;
    }
    return out;
}

}  // namespace zklock::detail
