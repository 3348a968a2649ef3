// What every recipe's per-session, per-path state offers to its guards, and the pieces the recipes share:
// the pending release, the background delete, the session-end errors.
#pragma once

#include <zklock/guard.hpp>

#include "../session/session_impl.hpp"
#include "loss_board.hpp"

#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <map>
#include <optional>

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
    explicit lock_base(std::shared_ptr<session_impl> session) : s(std::move(session)), loss_clock_(s->ex) {}
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

    /// Moves `holder`'s lease to end `length` from now (gives it one if it had none); completes `h` with
    /// why not if it does not hold any more.
    void extend_lease(std::uint64_t holder, std::chrono::steady_clock::duration length, handler<> h)
    {
        auto why = lost(holder);
        if (!why && !holds(holder)) why = zklock::error::not_held;
        if (!why) {
            start_lease(holder, std::chrono::steady_clock::now() + length);
            leases_changed();
        }
        s->post_completion(std::move(h), why);
    }

    const std::shared_ptr<session_impl> s;
    loss_board losses;  ///< what guard::lost() reads from any thread; the recipe keeps it as lost() says

protected:
    using time_point = std::chrono::steady_clock::time_point;
    // The lease clocks: one timer per holder that holds with a lease. They run on the session's executor,
    // so a lease runs out whatever the holder's own code is doing (unless it blocks that executor).
    void start_lease(std::uint64_t holder, time_point end)
    {
        auto& t = leases_[holder];
        if (!t) t = std::make_unique<asio::steady_timer>(s->ex);
        t->expires_at(end);
        t->async_wait([self = weak_self(), holder](error_code ec) {
            auto q = self.lock();
            if (!q || ec) return;
            q->leases_.erase(holder);
            q->lease_ran_out(holder);
        });
    }
    void stop_lease(std::uint64_t holder) { leases_.erase(holder); }
    std::optional<time_point> lease_end(std::uint64_t holder) const
    {
        auto it = leases_.find(holder);
        return it == leases_.end() ? std::nullopt : std::optional<time_point>(it->second->expiry());
    }
    /// The end of `holder`'s lease on the wall clock (ms since the epoch), for the node's data.
    std::optional<std::int64_t> lease_end_ms(std::uint64_t holder) const
    {
        const auto end = lease_end(holder);
        if (!end) return std::nullopt;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*end - std::chrono::steady_clock::now());
        return std::chrono::duration_cast<std::chrono::milliseconds>((std::chrono::system_clock::now() + left).time_since_epoch())
            .count();
    }
    /// `holder`'s lease ran out.
    virtual void lease_ran_out(std::uint64_t holder) = 0;
    /// A lease was given or extended (the recipe may publish it in its node's data).
    virtual void leases_changed() {}
    virtual std::weak_ptr<lock_base> weak_self() = 0;

    // The loss clock. ZooKeeper touched the session no earlier than the send time of the newest request
    // it answered; it cannot expire the session (and let another client in) sooner than the session
    // timeout after that touch, less the forwarding delay in an ensemble and the keepalive gap
    // (docs/DESIGN.md, "Loss timing"). The holders are told once loss_grace has passed since that send
    // time without a newer answer, connected or not: a silent follower looks connected for 2/3 T.
    /// Whether anybody holds (the clock runs only then).
    virtual bool has_holders() const = 0;
    /// The grace ran out: tell every holder ownership_uncertain.
    virtual void grace_passed() = 0;
    /// (Re)starts the clock (its handler holds this state weakly).
    void arm_loss_clock()
    {
        if (!has_holders()) return;
        loss_clock_.expires_at(s->last_answered_send() + s->loss_grace());
        // Whoever holds when the grace runs out is told, even if the lock changed hands meanwhile.
        loss_clock_.async_wait([self = weak_self()](error_code ec) {
            auto q = self.lock();
            if (!q || ec || !q->has_holders()) return;
            if (std::chrono::steady_clock::now() >= q->s->last_answered_send() + q->s->loss_grace())
                q->grace_passed();
            else
                q->arm_loss_clock();  // a newer answer came: count from it
        });
    }
    void cancel_loss_clock() { loss_clock_.cancel(); }

private:
    std::atomic<std::uint64_t> next_id_{1};
    asio::steady_timer loss_clock_;
    std::map<std::uint64_t, std::unique_ptr<asio::steady_timer>> leases_;
};

/// The error for operations cut short by the session's end in state `st`.
error_code final_error(session_state st);

/// The session's shared state for `key` ("mutex:/locks/a", ...), made by `make` on first use, so that every
/// lock object of one session on one path shares it. Null with `refusal` set for a moved-from session, or
/// when the one there is not `same` (another object of this session on the path with other options).
template <class State, class Same, class Make>
std::shared_ptr<State> shared_state_for(const std::shared_ptr<session_impl>& s, const std::string& key, Same same,
                                        Make make, error_code& refusal)
{
    if (!s) {
        refusal = zklock::error::no_session;
        return nullptr;
    }
    if (auto it = s->recipes.find(key); it != s->recipes.end())
        if (auto existing = std::static_pointer_cast<State>(it->second.lock())) {
            if (same(*existing)) return existing;
            refusal = zklock::error::conflicting_options;
            return nullptr;
        }
    std::shared_ptr<State> made = make();  // may add other keys (a semaphore's internal lock): look up again
    if (!made) return nullptr;
    made->subscribe();
    s->recipes[key] = made;
    return made;
}

/// Forgets `key`'s shared state in the session (its destructor calls this), unless a newer one took it.
inline void forget_shared_state(session_impl& s, const std::string& key)
{
    if (auto it = s.recipes.find(key); it != s.recipes.end() && it->second.expired()) s.recipes.erase(it);
}

/// Says in the session's log why a lock path was refused with error::schema_mismatch.
inline void log_schema_refusal(const session_impl& s, const std::string& path, std::string_view found)
{
    s.log->write(log_level::warning, "zklock: refused " + path + ": it holds the nodes of " + std::string(found));
}

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
