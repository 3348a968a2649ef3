// The read/write lock: two lock queues per session and path, a read side whose coroutines share one
// "__READ__" node and a write side queued behind one "__WRIT__" node (Curator's naming and order).
#include "lock_queue.hpp"

#include <zklock/shared_mutex.hpp>

namespace zklock::detail {

std::shared_ptr<lock_queue> rw_queue_for(const std::shared_ptr<session_impl>& s, const std::string& path, bool readers,
                                         const mutex_options& o, error_code& refusal)
{
    const lock_queue_options q{readers ? contender_kind::reader : contender_kind::writer,
                               {readers, o.local_handoff_limit, o.linger}, o.acl};
    return find_lock_queue(s, (readers ? "read:" : "write:") + path, path, q, refusal);
}

void async_downgrade(hold_ref write, handler<guard> h)
{
    auto q = std::dynamic_pointer_cast<lock_queue>(write.state);
    if (!q || q->opts.kind != contender_kind::writer) {
        complete_without_session(std::move(h), error_code(zklock::error::not_held), guard{});
        return;
    }
    auto ex = q->s->ex;
    asio::dispatch(ex, [q = std::move(q), holder = write.holder, h = std::move(h)]() mutable {
        auto g = q->enter(holder);
        const error_code ec = g ? error_code{} : error_code(zklock::error::not_held);
        q->s->post_completion(std::move(h), ec, std::move(g));
    });
}

}  // namespace zklock::detail
