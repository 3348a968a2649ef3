// A protected name's uuid ("_c_<uuid>-lock-"): a create whose answer was lost is found again by it.
#pragma once

#include <string>
#include <string_view>

namespace zklock::detail {

/// A fresh random UUID in the 8-4-4-4-12 form Curator uses for protected names.
std::string make_uuid();

/// A protected name's prefix: Curator's "_c_<uuid>-<marker>", or kazoo's Lock's "<uuid as 32 hex
/// digits><marker>" (kazoo's "__lock__"; kazoo's Election counts only such nodes).
std::string protected_prefix(std::string_view marker, bool kazoo);

}  // namespace zklock::detail
