// Ordering of lock contenders by the sequence number ZooKeeper appends to their node names.
// Internal, but free of I/O so the unit tests can check it without a server.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zklock::detail {

/// The signed 32-bit sequence suffix of a sequential node name ("%010d": "...-lock-0000000042",
/// "...__lock__-000000007", "x-2147483647", "x-2147483648" for INT32_MIN after the wrap).
/// Empty if the name does not end in one (foreign, non-lock children are ignored).
std::optional<std::int32_t> parse_sequence(std::string_view name) noexcept;

/// Whether a child of a lock directory is a mutex contender: a sequential name whose sequence follows
/// "lock-" (Curator's InterProcessMutex, "_c_<uuid>-lock-N" or "lock-N") or "__lock__" (kazoo's Lock).
/// Anything else (a data child "report-0000000000", another schema's node) is no contender.
bool is_mutex_contender(std::string_view name) noexcept;

/// Where a contender stands among the children of the lock directory.
struct queue_position {
    bool found = false;          ///< our own node is among the children
    std::size_t ahead = 0;       ///< contenders before us (0: we hold the lock)
    std::string predecessor;     ///< the contender just before us, if any
    bool predecessor_is_head = false;
};

/// Orders contenders by sequence relative to our own (serial-number arithmetic), which is correct across
/// the signed 32-bit wrap as long as live contenders span less than 2^31 creates. `max_holders` is 1 for a
/// mutex; a contender holds when fewer than `max_holders` are ahead, and watches the one `max_holders`
/// places before it.
queue_position locate(const std::vector<std::string>& children, std::string_view own, std::size_t max_holders = 1,
                      bool (*is_contender)(std::string_view) noexcept = nullptr);

/// A fresh random UUID in the 8-4-4-4-12 form Curator uses for protected names.
std::string make_uuid();

}  // namespace zklock::detail
