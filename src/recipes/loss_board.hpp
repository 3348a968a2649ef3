// What guard::lost() reads, from any thread: the recipe, on its session's executor, publishes here what
// its own lost(holder) says; a guard held by a plain thread (use_future) polls it there.
#pragma once

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <map>
#include <mutex>

namespace zklock::detail {

class loss_board {
public:
    using error_code = boost::system::error_code;

    // Written on the session's executor only (so it may read its own state there without the lock).

    /// Every holder of the recipe's node has lost it, for `why` (empty: none has).
    void set_all(error_code why)
    {
        if (why == all_) return;
        std::lock_guard<std::mutex> lock(mu_);
        all_ = why;
    }
    /// `holder` alone has lost, for `why` (its lease ran out, its own lease node went).
    void set(std::uint64_t holder, error_code why)
    {
        std::lock_guard<std::mutex> lock(mu_);
        one_[holder] = why;
    }
    /// `holder` has released: nobody asks for it any more.
    void forget(std::uint64_t holder)
    {
        if (one_.empty()) return;
        std::lock_guard<std::mutex> lock(mu_);
        one_.erase(holder);
    }

    /// From any thread: why `holder` lost the lock, empty while it holds.
    error_code read(std::uint64_t holder) const
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (auto it = one_.find(holder); it != one_.end()) return it->second;
        return all_;
    }

private:
    mutable std::mutex mu_;
    error_code all_;
    std::map<std::uint64_t, error_code> one_;
};

}  // namespace zklock::detail
