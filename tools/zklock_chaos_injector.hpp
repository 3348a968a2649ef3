// zklock_chaos's fault injector: kills and restarts, or freezes and thaws, the ensemble's leader at random
// intervals. Apart from the workload (zklock_chaos.cpp), which only reads its counters and flags.
#pragma once

#include <zklock/testing/server.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace zklock_chaos {

// The fault injector, on a thread of its own (the cluster's calls block). Its sleeps are the workload's
// schedule, spacing faults; they synchronize nothing. Only this thread calls the cluster meanwhile.
struct injector {
    injector(zklock::testing::cluster& c, unsigned long long s) : cl(c), seed(s) {}
    zklock::testing::cluster& cl;
    unsigned long long seed;
    std::atomic<bool> stop{false}, done{false};
    std::atomic<unsigned long long> faults{0};
    std::vector<std::string> problems;  // read after join()
    std::thread t;

    // Injects faults until `stop`, then heals every member and sets `done`. Run on `t`.
    void loop();
};

}  // namespace zklock_chaos
