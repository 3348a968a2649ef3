// The entry points of zklock/shared_mutex.hpp: two lock queues per session and path, a read side whose
// coroutines share one "__READ__" node and a write side queued behind one "__WRIT__" node (Curator's
// naming and order); and the downgrade.
//
// The downgrade: the holder of the write lock takes the read side as a read node of its
// own, created while it holds the write node and passing over it, so that other readers get in as soon as
// the write guard goes, while a writer still waits (behind the read node).
//
// The read node holds at its first listing unless a writer of another session queued between our write
// node and it: that writer would get the lock as soon as our write node goes, beside our reader (the trap
// of Curator 5.4's downgrade). Then the read guard is a second hold of the write node instead, which keeps
// the writer out until the read guard goes too.
#include "../lock_queue.hpp"

#include <zklock/shared_mutex.hpp>

#include <atomic>
#include <string>

namespace zklock::detail {

std::shared_ptr<lock_queue> rw_queue_for(const std::shared_ptr<session_impl>& s, const std::string& path, bool readers,
                                         const mutex_options& o, error_code& refusal)
{
    if (s && (refusal = lock_path_refusal(*s, path))) return nullptr;
    lock_queue_options q{readers ? contender_kind::reader : contender_kind::writer,
                         {readers, o.local_handoff_limit, o.linger}, o.acl};
    q.stats_label = o.stats_label;
    return find_lock_queue(s, (readers ? "read:" : "write:") + path, path, q, refusal);
}

namespace {
/// A downgrade in progress: its read node's queue, made on the session's executor, and whether it was
/// cancelled before that (the cancellation slot is bound on the caller's thread).
struct downgrade_op {
    std::shared_ptr<lock_queue> own;
    std::uint64_t id = 0;
    bool cancelled = false;
};
}  // namespace

void async_downgrade(std::shared_ptr<lock_queue> readers, std::shared_ptr<lock_queue> writers, hold_ref write,
                     handler<guard> h)
{
    if (!readers || !writers || write.state != writers) {  // no lock, an empty guard, or another lock's guard
        complete_without_session(std::move(h), error_code(zklock::error::not_held), guard{});
        return;
    }
    auto ex = readers->s->ex;
    auto op = std::make_shared<downgrade_op>();
    if (auto slot = asio::get_associated_cancellation_slot(h); slot.is_connected())
        slot.assign([w = std::weak_ptr<downgrade_op>(op), ex](asio::cancellation_type) {
            asio::post(ex, [w] {
                auto o = w.lock();
                if (!o) return;
                o->cancelled = true;
                if (o->own) o->own->cancel_waiter(o->id, asio::error::operation_aborted);
            });
        });
    asio::dispatch(ex, [op, readers = std::move(readers), writers = std::move(writers), write = std::move(write),
                        h = std::move(h)]() mutable {
        auto s = readers->s;
        if (op->cancelled) return s->post_completion(std::move(h), error_code(asio::error::operation_aborted), guard{});
        if (!writers->holds(write.holder) || writers->lost(write.holder))
            return s->post_completion(std::move(h), error_code(zklock::error::not_held), guard{});
        // One read node per downgrade, in a queue of its own: the session's other readers keep theirs,
        // which waits for the write node, so that none of them reads while the writer's coroutine writes.
        auto o = readers->opts;
        o.passed_over = write.node.substr(write.node.rfind('/') + 1);
        o.queue.linger = false;
        o.one_off = true;
        // Registered under a key of its own (one per downgrade), so that the session's drain asks its holder
        // to let go and waits for it, as for every other holder (issue 48.4).
        static std::atomic<std::uint64_t> next_downgrade{0};  // sessions run on several threads
        const auto key = "downgrade:" + readers->path + "#" + std::to_string(++next_downgrade);
        op->own = std::make_shared<lock_queue>(s, key, readers->path, o);
        op->own->subscribe();
        registry_of(*s).states[key] = op->own;
        op->id = op->own->new_id();
        // One look: the node holds at once, or a writer is in between.
        op->own->acquire(op->id, zklock::clock::now(), std::nullopt,
                         [op, writers, holder = write.holder, h = std::move(h)](error_code ec, guard g) mutable {
                             auto own = std::exchange(op->own, nullptr);
                             // A writer queued between (the one look's timeout): the read guard is a second
                             // hold of the write node, which stays until it goes. Other errors are the answer.
                             if (ec == zklock::error::timeout) {
                                 ec = {};
                                 g = writers->enter(holder, ec);
                             }
                             own->s->post_completion(std::move(h), ec, std::move(g));
                         });
    });
}

}  // namespace zklock::detail
