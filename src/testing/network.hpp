// Internal to zklock::testing: a private network for a partitionable cluster. Every host (an ensemble
// member or a client machine) is a network namespace of its own with one address on a bridge; the bridge
// lives in a further namespace ("hub") and has no uplink. Nothing is added to the machine's own namespace:
// the veth pairs are made inside the hub and their far ends moved straight into the hosts.
//
// Links are cut with packet filters inside the hosts' namespaces (iptables-restore of the whole filter
// table at once). Loss is iptables' `statistic` match; delay is an NFQUEUE target whose packets a delayer
// thread (delayer.hpp) hands back late, because this kernel has no sch_netem.
//
// Namespaces are named "zklock-PID-N-..." so that a run killed before its destructor ran can be cleaned up
// by the next one (remove_leftovers), and the processes inside die with the test process (PDEATHSIG).
#pragma once

#include "unique_fd.hpp"

#include "zklock/testing/cluster.hpp"  // link_quality

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace zklock::testing::detail {

class delayer;

/// Throws boost::system::system_error(zklock::error::not_supported) naming what is missing (root, ip,
/// iptables-restore) when this process cannot build a network.
void require_network_support();

/// Deletes the namespaces of earlier runs whose process no longer exists.
void remove_leftover_namespaces();

class network {
public:
    /// Makes the hub and `hosts` hosts. Throws not_supported (require_network_support) or
    /// std::runtime_error with the failing command's output.
    explicit network(std::size_t hosts);
    ~network();
    network(const network&) = delete;
    network& operator=(const network&) = delete;

    /// Adds a host; returns its index.
    std::size_t add_host();
    std::size_t size() const { return hosts_.size(); }

    const std::string& namespace_name(std::size_t host) const;
    std::string address(std::size_t host) const;  ///< "10.77.0.(host + 1)"

    /// Cuts (or restores) both directions between two hosts. apply() makes it so.
    void cut(std::size_t a, std::size_t b);
    void set_quality(std::size_t host, link_quality q);
    /// Every link whole, no loss, no delay.
    void heal_all();
    /// Writes each changed host's filter table.
    void apply();

    /// Moves the calling thread into the host's network namespace: sockets it makes from now on are the host's.
    void enter(std::size_t host) const;
    /// Runs `fn` on a short-lived thread inside the host's namespace and waits for it.
    void run_in(std::size_t host, const std::function<void()>& fn) const;
    /// An open descriptor of the host's namespace (for setns in a child process before exec).
    int namespace_fd(std::size_t host) const;

private:
    struct host_state {
        std::string name;  // the namespace
        unique_fd fd;      // /run/netns/NAME, opened once
        std::set<std::size_t> cut;
        link_quality quality;
        std::string applied;  // the rules last written
        std::unique_ptr<delayer> delay;
    };
    void make_host();
    void tear_down() noexcept;
    std::string rules(std::size_t host) const;

    std::string prefix_;
    std::vector<std::unique_ptr<host_state>> hosts_;
};

}  // namespace zklock::testing::detail
