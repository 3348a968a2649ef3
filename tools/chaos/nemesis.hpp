// zklock_chaos's nemesis: faults on a partitionable three-member cluster with one client machine beside
// each member (client i "near" member i: on member i's side of a partition), one after another, each
// logged ("nemesis start ...", "nemesis heal") for the checker's recovery figures.
//   leader-iso  the leader and its near client cut off from the rest
//   minority    a follower and its near client cut off from the rest
//   bridge      two members cut from each other (with their near clients); the third sees both
//   client-iso  a client machine cut off from every member
//   delay       a member's link slowed (200-1500 ms per packet), a client's losing 20% of its packets
//   kill        the leader killed (SIGKILL), restarted at the heal
//   stop        the leader frozen (SIGSTOP), thawed at the heal
//   mixed       any of the above, at random
// A list ("leader-iso,client-iso,kill") takes its faults in that order, round and round.
#pragma once

#include "log.hpp"

#include <zklock/testing/cluster.hpp>

#include <atomic>
#include <optional>
#include <string>
#include <vector>

namespace zklock_chaos {

/// The nemesis names, in order; false for an unknown one.
bool valid_nemesis(const std::string& name);
std::vector<std::string> parse_nemeses(const std::string& list);  // empty: a name is unknown

struct nemesis {
    zklock::testing::cluster& cl;
    event_log& log;
    std::vector<std::string> kinds;
    std::uint64_t seed;
    std::atomic<bool> stop{false};
    std::vector<std::string> problems;  // read after the thread ended

    /// Injects faults until `stop`, then heals everything. Run on a thread of its own.
    void run();
};

}  // namespace zklock_chaos
