// The library's side of zklock_chaos: on one client machine, a session whose coroutines contend on the
// mutex, both sides of the read/write lock and the semaphore, writing the fenced resource and logging
// each section (log.hpp). A session that expired is replaced by a new one, as a service would.
#pragma once

#include "log.hpp"
#include "resource.hpp"

#include <atomic>
#include <cstdint>
#include <string>

namespace zklock_chaos {

inline const std::string mutex_path = "/chaos/mutex", rw_path = "/chaos/rw", sem_path = "/chaos/sem";

struct workload {
    event_log& log;
    fenced_counter mutex_resource, rw_resource;
    std::string hosts;
    std::size_t sem_limit = 2;
    bool cut_short = true;       // false: holders ignore their warning (the checker's self-test)
    std::atomic<bool> stop{false};
    std::atomic<unsigned long> errors{0};
};

/// Runs machine `machine`'s workers on the calling thread (already on the machine's network) until
/// `w.stop`, then closes its session.
void run_library_machine(workload& w, int machine, std::uint64_t seed);

}  // namespace zklock_chaos
