// A hold-time limit for an acquire: `co_await m.acquire(5s, zklock::lease(30s))`.
#pragma once

#include <chrono>
#include <cmath>

namespace zklock {

/**
 * How long a lock may be held at most (Redisson's `tryLock(wait, lease)`, Redis's `SET ... PX`): when it runs
 * out, zklock releases the lock itself, whatever the holder's code is doing, and tells the holder through
 * its loss signal (`guard::async_wait_lost` completes with `error::lease_expired`; `guard::lost()` says so;
 * guarded writes are refused). The next contender then gets the lock. A holder may move the end with
 * `guard::async_extend_lease`.
 *
 * The clock runs on the session's executor from the moment the acquire is granted, so the lease is
 * enforced as long as that executor runs: a holder stuck in a `co_await`, or busy on another thread, is
 * cut off; a handler that blocks the session's own thread blocks the enforcement too.
 *
 * The deadline is also written into the lock node's data (`lease-until-ms=`, the holder's wall clock), where
 * `async_participants` and `zklock ls` show it. Another machine may read it only as an estimate: its clock
 * differs from the holder's by their skew, and the node is there until the holder's session deletes it.
 * The lock is free when the node is gone, not when that time has passed on the reader's clock.
 */
struct lease {
    /// Zero, negative or NaN: refused by the acquire with `error::invalid_lease`. Longer than the clock
    /// can count: as good as none (it saturates).
    template <class Rep, class Period>
    explicit lease(std::chrono::duration<Rep, Period> len) : length(saturated(len))
    {
    }

    /// The limit as given, rounded up to the steady clock's ticks: zero when it was not positive or NaN (the
    /// acquire refuses it), at most a quarter of the clock's range.
    std::chrono::steady_clock::duration length;

private:
    template <class Rep, class Period>
    static std::chrono::steady_clock::duration saturated(std::chrono::duration<Rep, Period> len)
    {
        using out = std::chrono::steady_clock::duration;
        if (!(len > decltype(len)::zero())) return out::zero();
        // Compared as floating point, which cannot overflow; a quarter of the range keeps now + length valid.
        if (std::chrono::duration<long double>(len) >= std::chrono::duration<long double>(out::max()) / 4)
            return out::max() / 4;
        return std::chrono::ceil<out>(len);
    }
};

}  // namespace zklock
