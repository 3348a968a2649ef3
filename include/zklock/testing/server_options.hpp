// How zklock::testing starts its ZooKeeper servers (testing::server, testing::cluster).
#pragma once

#include <chrono>
#include <filesystem>

namespace zklock::testing {

struct server_options {
    /// Milliseconds per ZooKeeper tick. Session timeouts are bounded to [2, 20] ticks by the server,
    /// so a small tick lets tests use short session timeouts.
    int tick_ms = 200;
    /// How long start() and restart() wait for the server to answer `srvr`.
    std::chrono::milliseconds start_timeout{60'000};
    /// Where the temporary data directories go; empty means $TMPDIR or /tmp.
    std::filesystem::path work_root{};
    /// Put the transaction log on this directory (e.g. /dev/shm) instead of the data directory.
    std::filesystem::path data_log_root{};
    /// testing::cluster only: run each member on a network of its own, whose links can be cut
    /// (cluster::partition). Needs root; see cluster.hpp.
    bool partitionable = false;
    /// testing::cluster only: write each member's client address into its server line
    /// ("server.1=...;127.0.0.1:port"), as a ZooKeeper 3.5+ dynamic configuration does, so that
    /// /zookeeper/config lists every member for clients (session_config::follow_ensemble). Off, the
    /// configuration is static and names no client address: sessions stay on the hosts they were given.
    bool publish_client_addresses = false;
};

}  // namespace zklock::testing
