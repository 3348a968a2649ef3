// Lock cohorting bounded by real contention, for the semaphore: leases pass between this session's
// coroutines beyond `local_handoff_limit` only while nobody else waits for one. Every waiter of another
// process queues on the internal lock (PATH/locks), and holds it while its lease node waits; so one
// children watch there, kept while leases pass locally, tells it. Any change makes the answer unknown
// until looked again. (Our own run's node there is ours: it waits behind our own holders.)
#include "lease_run.hpp"

namespace zklock::detail {

void semaphore_queue::look_for_followers()
{
    if (looking_ || opts.local_handoff_limit == 0) return;
    looking_ = true;
    nobody_waits_ = false;
    s->get_children(path + "/locks", &followers_,
                    [w = weak_from_this()](error_code ec, std::vector<std::string> names, stat) {
                        auto q = w.lock();
                        if (!q) return;
                        if (ec) {  // the bound stays strict; the next local hand-off looks again
                            q->looking_ = false;
                            return;
                        }
                        q->nobody_waits_ = !lease_waiter_present(names, q->internal_lock->node_name());
                        q->followers_.async_wait([w](error_code wec, watch_event) {
                            auto qq = w.lock();
                            if (!qq) return;
                            qq->looking_ = false;
                            qq->nobody_waits_ = false;  // someone came or went: unknown until looked again
                            if (!wec && !qq->held_.empty()) qq->look_for_followers();
                        });
                    });
}

}  // namespace zklock::detail
