// A lock object's reference to its session-side state, let go on the session's executor.
#pragma once

#include <memory>
#include <utility>

namespace zklock::detail {

/// A shared reference to state that lives on a session's executor. A lock object (mutex, shared_mutex,
/// semaphore) may be copied, assigned and destroyed on any thread; the reference it lets go is handed
/// to `drop_on_executor(std::shared_ptr<State>)` (found by argument-dependent lookup, declared beside
/// each State), so that the last one is never dropped off the executor. With it the lock objects need
/// no special members of their own. The initiations carry an executor_owned copy too, not a plain
/// shared_ptr: a deferred operation that is dropped unstarted, on any thread, drops it as well.
template <class State>
class executor_owned {
public:
    executor_owned() = default;
    explicit executor_owned(std::shared_ptr<State> state) noexcept : state_(std::move(state)) {}
    executor_owned(const executor_owned&) = default;
    executor_owned(executor_owned&&) noexcept = default;
    /// The reference held before goes through `other`'s destructor: onto the executor.
    executor_owned& operator=(executor_owned other) noexcept
    {
        std::swap(state_, other.state_);
        return *this;
    }
    ~executor_owned() { drop_on_executor(std::move(state_)); }

    const std::shared_ptr<State>& get() const noexcept { return state_; }
    /// Hands the reference on to a callee that drops it on the executor itself (the async entry points).
    std::shared_ptr<State> take() && noexcept { return std::exchange(state_, nullptr); }

private:
    std::shared_ptr<State> state_;
};

}  // namespace zklock::detail
