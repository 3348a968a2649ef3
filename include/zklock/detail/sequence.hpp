// The sequence number ZooKeeper appends to sequential node names. Internal, and pure (the recipes' core).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zklock::detail {

/// The signed 32-bit sequence suffix of a sequential node name ("%010d": "...-lock-0000000042",
/// "...__lock__-000000007", "x-2147483647", "x-2147483648" for INT32_MIN after the wrap).
/// Empty if the name does not end in one (foreign, non-lock children are ignored).
std::optional<std::int32_t> parse_sequence(std::string_view name) noexcept;

/// The suffix ZooKeeper gives a sequential node with sequence `seq`: Java's "%010d", which C's printf
/// shares ("0000000042", "-000000005"); parse_sequence reads it back.
std::string sequence_suffix(std::int32_t seq);

/// (What a child means to each recipe, and who holds, is decided in src/recipes/core/schema.hpp.)

}  // namespace zklock::detail
