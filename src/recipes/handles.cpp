// The entry points behind lock objects and guards. Each hops onto the session's executor (inline when
// already there), so that callers on other threads or strands are safe; the state is moved into the hop,
// so that the last reference to it is never dropped on the caller's thread.
#include "lock_queue.hpp"

#include <zklock/mutex.hpp>

namespace zklock::detail {

void refuse_acquire(error_code why, handler<guard> h) { complete_without_session(std::move(h), why, guard{}); }

void async_acquire(std::shared_ptr<lock_queue> q, deadline d, handler<guard> h)
{
    const auto id = q->new_id();
    bind_cancellation(h, q, [id](lock_queue& self) { self.cancel_waiter(id, asio::error::operation_aborted); });
    auto ex = q->s->ex;
    asio::dispatch(ex, [q = std::move(q), id, d, h = std::move(h)]() mutable { q->acquire(id, d, std::move(h)); });
}

void drop_on_executor(std::shared_ptr<lock_queue> q) noexcept { drop_state_on_executor(std::move(q)); }

void async_release(std::shared_ptr<lock_base> q, std::uint64_t holder, handler<> h)
{
    if (!q) {
        complete_without_session(std::move(h), error_code(zklock::error::not_held));
        return;
    }
    auto ex = q->s->ex;
    auto slot = asio::get_associated_cancellation_slot(h);
    auto done = std::make_shared<pending_release>(std::move(h));
    // Cancellation completes the release at once; the node is deleted in the background all the same.
    if (slot.is_connected())
        slot.assign([w = std::weak_ptr<pending_release>(done), s = std::weak_ptr<session_impl>(q->s), ex](asio::cancellation_type) {
            asio::post(ex, [w, s] {
                auto d = w.lock();
                auto ss = s.lock();
                if (d && ss) d->complete(*ss, asio::error::operation_aborted);
            });
        });
    asio::dispatch(ex, [q = std::move(q), holder, done = std::move(done)]() mutable { q->release(holder, std::move(done)); });
}

void async_wait_lost(std::shared_ptr<lock_base> q, std::uint64_t holder, handler<error_code> h)
{
    if (!q) {
        complete_without_session(std::move(h), error_code(zklock::error::not_held), error_code{});
        return;
    }
    const auto id = q->new_id();
    bind_cancellation(h, q, [id](lock_base& self) { self.cancel_lost(id); });
    auto ex = q->s->ex;
    asio::dispatch(ex, [q = std::move(q), id, holder, h = std::move(h)]() mutable {
        q->wait_lost(id, holder, std::move(h));
    });
}

void release_detached(std::shared_ptr<lock_base> q, std::uint64_t holder) noexcept
{
    try {
        auto ex = q->s->ex;
        asio::dispatch(ex, [q = std::move(q), holder] { q->release(holder, nullptr); });
    } catch (...) {  // allocation failure in a destructor: the session's end still frees the node
    }
}

error_code lost_reason(const std::shared_ptr<lock_base>& q, std::uint64_t holder) noexcept { return q->lost(holder); }

}  // namespace zklock::detail
