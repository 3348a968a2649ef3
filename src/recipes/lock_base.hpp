// What every recipe's per-session, per-path state offers to its guards, and the pieces the recipes share:
// the pending release, the background delete, the session-end errors.
#pragma once

#include <zklock/guard.hpp>

#include "../session/session_impl.hpp"

#include <atomic>

namespace zklock::detail {

/// A release's completion, completed once: by ZooKeeper's answer, or earlier by a cancellation (the node
/// is then given up in the background). Shared with the cancellation slot, which holds it weakly.
struct pending_release {
    explicit pending_release(handler<> handler) : h(std::move(handler)) {}
    handler<> h;
    void complete(session_impl& s, error_code ec)
    {
        if (h) s.post_completion(std::move(h), ec);
    }
};

/// The guard's side of a recipe. Every member function runs on the session's executor, except new_id.
class lock_base {
public:
    explicit lock_base(std::shared_ptr<session_impl> session) : s(std::move(session)) {}
    virtual ~lock_base() = default;
    lock_base(const lock_base&) = delete;
    lock_base& operator=(const lock_base&) = delete;

    /// Ids of waiters and of loss listeners, taken on the caller's thread (their cancellation slots are
    /// bound there, before the hop onto the session's executor).
    std::uint64_t new_id() noexcept { return next_id_.fetch_add(1, std::memory_order_relaxed); }

    virtual void release(std::uint64_t holder, std::shared_ptr<pending_release> done) = 0;
    virtual void wait_lost(std::uint64_t id, std::uint64_t holder, handler<error_code> h) = 0;
    virtual void cancel_lost(std::uint64_t id) = 0;
    /// Empty while `holder` holds; else why it lost the lock.
    virtual error_code lost(std::uint64_t holder) const = 0;
    virtual bool holds(std::uint64_t holder) const = 0;
    /// Completes `h` (success) when someone asks `holder` to let go (Curator's revocation request).
    virtual void wait_revoked(std::uint64_t id, std::uint64_t holder, handler<> h) = 0;
    virtual void cancel_revoked(std::uint64_t id) = 0;

    const std::shared_ptr<session_impl> s;

private:
    std::atomic<std::uint64_t> next_id_{1};
};

/// The error for operations cut short by the session's end in state `st`.
error_code final_error(session_state st);

/// Deletes a node, again after a reconnect if the connection was lost, until ZooKeeper confirms it is gone
/// (or the session ends, which removes an ephemeral node anyway). `done` may be empty.
void delete_node(const std::shared_ptr<session_impl>& s, std::string node, handler<> done);

/// Binds the handler's cancellation slot here, on the caller's thread: that is where its owner emits the
/// signal, and a slot may only be touched there. The cancellation hops onto the session's executor, and
/// the state is reached (weakly) only there.
template <class State, class... Args, class Fn>
void bind_cancellation(handler<Args...>& h, const std::shared_ptr<State>& q, Fn on_cancel)
{
    if (auto slot = asio::get_associated_cancellation_slot(h); slot.is_connected())
        slot.assign([w = std::weak_ptr<State>(q), ex = q->s->ex, on_cancel](asio::cancellation_type) {
            asio::post(ex, [w, on_cancel] {
                if (auto self = w.lock()) on_cancel(*self);
            });
        });
}

/// Drops a reference on the session's executor, so that the last one is never dropped elsewhere.
template <class State>
void drop_state_on_executor(std::shared_ptr<State> q) noexcept
{
    if (!q) return;
    try {
        auto ex = q->s->ex;
        asio::dispatch(ex, [q = std::move(q)]() mutable { q.reset(); });
    } catch (...) {  // allocation failure in a destructor: the session's end still frees everything
    }
}

}  // namespace zklock::detail
