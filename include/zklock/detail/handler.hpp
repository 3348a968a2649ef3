// A type-erased completion handler whose move assignment works.
#pragma once

#include <boost/asio/any_completion_executor.hpp>
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/system/error_code.hpp>

#include <utility>

namespace zklock::detail {

/**
 * `asio::any_completion_handler<void(error_code, Args...)>`, except that moving into an existing handler
 * works: Boost 1.81's move assignment constructs from the lvalue `other`, which wraps the handler in
 * itself until the stack overflows (fixed in Boost 1.82). Containers move-assign their elements, so every
 * stored handler is one of these.
 *
 * It also keeps work outstanding on the handler's associated executor until it is destroyed (after it
 * ran, on that executor), as an Asio operation does from initiation to completion: a caller's
 * io_context whose only work is a pending zklock operation must not run out of work and return.
 *
 * That tracked executor is kept unwrapped where it can be: an `any_io_executor` around an io_context's
 * own executor (a coroutine's) is stored as that executor, which the erased executor holds inline. Each
 * conversion of one `any_executor` into another allocates, and a handler is made for every wait.
 */
template <class... Args>
class handler : public boost::asio::any_completion_handler<void(boost::system::error_code, Args...)> {
public:
    using base = boost::asio::any_completion_handler<void(boost::system::error_code, Args...)>;

    handler() = default;
    handler(base&& b) : base(std::move(b))
    {
        if (*this) work_ = tracked(boost::asio::get_associated_executor(static_cast<const base&>(*this)));
    }
    template <class H>
        requires(!std::is_base_of_v<base, std::decay_t<H>>)
    handler(H&& h) : handler(std::forward<H>(h), tracked(boost::asio::get_associated_executor(h)))
    {
    }
    handler(handler&& other) noexcept : base(static_cast<base&&>(other)), work_(std::move(other.work_)) {}
    handler& operator=(handler&& other) noexcept
    {
        base moved(static_cast<base&&>(other));
        this->swap(moved);
        work_ = std::move(other.work_);
        return *this;
    }
    handler(const handler&) = delete;
    handler& operator=(const handler&) = delete;
    ~handler() = default;

    /// The handler's associated executor, with work outstanding on it; empty for an empty handler.
    const boost::asio::any_completion_executor& executor() const noexcept { return work_; }

    /// Whether the handler's executor is an io_context's own executor (no strand) run by this thread:
    /// a dispatch to it would invoke the handler inline.
    bool runs_inline_here() const noexcept
    {
        const auto* io = work_.template target<tracked_io_executor>();
        return io && io->running_in_this_thread();
    }

private:
    template <class H>
    handler(H&& h, boost::asio::any_completion_executor work) : base(std::forward<H>(h)), work_(std::move(work))
    {
    }
    using tracked_io_executor = decltype(boost::asio::prefer(std::declval<boost::asio::io_context::executor_type>(),
                                                             boost::asio::execution::outstanding_work.tracked));
    template <class Executor>
    static boost::asio::any_completion_executor tracked(const Executor& ex)
    {
        if constexpr (std::is_same_v<Executor, boost::asio::any_io_executor>)
            if (const auto* io = ex.template target<boost::asio::io_context::executor_type>()) return tracked(*io);
        return boost::asio::any_completion_executor(
            boost::asio::prefer(ex, boost::asio::execution::outstanding_work.tracked));
    }

    boost::asio::any_completion_executor work_;
};

}  // namespace zklock::detail

// The erased handler keeps the executor of the handler it wraps; say so for the derived type too.
template <class... Args, class Candidate>
struct boost::asio::associated_executor<zklock::detail::handler<Args...>, Candidate> {
    using base_type = typename zklock::detail::handler<Args...>::base;
    using type = typename associated_executor<base_type, Candidate>::type;
    static type get(const zklock::detail::handler<Args...>& h, const Candidate& c = Candidate()) noexcept
    {
        return associated_executor<base_type, Candidate>::get(h, c);
    }
};
