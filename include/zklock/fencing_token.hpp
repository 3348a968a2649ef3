// A number that grows with every change of lock holder, for a resource to reject stale holders.
#pragma once

#include <compare>
#include <cstdint>
#include <iosfwd>
#include <string>

namespace zklock {

/**
 * Identifies one tenure of a lock. Later holders have greater tokens, across processes and sessions:
 * `zxid` is the creation zxid of the lock node (ZooKeeper's ensemble-wide, monotonic transaction id) and
 * `local` counts the hand-offs between coroutines of one session while that node was held.
 *
 * A resource that remembers the greatest token it has seen and refuses smaller ones cannot be written by
 * a holder whose lock has been lost (a paused process, an expired session): Kleppmann's fencing.
 */
struct fencing_token {
    std::int64_t zxid = 0;    ///< the lock node's creation zxid: a node created later has a greater one
    std::uint64_t local = 0;  ///< hand-offs between this session's coroutines while that node was held

    /// Orders tokens by `zxid`, then by `local`: a later tenure compares greater.
    friend constexpr auto operator<=>(const fencing_token&, const fencing_token&) = default;

    /// "ZXID.LOCAL" in decimal, e.g. "4294967302.0"; compare tokens as numbers, not as strings.
    std::string to_string() const { return std::to_string(zxid) + "." + std::to_string(local); }
};

/// As the member: "ZXID.LOCAL".
std::string to_string(const fencing_token& t);
/// Writes "ZXID.LOCAL" (needs <ostream>, as any stream insertion does).
std::ostream& operator<<(std::ostream& os, const fencing_token& t);

}  // namespace zklock
