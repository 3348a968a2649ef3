// --on-revoke: what a holder started by zklock does when someone asks it to let go (zklock revoke PATH,
// Curator's Revoker: "__REVOKE__" written into its node).
#pragma once

#include <zklock/guard.hpp>

#include <boost/asio/awaitable.hpp>

namespace zklock_cli {

// Completes once the holder of `g` is asked to let go, when `wanted`; otherwise, or if `g` is released
// first, it completes only when cancelled (it is one branch of a race, which the others then decide).
boost::asio::awaitable<void> revocation(zklock::guard& g, bool wanted);

}  // namespace zklock_cli
