// The local queue's holders' listeners: who waits to hear of a loss or a revocation request, and the
// revocation request itself. Part of local_queue (local_queue.hpp).
#include "local_queue.hpp"

namespace zklock::detail {

using queue_act = queue_action::type;

// A new listener is answered at once when its holder does not hold (aborted) or what it waits for has
// happened (`notify`); else it waits in `index`, and the node is watched (see watch_own).
local_queue::actions local_queue::listen(listener_index<>& index, std::uint64_t id, std::uint64_t holder, bool holding,
                                         bool happened, queue_action notify, queue_act aborted)
{
    actions out;
    if (!holding) out.push_back({.what = aborted, .id = id});
    else if (happened) out.push_back(notify);
    else {
        index.add(id, holder);
        watch_own(out);
    }
    return out;
}

local_queue::actions local_queue::unlisten(listener_index<>& index, std::uint64_t id, queue_act aborted)
{
    actions out;
    if (index.remove(id)) out.push_back({.what = aborted, .id = id});
    return out;
}

local_queue::actions local_queue::wait_lost(std::uint64_t id, std::uint64_t holder)
{
    const auto why = lost(holder);
    return listen(lost_waiters_, id, holder, holds(holder) || cut_off(holder), bool(why),
                  {.what = queue_act::notify_lost, .id = id, .ec = why}, queue_act::abort_lost_waiter);
}

local_queue::actions local_queue::cancel_lost(std::uint64_t id)
{
    return unlisten(lost_waiters_, id, queue_act::abort_lost_waiter);
}

local_queue::actions local_queue::wait_revoked(std::uint64_t id, std::uint64_t holder)
{
    return listen(revoke_waiters_, id, holder, holds(holder), revoke_requested_,
                  {.what = queue_act::notify_revoked, .id = id}, queue_act::abort_revoke_waiter);
}

local_queue::actions local_queue::cancel_revoked(std::uint64_t id)
{
    return unlisten(revoke_waiters_, id, queue_act::abort_revoke_waiter);
}

// Cooperative, as Curator's: the holders hear it and decide. A request that comes while no coroutine
// holds the node (a lingering one) lets the node go at once: nobody here needs it.
local_queue::actions local_queue::on_revoke_requested()
{
    actions out;
    revoke_requested_ = true;
    for (const auto& [id, none] : revoke_waiters_.take_all()) out.push_back({.what = queue_act::notify_revoked, .id = id});
    if (holders_.empty() && waiters_.empty() && contender_ && node_held_) {
        drop_contender();
        out.push_back({.what = queue_act::release_contender});
    }
    return out;
}

}  // namespace zklock::detail
