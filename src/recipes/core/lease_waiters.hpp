// Which of a semaphore's lease nodes hold and which wait, told from what any process can read on the
// server: for the participants list, `zklock ls`, and `zklock break` (which must not delete a waiter's).
//
// Curator SemaphoreV2's protocol (ours too) makes lease nodes only under the semaphore's internal lock,
// PATH/locks: a run takes that lock, creates its lease nodes under PATH/leases (one, or several for
// acquire_many), and lists them until there are at most max leases; only then do they hold, and the run
// lets the lock go. So the run at the head of PATH/locks owns every lease made since it took the lock,
// and those wait; every other lease holds. Since it took the lock, as the server shows it: made by the
// head node's session, after the head node (a higher czxid). A session's earlier leases were made before
// its current lock node: the run that made them had let its own lock node go first.
//
// One case reads wrong: Curator threads that share one client (one session) and take leases at the same
// time. A lease another thread got while this run's lock node queued counts as waiting.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace zklock::detail {

/// A node as the server describes it: when it was made, and by which session.
struct node_origin {
    std::int64_t czxid = 0;
    std::int64_t session = 0;
};

/// For each of `leases`, whether it holds (true) or waits (false), given the head of the internal lock
/// (none: nobody holds that lock, so no run is under way and every lease holds).
std::vector<bool> leases_holding(const std::vector<node_origin>& leases, const std::optional<node_origin>& lock_head);

}  // namespace zklock::detail
