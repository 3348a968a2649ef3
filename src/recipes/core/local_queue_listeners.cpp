// The local queue's holders' listeners: who waits to hear of a loss or a revocation request. Part of
// local_queue (local_queue.hpp), kept apart for its size.
#include "local_queue.hpp"

namespace zklock::detail {

using type = queue_action::type;

local_queue::actions local_queue::wait_lost(std::uint64_t id, std::uint64_t holder)
{
    actions out;
    if (!holds(holder) && !expired(holder)) out.push_back({.what = type::abort_lost_waiter, .id = id});
    else if (auto why = lost(holder)) out.push_back({.what = type::notify_lost, .id = id, .ec = why});
    else {
        lost_waiters_.add(id, holder);
        watch_own(out);
    }
    return out;
}

local_queue::actions local_queue::cancel_lost(std::uint64_t id)
{
    actions out;
    if (lost_waiters_.remove(id)) out.push_back({.what = type::abort_lost_waiter, .id = id});
    return out;
}

local_queue::actions local_queue::wait_revoked(std::uint64_t id, std::uint64_t holder)
{
    actions out;
    if (!holds(holder)) out.push_back({.what = type::abort_revoke_waiter, .id = id});
    else if (revoke_requested_) out.push_back({.what = type::notify_revoked, .id = id});
    else {
        revoke_waiters_.add(id, holder);
        watch_own(out);
    }
    return out;
}

local_queue::actions local_queue::cancel_revoked(std::uint64_t id)
{
    actions out;
    if (revoke_waiters_.remove(id)) out.push_back({.what = type::abort_revoke_waiter, .id = id});
    return out;
}

// Cooperative, as Curator's: the holders hear it and decide. A request that comes while no coroutine
// holds the node (a lingering one) lets the node go at once: nobody here needs it.
local_queue::actions local_queue::on_revoke_requested()
{
    actions out;
    revoke_requested_ = true;
    for (const auto& [id, none] : revoke_waiters_.take_all()) out.push_back({.what = type::notify_revoked, .id = id});
    if (holders_.empty() && waiters_.empty() && contender_ && node_held_) {
        drop_contender();
        out.push_back({.what = type::release_contender});
    }
    return out;
}

}  // namespace zklock::detail
