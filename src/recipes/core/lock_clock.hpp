// The clocks of one lock's shell, as one small machine of `now`: the waiters' deadlines (and a one look's
// own bound), the holders' leases, the loss warning (core/loss_clock.hpp) and the own-watch delay. The
// shell (recipes/lock_base.hpp) keeps one timer set to next(), reads the clock once when it rings, and
// performs what take_due() returns. No Asio, and no clock is read here: the table tests move a mock clock.
#pragma once

#include "loss_clock.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

namespace zklock::detail {

/// What rings.
struct clock_alarm {
    /// Alarms due at one instant come in this order: a waiter whose deadline is now times out before a
    /// lease ending now could pass the lock to it; the loss warning after both.
    enum class type : std::uint8_t { deadline, lease, loss, own_watch };
    type what{};
    std::uint64_t id = 0;  ///< the waiter (deadline) or the holder (lease)
    friend bool operator==(const clock_alarm&, const clock_alarm&) = default;
};

class lock_clock {
public:
    /// Starts waiter `id`'s clock. A deadline not after `now` is a one look (true): it may wait
    /// `one_look_limit` for ZooKeeper's answers, no more. No deadline: no clock.
    bool start_waiter(std::uint64_t id, std::optional<clock_time> deadline, clock_time now,
                      clock_duration one_look_limit)
    {
        if (!deadline) return false;
        const bool one_look = *deadline <= now;
        set({clock_alarm::type::deadline, id}, one_look ? now + one_look_limit : *deadline);
        return one_look;
    }
    void stop_waiter(std::uint64_t id) { erase({clock_alarm::type::deadline, id}); }

    /// `holder`'s lease ends at `end` (a second call moves it: an extension).
    void start_lease(std::uint64_t holder, clock_time end) { set({clock_alarm::type::lease, holder}, end); }
    void stop_lease(std::uint64_t holder) { erase({clock_alarm::type::lease, holder}); }
    /// Whether any holder has a lease.
    bool has_leases() const noexcept
    {
        auto it = at_.lower_bound({clock_alarm::type::lease, 0});
        return it != at_.end() && it->first.first == clock_alarm::type::lease;
    }
    std::optional<clock_time> lease_end(std::uint64_t holder) const
    {
        auto it = at_.find({clock_alarm::type::lease, holder});
        return it == at_.end() ? std::nullopt : std::optional<clock_time>(it->second);
    }

    /// While armed (someone holds), the loss warning is due at the touch's warning time, which every
    /// newer answer moves; it rings once, then is disarmed.
    void arm_loss() noexcept { loss_armed_ = true; }
    void disarm_loss() noexcept { loss_armed_ = false; }
    bool loss_armed() const noexcept { return loss_armed_; }

    /// The current node (a semaphore: holder `id`'s lease node) is to be watched at `due` if still held
    /// (local_queue::own_watch_delay_ms after it became held); a new node, or the lease's release, stops it.
    void start_own_watch(clock_time due, std::uint64_t id = 0) { set({clock_alarm::type::own_watch, id}, due); }
    void stop_own_watch(std::uint64_t id = 0) { erase({clock_alarm::type::own_watch, id}); }

    /// When the shell's timer should ring next; none: nothing to wait for (the timer stops).
    std::optional<clock_time> next(const touch& t) const noexcept
    {
        std::optional<clock_time> first;
        if (!queue_.empty()) first = std::get<0>(*queue_.begin());
        if (loss_armed_ && (!first || t.warning_at() < *first)) first = t.warning_at();
        return first;
    }

    /// Takes the alarms due at `now`, oldest first (see clock_alarm::type for one instant).
    std::vector<clock_alarm> take_due(clock_time now, const touch& t)
    {
        std::vector<clock_alarm> out;
        const entry loss{t.warning_at(), clock_alarm::type::loss, 0};
        bool loss_due = loss_armed_ && t.ran_out(now);
        if (loss_due) loss_armed_ = false;
        auto it = queue_.begin();
        for (; it != queue_.end() && std::get<0>(*it) <= now; ++it) {
            if (loss_due && loss < *it) out.push_back({clock_alarm::type::loss}), loss_due = false;
            out.push_back({std::get<1>(*it), std::get<2>(*it)});
            at_.erase({std::get<1>(*it), std::get<2>(*it)});
        }
        queue_.erase(queue_.begin(), it);
        if (loss_due) out.push_back({clock_alarm::type::loss});
        return out;
    }

private:
    using key = std::pair<clock_alarm::type, std::uint64_t>;
    using entry = std::tuple<clock_time, clock_alarm::type, std::uint64_t>;
    void set(key k, clock_time when)
    {
        erase(k);
        at_.emplace(k, when);
        queue_.emplace(when, k.first, k.second);
    }
    void erase(key k)
    {
        auto it = at_.find(k);
        if (it == at_.end()) return;
        queue_.erase({it->second, k.first, k.second});
        at_.erase(it);
    }

    std::map<key, clock_time> at_;  // each alarm's time
    std::set<entry> queue_;         // ... in the order they ring (a waiter queue may hold 100,000)
    bool loss_armed_ = false;
};

/// A steady-clock time `end` on the wall clock, in ms since the epoch (for a lease's end in a node's
/// data), given both clocks read at one moment.
inline std::int64_t wall_clock_ms(clock_time end, clock_time now, std::chrono::system_clock::time_point wall_now)
{
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - now);
    return std::chrono::duration_cast<std::chrono::milliseconds>((wall_now + left).time_since_epoch()).count();
}

}  // namespace zklock::detail
