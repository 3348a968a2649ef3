// The uuid of Curator's protected names: random, so made in the shell, outside the pure core.
#include "uuid.hpp"

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>

namespace zklock::detail {

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

std::string protected_prefix(std::string_view marker, bool kazoo)
{
    auto id = make_uuid();
    if (!kazoo) return "_c_" + id + "-" + std::string(marker);
    std::erase(id, '-');
    return id + std::string(marker);
}

}  // namespace zklock::detail
