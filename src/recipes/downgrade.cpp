// A read/write lock's downgrade: the holder of the write lock takes the read side as a read node of its
// own, created while it holds the write node and passing over it, so that other readers get in as soon as
// the write guard goes, while a writer still waits (behind the read node).
//
// The read node holds at its first listing unless a writer of another session queued between our write
// node and it: that writer would get the lock as soon as our write node goes, beside our reader (the trap
// of Curator 5.4's downgrade). Then the read guard is a second hold of the write node instead, which keeps
// the writer out until the read guard goes too.
#include "lock_queue.hpp"

#include <zklock/shared_mutex.hpp>

namespace zklock::detail {

void async_downgrade(std::shared_ptr<lock_queue> readers, std::shared_ptr<lock_queue> writers, hold_ref write,
                     handler<guard> h)
{
    if (!readers || !writers || write.state != writers) {  // no lock, an empty guard, or another lock's guard
        complete_without_session(std::move(h), error_code(zklock::error::not_held), guard{});
        return;
    }
    auto s = readers->s;
    // One read node per downgrade, in a queue of its own: the session's other readers keep theirs, which
    // waits for the write node, so that none of them reads while the writer's coroutine still writes.
    auto o = readers->opts;
    o.passed_over = write.node.substr(write.node.rfind('/') + 1);
    o.queue.linger = false;
    auto own = std::make_shared<lock_queue>(s, "downgrade:" + readers->path, readers->path, o);
    own->subscribe();
    const auto id = own->new_id();
    bind_cancellation(h, own, [id](lock_queue& q) { q.cancel_waiter(id, asio::error::operation_aborted); });
    asio::dispatch(s->ex, [own, writers = std::move(writers), holder = write.holder, id, h = std::move(h)]() mutable {
        if (!writers->holds(holder) || writers->lost(holder))
            return own->s->post_completion(std::move(h), error_code(zklock::error::not_held), guard{});
        // One look: the node holds at once, or a writer is in between.
        own->acquire(id, std::chrono::steady_clock::now(), std::nullopt,
                     [own, writers, holder, h = std::move(h)](error_code ec, guard g) mutable {
                         if (ec && ec != asio::error::operation_aborted) {
                             g = writers->enter(holder);  // keeps the write node until the read guard goes
                             ec = g ? error_code{} : error_code(zklock::error::not_held);
                         }
                         own->s->post_completion(std::move(h), ec, std::move(g));
                     });
    });
}

}  // namespace zklock::detail
