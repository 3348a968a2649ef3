// What the local queue's tests share (test_local_queue.cpp, test_local_queue_loss.cpp): the fixture that
// drives one local_queue, sending each event as the shell (recipes/lock_queue.cpp) does, and helpers that
// show its actions as a short string ("grant arm_loss_clock").
#pragma once

#include "recipes/core/local_queue.hpp"

#include <zklock/error.hpp>

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace zklock::detail;

namespace local_queue_test {

using Q = queue_action::type;
using actions = local_queue::actions;
namespace zerr = zklock;

inline const error_code aborted = boost::asio::error::operation_aborted;
inline const error_code timeout = zerr::error::timeout;
inline const error_code deleted = zerr::error::lock_node_deleted;
inline const error_code uncertain = zerr::error::ownership_uncertain;
inline const error_code expired = zerr::error::session_expired;
inline const error_code lease_expired = zerr::error::lease_expired;

/// An action type's name (a switch, so that a new type without a name here shows as "unnamed").
inline std::string name(Q what)
{
    switch (what) {
    case Q::grant: return "grant";
    case Q::fail_waiter: return "fail_waiter";
    case Q::start_contender: return "start_contender";
    case Q::abandon_contender: return "abandon_contender";
    case Q::release_contender: return "release_contender";
    case Q::forget_contender: return "forget_contender";
    case Q::release_done: return "release_done";
    case Q::notify_lost: return "notify_lost";
    case Q::abort_lost_waiter: return "abort_lost_waiter";
    case Q::arm_loss_clock: return "arm_loss_clock";
    case Q::cancel_loss_clock: return "cancel_loss_clock";
    case Q::notify_revoked: return "notify_revoked";
    case Q::abort_revoke_waiter: return "abort_revoke_waiter";
    case Q::watch_followers: return "watch_followers";
    case Q::watch_own: return "watch_own";
    case Q::start_own_watch_clock: return "start_own_watch_clock";
    case Q::confirm_touch: return "confirm_touch";
    case Q::confirm_node: return "confirm_node";
    }
    return "unnamed";
}

/// The action types in order, space separated: "grant arm_loss_clock".
inline std::string kinds(const actions& out)
{
    std::string s;
    for (const auto& a : out) s += (s.empty() ? "" : " ") + name(a.what);
    return s;
}

/// The `nth` action of type `what` (the test stops if there is none).
inline const queue_action& the(const actions& out, Q what, std::size_t nth = 0)
{
    for (const auto& a : out)
        if (a.what == what && nth-- == 0) return a;
    BOOST_FAIL("action " << name(what) << " missing from [" << kinds(out) << "]");
    throw;  // unreachable
}

/// The waiters granted, in order.
inline std::vector<std::uint64_t> granted(const actions& out)
{
    std::vector<std::uint64_t> ids;
    for (const auto& a : out)
        if (a.what == Q::grant) ids.push_back(a.id);
    return ids;
}
using ids = std::vector<std::uint64_t>;

struct fixture {
    local_queue q{{}};
    bool connected = true;
    error_code end{};
    bool stale = false;  // the loss clock has run out

    void remake(bool shared, std::size_t limit, bool linger) { q = local_queue({shared, limit, linger}); }
    // Each event as the shell sends it: the session's state first.
    local_queue& at() { return q.observe(connected, end, stale), q; }
    actions acquire(std::uint64_t id, bool one_look = false) { return at().acquire(id, one_look); }
    actions release(std::uint64_t holder) { return at().release(holder, true); }
    /// The holder id of waiter `id` in a grant of `out`.
    static std::uint64_t holder(const actions& out, std::uint64_t id)
    {
        for (const auto& a : out)
            if (a.what == Q::grant && a.id == id) return a.holder;
        BOOST_FAIL("waiter " << id << " not granted in [" << kinds(out) << "]");
        return 0;
    }
    /// Waiter 1 acquires an uncontended node: its holder id.
    std::uint64_t hold_first()
    {
        BOOST_REQUIRE(kinds(acquire(1)) == "start_contender");
        return holder(at().on_acquired(), 1);
    }
};

}  // namespace local_queue_test
