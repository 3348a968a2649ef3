// The command's side of zklock_chaos: on one client machine, `zklock` processes (run in the machine's
// network namespace by `ip netns exec`) take the mutex, a side of the read/write lock or a lease of the
// semaphore, one after another, and run `zklock_chaos section` as their COMMAND: it logs the section and
// writes the fenced resource with ZKLOCK_FENCING_TOKEN. A loss reaches it as zklock's SIGTERM.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace zklock_chaos {

struct command_machine {
    std::string zklock;      // the zklock binary
    std::string self;        // this binary, for its `section` mode
    std::string netns;       // the machine's namespace
    std::string hosts;
    std::string log, mutex_resource, rw_resource, output;  // files
    std::size_t sem_limit = 2;
    int index = 0;
};

/// Runs one zklock after another until `stop`; returns when the last has ended.
void run_command_machine(const command_machine& m, std::uint64_t seed, const std::atomic<bool>& stop);

/// `zklock_chaos section KIND HOLDER LOG RESOURCE HOLD_MS`: the COMMAND. Returns its exit status.
int section_main(int argc, char** argv);

}  // namespace zklock_chaos
