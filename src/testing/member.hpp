// Internal to zklock::testing: one ZooKeeper server process (QuorumPeerMain) of an ensemble.
//
// Process lifetime: the JVMs are forked on one process-lifetime launcher thread (launcher.cpp) and die
// with the test process (PR_SET_PDEATHSIG), never with the thread that started them. So any thread may
// construct a server or cluster and stop or start its members; waitpid works from any thread of the process.
#pragma once

#include "ports.hpp"

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace zklock::testing::detail {

/// One QuorumPeerMain process with its own directory, config and ports.
struct member {
    int id = 0;  // the myid, 1-based
    std::filesystem::path dir;
    port_lease client, peer, election;
    std::string address = "127.0.0.1";  // where the others reach it
    int netns_fd = -1;                   // its network namespace (a partitionable cluster), or -1: ours
    pid_t pid = -1;
    bool voting = true;  // in the ensemble's configuration; a member being added is not, yet

    std::filesystem::path log_file() const { return dir / "server.log"; }
    std::filesystem::path config_file() const { return dir / "zoo.cfg"; }

    /// Whether the process runs; reaps it if it died on its own.
    bool alive();

    /// SIGSTOP, and wait until the kernel reports every thread stopped, so that no request sent after
    /// freeze() returns is served (SIGSTOP takes effect asynchronously).
    void freeze();
    void thaw();

    /// SIGKILL, and reap it.
    void kill();

    /// Starts the JVM on config_file(), with jvm_options, its output appended to log_file().
    void spawn(const std::filesystem::path& log4j_config, const std::vector<std::string>& jvm_options);
};

}  // namespace zklock::testing::detail
