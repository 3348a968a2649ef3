// Internal to zklock::testing: the ZooKeeper processes behind a testing::server (one member) or a
// testing::cluster (N members), their configuration and their readiness.
#pragma once

#include "member.hpp"
#include "network.hpp"
#include "temp_dir.hpp"
#include "tls.hpp"

#include "zklock/testing/server.hpp"

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zklock::testing::detail {

/// N members sharing one temporary directory. N == 1 is a standalone server (no server.N lines).
/// With a network, member i runs in its host i on the fixed ports 2181, 2888 and 3888; without one, all
/// run on loopback on reserved free ports.
struct ensemble {
    server_options options;
    const network* net = nullptr;
    temp_dir root;
    std::optional<temp_dir> log_root;  // only with options.data_log_root
    std::vector<member> members;
    std::optional<tls_files> tls;  // only with options.tls_only

    /// Reserves the ports and writes every member's configuration; starts nothing.
    ensemble(std::size_t size, server_options opts, const network* on = nullptr);
    ~ensemble();
    ensemble(const ensemble&) = delete;
    ensemble& operator=(const ensemble&) = delete;

    std::filesystem::path log4j_config() const { return root.path / "log4j.properties"; }
    void spawn(std::size_t i) { members[i].spawn(log4j_config(), options.jvm_options); }

    void write_config(const member& m) const;
    /// "host:peer:election[:participant;host:client]", as a server line or a reconfig names a member.
    std::string server_spec(const member& m) const;
    /// Starts a member configured with the voting members and itself (not voting yet); returns its index.
    std::size_t add_member();

    /// Waits until every listed member answers `srvr` with a Mode: line. A member whose quorum is not
    /// up answers "not currently serving requests" instead, so this also means "has joined a quorum".
    void wait_serving(const std::vector<std::size_t>& which);

    /// Kills `m` and throws with the tail of its log.
    [[noreturn]] void fail(member& m, const std::string& why);

    /// A four-letter word to member i, from inside its host when it has one ("" if no answer).
    std::string four_letter(std::size_t i, const std::string& command,
                            std::chrono::milliseconds timeout = std::chrono::seconds(5)) const;

    std::optional<std::size_t> find_leader() const;
    std::size_t wait_leader(std::chrono::milliseconds timeout) const;

    std::string connect_string() const;

    /// members[i], or std::out_of_range.
    member& at(std::size_t i);
    const member& at(std::size_t i) const;
};

/// Builds and starts an ensemble, starting over with fresh ports if a foreign process took one.
std::unique_ptr<ensemble> launch(std::size_t size, const server_options& options, const network* on = nullptr);

}  // namespace zklock::testing::detail
