// The entry points of zklock/detail/acquire.hpp, shared by the mutex and both sides of the read/write lock:
// acquire, place waits, re-entry, and letting go of a lock's shared state.
// Each entry point hops onto the session's executor (inline when already there), so that callers on other
// threads or strands are safe; the state is moved into the hop, so that the last reference to it is never
// dropped on the caller's thread.
#include "../lock_queue.hpp"

namespace zklock::detail {

void refuse_acquire(error_code why, handler<guard> h) { complete_without_session(std::move(h), why, guard{}); }

void async_acquire(std::shared_ptr<lock_queue> q, deadline d, lease_length lease, handler<guard> h)
{
    const auto id = q->new_id();
    bind_cancellation(h, q, [id](lock_queue& self) { self.cancel_waiter(id, asio::error::operation_aborted); });
    auto ex = q->s->ex;
    asio::dispatch(ex, [q = std::move(q), id, d, lease, h = std::move(h)]() mutable {
        q->acquire(id, d, lease, std::move(h));
    });
}

void async_wait_place(std::shared_ptr<lock_queue> q, error_code refusal, std::size_t known, handler<std::size_t> h)
{
    if (!q) return complete_without_session(std::move(h), refusal, std::size_t{0});
    const auto id = q->new_id();
    bind_cancellation(h, q, [id](lock_queue& self) { self.cancel_place(id); });
    auto ex = q->s->ex;
    asio::dispatch(ex, [q = std::move(q), id, known, h = std::move(h)]() mutable {
        q->wait_place(id, known, std::move(h));
    });
}

void drop_on_executor(std::shared_ptr<lock_queue> q) noexcept { drop_state_on_executor(std::move(q)); }

void async_reenter(std::shared_ptr<lock_queue> q, hold_ref held, handler<guard> h)
{
    if (!q || held.state != q) {  // no queue, an empty guard, or another lock's guard
        complete_without_session(std::move(h), error_code(zklock::error::not_held), guard{});
        return;
    }
    auto ex = q->s->ex;
    asio::dispatch(ex, [q = std::move(q), holder = held.holder, h = std::move(h)]() mutable {
        error_code ec;
        auto g = q->enter(holder, ec);
        q->s->post_completion(std::move(h), ec, std::move(g));
    });
}

}  // namespace zklock::detail
