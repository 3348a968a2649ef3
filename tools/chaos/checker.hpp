// zklock_chaos's checker: judges a run from its event log alone, so that any log (a run's, or one
// doctored to prove the checker fails it) gets the same verdict. Pure: no clock, no server.
//
// The log's events (after the time, in nanoseconds):
//   enter HOLDER KIND TOKEN   KIND: mutex, read, write (one read/write lock), sem (a semaphore)
//   warned HOLDER             the holder learned that its lock may be lost, and stopped
//   exit HOLDER               the holder left its section (it releases next)
//   write HOLDER RESOURCE TOKEN READ PREV accepted|fenced    (resource.hpp)
//   limit sem N               the semaphore's leases
//   nemesis start WHAT... | nemesis heal
//   orphans PATH N            nodes left at the end
//   end                       the run's last event
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace zklock_chaos {

struct verdict {
    // Safety: each must be 0.
    unsigned long overlaps = 0;        ///< two holders inside where the lock allows one (or > N on the semaphore)
    unsigned long late_warnings = 0;   ///< ... where the earlier one was warned, but only after the later entered
    unsigned long token_regressions = 0;  ///< a mutex or write holder's token not above its predecessor's
    unsigned long lost_updates = 0;    ///< an accepted write whose value was read before another accepted write
    unsigned long orphans = 0;         ///< lock nodes left at the end
    unsigned long malformed = 0;       ///< lines the checker cannot read
    // Figures.
    unsigned long sections = 0, warnings = 0, accepted_writes = 0, fenced_writes = 0, faults = 0;
    unsigned max_inside_mutex = 0, max_inside_read = 0, max_inside_sem = 0, sem_limit = 0;
    std::int64_t longest_stall_ns = 0;    ///< the longest time any one lock went without a new holder
    std::string longest_stall_at;         ///< which lock, from when to when (since the log's first event)
    std::int64_t worst_recovery_ns = 0;   ///< the longest time from a heal to the next entry of a lock
    std::int64_t total_recovery_ns = 0;   ///< summed over heals and locks, for the mean
    unsigned long recoveries = 0;
    std::vector<std::string> problems;    ///< the first few violations, described

    bool ok() const {
        return overlaps + late_warnings + token_regressions + lost_updates + orphans + malformed == 0 && sections > 0;
    }
};

verdict check(std::istream& log);

/// One line: "sections=... overlaps=... ... verdict=pass|FAIL".
std::string summary(const verdict& v);

}  // namespace zklock_chaos
