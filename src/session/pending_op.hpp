// The completion of an operation made of steps on the session's executor (a guarded write, a revocation
// request, the participants listing), with the caller's cancellation slot connected to it.
#pragma once

#include "core/effects.hpp"
#include "session_impl.hpp"

#include <atomic>
#include <functional>

namespace zklock::detail {

/**
 * Completed once: by the operation's result, or earlier by a cancellation that its stage accepts
 * (core/effects.hpp). Made on the caller's thread, where the slot is bound; everything else runs on the
 * session's executor. The slot's handler holds only the requested types (an atomic, readable at the send
 * step before the handler's own hop arrives) and a weak reference, so this state, its handler and the
 * session are never released on the signal's thread.
 */
template <class... Args>
class pending_op {
public:
    pending_op(std::shared_ptr<session_impl> s, handler<Args...> h, op_nature nature)
        : s_(std::move(s)), h_(std::move(h)), nature_(nature)
    {
    }

    /// Makes one for `h` and connects `h`'s cancellation slot to it (call on the caller's thread).
    static std::shared_ptr<pending_op> bind(std::shared_ptr<session_impl> s, handler<Args...> h, op_nature nature)
    {
        auto slot = asio::get_associated_cancellation_slot(h);
        auto op = std::make_shared<pending_op>(std::move(s), std::move(h), nature);
        if (slot.is_connected())
            slot.assign([w = std::weak_ptr<pending_op>(op), requested = op->requested_, home = op->s_->ex](
                            asio::cancellation_type t) {
                requested->fetch_or(static_cast<unsigned>(t), std::memory_order_relaxed);
                asio::post(home, [w] {
                    if (auto self = w.lock()) self->on_signal();
                });
            });
        return op;
    }

    /// At the step that would send the request: false if the operation is over (it was answered by a
    /// cancellation, now or before). Then marks it sent: from here on only what core/effects.hpp allows
    /// after sending can end it early.
    bool send_now()
    {
        on_signal();
        if (!h_) return false;
        sent_ = true;
        return true;
    }

    /// The result (ignored if a cancellation answered first).
    void complete(error_code ec, Args... args)
    {
        if (h_) s_->post_completion(std::move(h_), ec, std::move(args)...);
    }

    const std::shared_ptr<session_impl>& session() const noexcept { return s_; }
    /// Runs once, on the session's executor, if a cancellation answers the operation: the steps still
    /// under way can stop (a wait on a watch would keep them alive until it fires).
    void on_abort(std::function<void()> f) { on_abort_ = std::move(f); }

private:
    void on_signal()
    {
        const auto type = requested_->load(std::memory_order_relaxed);
        if (h_ && on_cancellation(type, nature_, sent_) == cancel_outcome::abort) {
            complete(asio::error::operation_aborted, Args{}...);
            if (auto f = std::exchange(on_abort_, {})) f();
        }
    }

    std::shared_ptr<session_impl> s_;
    handler<Args...> h_;
    op_nature nature_;
    bool sent_ = false;
    std::function<void()> on_abort_;
    std::shared_ptr<std::atomic<unsigned>> requested_ = std::make_shared<std::atomic<unsigned>>(0u);
};

}  // namespace zklock::detail
