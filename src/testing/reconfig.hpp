// Internal to zklock::testing: ZooKeeper's `reconfig`, sent with the C client from the calling thread.
#pragma once

#include <chrono>
#include <string>

namespace zklock::testing::detail {

/// Connects to `host` ("127.0.0.1:port"), asks for `reconfig` with `joining` ("server.4=...", comma
/// separated, or empty) and `leaving` (ids, "1,2", or empty), and returns the new configuration once
/// committed. Throws std::runtime_error with ZooKeeper's error otherwise, or after `limit`.
std::string reconfig(const std::string& host, const std::string& joining, const std::string& leaving,
                     std::chrono::milliseconds limit = std::chrono::seconds(30));

}  // namespace zklock::testing::detail
