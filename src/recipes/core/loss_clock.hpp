// The holders' loss clock, as a pure function of now.
//
// ZooKeeper touched the session no earlier than the send time of the newest request that went through
// the leader (session/core/session_timing.hpp says which answers show that). It cannot expire the
// session (and let another client in) sooner than 7/12 of the session timeout after that touch (the
// forwarding delay in an ensemble and the keepalive gap; docs/DESIGN.md, "Loss timing"). The holders are
// told once the loss grace, at most that bound, has passed since that send time without a newer answer,
// connected or not: a silent follower looks connected for 2/3 T.
#pragma once

#include <chrono>

namespace zklock::detail {

using clock_time = std::chrono::steady_clock::time_point;
using clock_duration = std::chrono::steady_clock::duration;

/// What the session says of its touch, read by the shell when an event comes.
struct touch {
    clock_time last_answered_send{};  ///< the send time of the newest request answered through the leader
    clock_duration grace{};           ///< the session's loss grace

    /// When whoever holds is told `ownership_uncertain`, unless a newer answer comes first.
    clock_time warning_at() const noexcept { return last_answered_send + grace; }
    /// The clock has run out at `now`: a holder is told, and a guard granted now would be lost at birth.
    bool ran_out(clock_time now) const noexcept { return now >= warning_at(); }
};

}  // namespace zklock::detail
