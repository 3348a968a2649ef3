// A ZooKeeper ensemble for tests: members that can be killed, frozen, and (as root) cut off from each
// other and from clients by real network partitions.
//
// Partitions (server_options::partitionable): each member runs in a network namespace of its own, with
// one address (10.77.0.N) on a bridge that exists only inside namespaces the cluster made; client machines
// (add_client) are namespaces on the same bridge. Nothing is added to the machine's own namespace, and no
// packet can leave the cluster's namespaces (the bridge has no uplink, the hosts no route beyond it).
// Links are cut with packet filters in the hosts' namespaces (iptables, Debian's nft back end): a cut
// drops packets silently, as a broken switch does, so TCP connections hang until their timeouts.
// Loss is iptables' `statistic` match; delay is an NFQUEUE that a thread of this process gives back
// late (the kernel here has no sch_netem). Everything is removed by the destructor; namespaces left by a
// test process that was killed are removed by the next cluster made on the machine.
#pragma once

#include "zklock/testing/server_options.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zklock::testing {

/// One side of a partition: members and client machines (indices of add_client).
struct side {
    std::vector<std::size_t> members;  ///< indices of the cluster's members
    std::vector<std::size_t> clients;  ///< indices that add_client returned
};

/// What a member's or client's link does when it is not cut: drop a share of packets, and hold back
/// every packet it sends.
struct link_quality {
    double loss = 0.0;                   ///< 0 to 1, in each direction
    std::chrono::milliseconds delay{0};  ///< added to every packet the host sends
};

/// A three-server (or N-server) ensemble on loopback. Each member can be stopped and restarted.
class cluster {
public:
    /// Starts `size` members (at least 1) and returns once they serve clients; throws
    /// std::invalid_argument for 0 and std::runtime_error (with a log tail) if they do not come up.
    explicit cluster(std::size_t size = 3, server_options options = {});
    ~cluster();
    cluster(const cluster&) = delete;
    cluster& operator=(const cluster&) = delete;

    /// "127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3", or "10.77.0.1:2181,..." when partitionable (reachable
    /// only from the cluster's client machines).
    std::string connect_string() const;
    /// The number of members, those added by add_member included.
    std::size_t size() const;
    /// The port a member takes clients on.
    std::uint16_t client_port(std::size_t member) const;

    void stop(std::size_t member);    ///< SIGKILL
    /// Restarts a stopped member; returns once it serves clients again. From any thread: the member keeps
    /// running after the calling thread ends.
    void start(std::size_t member);
    /// True unless the member was stopped (a frozen member is running).
    bool running(std::size_t member) const;
    /// Suspends a member (SIGSTOP): it keeps its TCP connections but answers nothing, as a partitioned
    /// or paused server would; the others go on without it. `thaw` resumes it.
    void freeze(std::size_t member);
    /// Resumes a frozen member (SIGCONT).
    void thaw(std::size_t member);

    /// Index of the current leader (asks each running member `srvr`); throws if none answers as leader
    /// within `timeout`.
    std::size_t leader(std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;

    /// Sends a four-letter command ("srvr", "mntr", "conf", ...) to a member and returns the answer ("" if
    /// none).
    std::string four_letter(std::size_t member, const std::string& command) const;

    // Membership (a cluster made with server_options::reconfig_enabled; others throw not_supported).

    /// Starts one more server, configured with the current members and itself: it syncs with the leader
    /// but has no vote until `reconfigure` adds it. Returns its index; returns once it serves clients.
    std::size_t add_member();
    /// ZooKeeper's `reconfig`, sent to a running voting member: adds the members `joining` (indices) as
    /// participants and removes the members `leaving`. Returns once the new configuration is committed;
    /// throws std::runtime_error with ZooKeeper's answer if it is refused. Removed members keep running
    /// until stopped, as after a real reconfig.
    void reconfigure(const std::vector<std::size_t>& joining, const std::vector<std::size_t>& leaving);

    // Partitions. Each call below throws boost::system::system_error with zklock::error::not_supported
    // on a cluster made without server_options::partitionable; making one throws it, naming the missing
    // privilege or tool, when the process is not root or lacks iproute2 or iptables. Calls that change
    // links return once every packet filter is in place.

    /// A client machine on the cluster's network; returns its index (0, 1, ...).
    std::size_t add_client();
    /// Its network namespace's name, for `ip netns exec NAME COMMAND` (a client process on that machine).
    std::string client_namespace(std::size_t client) const;
    /// Moves the calling thread onto client machine `client`: the sockets it makes from then on are that
    /// machine's. A session's connections are made by the thread that runs its io_context, so run the
    /// io_context of a session meant to be on that machine on such a thread, and only there.
    void enter_client(std::size_t client) const;

    /// Cuts every link between a host of `a` and a host of `b`, both ways; hosts in neither keep theirs
    /// (a member in neither is a bridge between the two sides). Adds to the cuts already made.
    void partition(const side& a, const side& b);
    /// Cuts a member off from every other member and every client.
    void isolate(std::size_t member);
    /// Cuts a client machine off from every member.
    void isolate_client(std::size_t client);
    /// Sets the quality of a member's or a client's link.
    void degrade_member(std::size_t member, link_quality q);
    /// The same for a client machine's link (an index of add_client).
    void degrade_client(std::size_t client, link_quality q);
    /// Every link whole again, without loss or delay.
    void heal();

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace zklock::testing
