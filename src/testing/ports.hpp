// Internal to zklock::testing: free loopback ports for the servers, never handed to two harnesses at once.
#pragma once

#include "unique_fd.hpp"

#include <cstdint>

namespace zklock::testing::detail {

/// A loopback port held for us by an flock (released when the fd closes, even if we crash).
struct port_lease {
    std::uint16_t port = 0;
    unique_fd lock;
};

/// A free loopback port, locked in the machine-wide registry (ports.cpp). Throws std::runtime_error if
/// none could be found.
port_lease reserve_port();

}  // namespace zklock::testing::detail
