// A protected name's uuid ("_c_<uuid>-lock-"): a create whose answer was lost is found again by it.
#pragma once

#include <string>

namespace zklock::detail {

/// A fresh random UUID in the 8-4-4-4-12 form Curator uses for protected names.
std::string make_uuid();

}  // namespace zklock::detail
