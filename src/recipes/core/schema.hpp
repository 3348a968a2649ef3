// What a lock directory's children mean to each recipe: pure functions over names, no I/O.
//
// Every recipe reads the same kind of listing (the children of one directory, in any order) and asks
// one question of it: "do I hold it, and if not, whose node do I watch?". The recipes differ only in
// the answer, so the answer lives here, where the unit tests reach it without a server.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zklock::detail {

/// The node families that share a lock directory in the wild, by the names their recipes give them.
enum class lock_schema {
    mutex,       ///< "...lock-N" (Curator InterProcessMutex, zklock), "__lock__N" / "__rlock__N" (kazoo)
    read_write,  ///< "...__READ__N" / "...__WRIT__N" (Curator InterProcessReadWriteLock)
    semaphore,   ///< the children "locks" and "leases" (Curator InterProcessSemaphoreV2)
    latch,       ///< "...latch-N" (Curator LeaderLatch): an election that no lock may share
};

/// Words for an error message ("a Curator read/write lock (__READ__/__WRIT__ nodes)").
std::string_view describe(lock_schema) noexcept;

/// The kind of node a contender creates; decides the name and the predicate.
enum class contender_kind {
    exclusive,  ///< a mutex node: holds when first among mutex nodes
    writer,     ///< a __WRIT__ node: holds when first among readers and writers
    reader,     ///< a __READ__ node: holds when no writer is ahead
    latch,      ///< a -latch- node (Curator LeaderLatch's): holds when first among latch nodes
};

/// The name marker a contender of `kind` puts before ZooKeeper's sequence ("lock-", "__WRIT__", "__READ__",
/// "latch-").
std::string_view marker(contender_kind) noexcept;
lock_schema schema_of(contender_kind) noexcept;

/// The role a child plays: a contender of one schema (and whether it excludes readers), or nothing.
struct child_role {
    std::optional<lock_schema> schema;  ///< empty: a data child or a foreign name, ignored
    bool contender = false;             ///< a sequential node that queues (false for "locks"/"leases")
    bool excludes_readers = false;      ///< a writer, or any mutex node
};
child_role classify(std::string_view name) noexcept;

/// How many of the contenders ahead a verdict names: the contender machine watches up to 8 of them, and a
/// ninth tells it that there are more. A listing of thousands is then not copied and sorted whole.
inline constexpr std::size_t most_obstacles_listed = 9;

/// The answer to "do I hold it?" for one listing.
struct verdict {
    bool found = false;               ///< our node is among the children (false: it is gone)
    bool holds = false;               ///< we hold the lock
    /// When not holding: the contenders ahead that count, nearest first, at most most_obstacles_listed
    /// of them (`ahead` says how many there are).
    std::vector<std::string> obstacles;
    std::optional<lock_schema> foreign;   ///< a child of another schema: the directory is not ours to use
    std::size_t ahead = 0;            ///< contenders ahead of us that count for our kind
};

/// Decides for our node `own` of `kind` among `children`. Ordering is by sequence number relative to our
/// own (serial-number arithmetic, so it stays right across the signed 32-bit wrap). Foreign-schema
/// children are reported, not ordered: the caller refuses the directory.
/// `passed_over`: a child that does not count as ahead (our own write node, which we hold: a downgrade).
verdict decide(contender_kind kind, const std::vector<std::string>& children, std::string_view own,
               std::string_view passed_over = {});

/// Whether a contender behind our node `own` of `kind` waits for it: any contender of our schema after
/// us, or for a reader only a writer (other readers hold beside it). For a lingering node.
bool someone_waits_behind(contender_kind kind, const std::vector<std::string>& children, std::string_view own);

/// Curator SemaphoreV2's lease rule: a lease holds when the leases directory (which it lists after
/// creating its own node, under the semaphore's internal lock) has at most `max_permits` children.
/// Empty when `own` is not among them (its node is gone).
std::optional<bool> lease_holds(const std::vector<std::string>& leases, std::string_view own, std::size_t max_permits);

/// Whether another process wants a lease, from a listing of the semaphore's internal lock directory
/// (PATH/locks): every waiter, Curator's and ours, queues there, and holds that lock while its lease node
/// waits for a lease to go. `own`: our session's node there (empty: none).
bool lease_waiter_present(const std::vector<std::string>& lock_children, std::string_view own);

/// One contender of a lock directory, in queue order (for the participants list).
struct queued {
    std::string name;
    child_role role;
    bool holds = false;
};
/// The contenders among `children` in the order they get the lock (by sequence, wrap-aware), each with
/// whether it holds now: a mutex's first node; a read/write lock's writer at the head, or its readers
/// ahead of the first writer. Non-contenders are left out.
std::vector<queued> queue_order(const std::vector<std::string>& children);

/// A foreign child in the semaphore's own directory (a mutex's or read/write lock's contender).
std::optional<lock_schema> foreign_to_semaphore(const std::vector<std::string>& children) noexcept;

}  // namespace zklock::detail
