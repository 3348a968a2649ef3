// A type-erased completion handler whose move assignment works.
#pragma once

#include <boost/asio/any_completion_executor.hpp>
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
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
 */
template <class... Args>
class handler : public boost::asio::any_completion_handler<void(boost::system::error_code, Args...)> {
public:
    using base = boost::asio::any_completion_handler<void(boost::system::error_code, Args...)>;

    handler() = default;
    handler(base&& b) : base(std::move(b)) { track_work(); }
    template <class H>
        requires(!std::is_base_of_v<base, std::decay_t<H>>)
    handler(H&& h) : base(std::forward<H>(h))
    {
        track_work();
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

private:
    void track_work()
    {
        if (*this)
            work_ = boost::asio::prefer(boost::asio::get_associated_executor(static_cast<const base&>(*this)),
                                        boost::asio::execution::outstanding_work.tracked);
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
