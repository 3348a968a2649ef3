// Internal to zklock::testing: ZooKeeper's four-letter words ("srvr", "mntr", ...) over loopback.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace zklock::testing::detail {

/// Readiness probes give up quickly: ZooKeeper 3.8.0 listens before its database is loaded, and a
/// four-letter word arriving in that window hits a NullPointerException that leaves the connection open
/// (until the 10 s sessionless-connection timeout). The next probe, 50 ms later, then gets a real answer.
constexpr auto probe_timeout = std::chrono::milliseconds(500);

/// Sends `command` to 127.0.0.1:`port` and returns the answer, or "" if none came within `timeout`.
std::string send_four_letter(std::uint16_t port, const std::string& command,
                             std::chrono::milliseconds timeout = std::chrono::seconds(5));

}  // namespace zklock::testing::detail
