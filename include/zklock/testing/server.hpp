// A real ZooKeeper server (or a three-server ensemble) on loopback, for tests and demos.
// The analogue of Curator's TestingServer and TestingCluster: it runs Debian's `zookeeper` package
// (java -cp /usr/share/java/zookeeper.jar ... QuorumPeerMain) on free loopback ports with a temporary
// data directory, so any number of test binaries can run in parallel without colliding.
//
// These calls block (they start and stop processes); use them outside the event loop, or before it runs.
// Any thread may construct a server or cluster and call its members (stop, start, freeze, ... from a
// short-lived std::thread in a fault test is fine): the server processes belong to the test process, not
// to the calling thread, and are killed when the process dies, however it ends (even by SIGKILL).
// One object is not meant for concurrent calls from several threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "zklock/testing/cluster.hpp"  // testing::cluster, which used to be declared here
#include "zklock/testing/server_options.hpp"

namespace zklock {
class session;
}

namespace zklock::testing {

/// One standalone ZooKeeper server. Started by the constructor, killed and its directory removed by the destructor.
/// Throws std::runtime_error (with the server's log tail) if it does not come up.
class server {
public:
    /// Starts the server on a free loopback port; returns once it answers `srvr`.
    explicit server(server_options options = {});
    ~server();
    server(const server&) = delete;
    server& operator=(const server&) = delete;

    /// "127.0.0.1:PORT", for session_config::hosts.
    std::string connect_string() const;
    /// The loopback port it takes clients on (kept across stop and start).
    std::uint16_t port() const;

    /// Kills the server process (SIGKILL: no clean shutdown, as a crash would be). The data stays.
    void stop();
    /// Starts it again on the same port with the same data; returns once it answers. From any thread:
    /// the server keeps running after the calling thread ends.
    void start();
    /// True unless stopped (a frozen server is running).
    bool running() const;

    /// Suspends the server process (SIGSTOP), as a network partition or a long pause would: clients lose
    /// their connection while the server keeps its sessions, and expires them once it runs again if they
    /// were away longer than their timeout. `thaw()` resumes it (SIGCONT).
    void freeze();
    /// Resumes a frozen server (SIGCONT).
    void thaw();

    /// Sends a four-letter command ("srvr", "wchc", "mntr", "cons", ...) and returns the answer ("" if none).
    std::string four_letter(const std::string& command) const;

    /// With server_options::tls_only: the server's certificate (PEM), to verify it with; else empty.
    std::filesystem::path tls_certificate() const;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

/// Ends `s` on the server as an expiry would (Curator's KillSession): connects a second client with the
/// session's id and password, then closes it. `s` learns that its session expired when it next hears
/// from the server. Blocks (up to `timeout`) on the calling thread; `s` must have been connected.
/// Throws std::runtime_error if the server cannot be reached.
void kill_session(const zklock::session& s, std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace zklock::testing
