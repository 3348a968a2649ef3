// The session's side of the loss clock, as pure functions of time: which answers show that the leader
// touched the session, how long the loss grace may be, when the keepalive is due, how long a one look
// may wait. No Asio and no clock is read here: the session (session_impl.cpp) reads the clock once and
// does what these say. docs/DESIGN.md, "Loss timing", derives the numbers.
#pragma once

#include <zklock/error.hpp>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string_view>

namespace zklock::detail {

using clock_time = std::chrono::steady_clock::time_point;
using std::chrono::milliseconds;

/// Whether the answer `ec` to a request of `kind` ("sync", "create", "get_data", ...) certainly went
/// through the leader, which expires sessions: then the session was touched no earlier than the
/// request's send time. Reads never count (a follower cut off from the leader still answers them), and
/// of the writes only a success and the errors that only the leader's PrepRequestProcessor gives: a
/// follower answers NOAUTH and INVALIDACL itself (the eager ACL check), and THROTTLEDOP (its throttle).
inline bool passed_the_leader(std::string_view kind, const boost::system::error_code& ec) noexcept
{
    const bool write = kind == "sync" || kind == "create" || kind == "remove" || kind == "set_data" || kind == "multi";
    return write && (!ec || ec == zk_errc::node_exists || ec == zk_errc::no_node || ec == zk_errc::bad_version ||
                     ec == zk_errc::not_empty);
}

/// The session timeout the timing rules use: the negotiated one once known, else the one asked for.
constexpr milliseconds session_timeout_in_use(milliseconds negotiated, milliseconds asked) noexcept
{
    return negotiated.count() > 0 ? negotiated : asked;
}

/// The longest loss grace that keeps the promise for session timeout `t`: the leader cannot expire the
/// session sooner than t - t/6 (the keepalive gap) - t/4 (half a tick, a tick being at most t/2) after
/// the send time of the newest answered request, that is 7t/12 (rounded down).
constexpr milliseconds loss_grace_bound(milliseconds t) noexcept { return t * 7 / 12; }

struct loss_grace_choice {
    milliseconds grace{};
    bool clamped = false;  ///< the configured grace was above the bound for `t`, which is used instead
};

/// The loss grace for session timeout `t`: the configured one, at most loss_grace_bound(t) (a server may
/// negotiate a shorter timeout than asked for), or t/2 when none is configured.
constexpr loss_grace_choice choose_loss_grace(std::optional<milliseconds> configured, milliseconds t) noexcept
{
    if (!configured) return {t / 2};
    if (*configured > loss_grace_bound(t)) return {loss_grace_bound(t), true};
    return {*configured};
}

/// How long nothing may be answered before the keepalive sends a sync: t/6, the gap the bound assumes
/// (the C client pings only after t/3 idle, and its pings say nothing about the leader), or a third of a
/// shorter grace, so that a healthy holder's clock never runs out.
constexpr milliseconds keepalive_interval(milliseconds t, milliseconds grace) noexcept
{
    return std::max(milliseconds(1), std::min(t / 6, grace / 3));
}

struct keepalive_step {
    bool send = false;     ///< send a sync now
    clock_time wake_at{};  ///< look again then (an answer looks again earlier)
};

/// The keepalive at `now`: due `every` after the send time of the newest answered request; at most one
/// sync in flight, and none while disconnected (a reconnect looks again at once).
constexpr keepalive_step keepalive_due(clock_time now, clock_time last_answered_send, milliseconds every,
                                       bool in_flight, bool connected) noexcept
{
    const auto due = last_answered_send + every;
    if (now < due) return {false, due};
    return {!in_flight && connected, now + every / 2};
}

/// How long a one look (try_acquire, a zero timeout) may wait for ZooKeeper's answers: a server that
/// stopped answering must not hold it for the 2/3 t the C client takes to notice.
constexpr milliseconds one_look_limit(milliseconds t) noexcept { return std::min(milliseconds(1000), t / 4); }

}  // namespace zklock::detail
