// How zklock::testing starts its ZooKeeper servers (testing::server, testing::cluster).
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace zklock::testing {

/// How testing::server and testing::cluster start their ZooKeeper servers; the defaults suit most tests.
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
    /// testing::cluster only: let tests change the membership at run time (cluster::add_member,
    /// cluster::reconfigure) with ZooKeeper's `reconfig` (reconfigEnabled=true, and skipACL so that no
    /// super user is needed). Implies publish_client_addresses, as a dynamic configuration names them.
    bool reconfig_enabled = false;
    /// testing::server only: serve clients over TLS alone, as a cluster that only opens ZooKeeper's
    /// secureClientPort does (Netty; the plain client port is not opened). The harness makes a
    /// self-signed certificate for 127.0.0.1 (server::tls_certificate), for the client's side to verify
    /// the server with: Debian's C client has no TLS, so a zklock session reaches such a server through a
    /// TLS proxy beside it (stunnel).
    bool tls_only = false;
    /// Options for each server's JVM, placed before its class path. The default starts a server in less
    /// CPU, for one that lives as long as a test: the client compiler only (the optimising one pays off
    /// in long runs), the serial collector and one compiler thread. A test suite on two cores took a
    /// fifth less time so (issue 49). A benchmark clears it, so that its servers run optimised code.
    std::vector<std::string> jvm_options{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:CICompilerCount=1"};
};

}  // namespace zklock::testing
