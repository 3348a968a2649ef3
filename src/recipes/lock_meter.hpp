// Counts what one recipe's per-session state does into the session's statistics (zklock/stats.hpp), and
// tells the session's observer (session_config::observer): the outcome of each acquire, the grants by
// way, the holds' lengths, the losses. Touched only on the session's executor; a recipe calls it at the
// one place where each of these happens.
#pragma once

#include "../session/session_impl.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace zklock::detail {

class lock_meter {
public:
    using time_point = std::chrono::steady_clock::time_point;

    /// Counts nothing (a semaphore's internal lock: its acquires are the semaphore's).
    lock_meter() = default;
    /// Counts `path`'s figures under `label` in `s`'s statistics, which outlive this meter (the recipe's
    /// state holds the session). With session_config::lock_statistics off it counts nothing, unless the
    /// observer is set: then into a set of its own, which times the holds the observer hears of.
    lock_meter(session_impl& s, std::string path, std::string label)
        : s_(&s), path_(std::move(path)), label_(std::move(label))
    {
        if (s.cfg.lock_statistics) {
            into_ = &s.stats.by_label[label_];
        } else if (s.cfg.observer) {
            own_ = std::make_unique<lock_stats>();
            into_ = own_.get();
        }
    }

    /// Whether this meter counts into the session's statistics.
    bool counting() const noexcept { return into_ != nullptr && !own_; }
    const std::string& label() const noexcept { return label_; }

    /// An acquire that started at `started` completed at `at` with `ec`; a granted one was served by a
    /// local hand-off or through ZooKeeper, with `token` (its first guard's).
    void acquire_done(error_code ec, time_point started, time_point at, bool local_grant, fencing_token token = {})
    {
        if (!into_) return;
        if (!ec) {
            ++into_->granted;
            ++(local_grant ? into_->local_grants : into_->zookeeper_grants);
            into_->wait.record(at - started);
            if (observed()) {
                auto e = event(lock_event_type::granted);
                e.waited = at - started, e.token = token, e.local = local_grant;
                tell(std::move(e));
            }
        } else if (ec == zklock::error::timeout) {
            ++into_->timed_out;
        } else if (ec == boost::asio::error::operation_aborted) {
            ++into_->cancelled;
        } else {
            ++into_->failed;
            ++into_->failures[error_name(ec)];
            if (ec == zklock::error::schema_mismatch) ++into_->schema_refusals;
        }
    }
    /// `holder` holds from `at` (one guard).
    void hold_started(std::uint64_t holder, time_point at)
    {
        if (into_) held_since_.emplace_back(holder, at);
    }
    /// `holder`'s hold ended at `at`: released, or (`lease_ran_out`) ended by its lease. A holder not
    /// counted is ignored.
    void hold_ended(std::uint64_t holder, time_point at, bool lease_ran_out = false)
    {
        if (!into_) return;
        // From the newest: a mutex has one holder at a time, readers a few.
        auto it = std::find_if(held_since_.rbegin(), held_since_.rend(), [&](const auto& h) { return h.first == holder; });
        if (it == held_since_.rend()) return;
        const auto held = at - it->second;
        *it = held_since_.back();
        held_since_.pop_back();
        into_->hold.record(held);
        if (lease_ran_out) ++into_->leases_run_out;
        if (observed()) {
            auto e = event(lease_ran_out ? lock_event_type::lease_expired : lock_event_type::released);
            e.held = held;
            tell(std::move(e));
        }
    }
    /// `holds` holds lost the lock for `why` (each counted once, by the recipe, at its first reason).
    void lost(error_code why, std::uint64_t holds = 1)
    {
        if (!into_ || holds == 0) return;
        into_->losses[error_name(why)] += holds;
        for (std::uint64_t i = 0; i < holds && observed(); ++i) {
            auto e = event(lock_event_type::lost);
            e.reason = why;
            tell(std::move(e));
        }
    }
    void revocation_received()
    {
        if (into_) ++into_->revocations_received;
    }

private:
    bool observed() const noexcept { return static_cast<bool>(s_->cfg.observer); }
    lock_event event(lock_event_type type) const
    {
        lock_event e;
        e.type = type, e.path = path_, e.stats_label = label_;
        return e;
    }
    /// Posted: the observer may start and release locks, which must not run inside the recipe's step.
    void tell(lock_event e) const
    {
        boost::asio::post(s_->ex, [observer = s_->cfg.observer, e = std::move(e)] { observer(e); });
    }

    session_impl* s_ = nullptr;
    lock_stats* into_ = nullptr;
    std::unique_ptr<lock_stats> own_;  ///< the set counted into when the session's statistics are off
    std::string path_, label_;
    /// The holds being timed. Not a map: a grant and a release then cost no allocation (a map's node did,
    /// a few percent of a local hand-off). A mutex's one hold is kept inline, in the lock's own object:
    /// with many paths a separate block is one more cold cache line a hand-off.
    boost::container::small_vector<std::pair<std::uint64_t, time_point>, 1> held_since_;
};

}  // namespace zklock::detail
