// The leader's sessions in the model ZooKeeper (issue 50): the timeout each session is given, and when the
// leader expires a session it has not heard from. Pure, in ms of the simulation's time, like data_tree.
//
// What it follows of ZooKeeper 3.8 (ZooKeeperServer, SessionTrackerImpl, ExpiryQueue):
// - the timeout a client asks for is clamped to [minSessionTimeout, maxSessionTimeout], by default 2 and
//   20 ticks (the test harness's servers: 400 ms and 4 s at a 200 ms tick);
// - sessions expire in buckets a tick apart: a session heard from at t (its creation, any request, any
//   ping) is due at the first multiple of the tick after t + timeout ((t + timeout) / tick + 1) * tick,
//   so it expires between timeout and timeout + tick after it was last heard from; the leader looks at
//   the buckets as they fall due, each one once, starting from the first multiple of the tick after its
//   own start;
// - an expired or closed session is gone: touching it changes nothing (its client learns so when it
//   reconnects: session expired).
// The caller ends the expired sessions in the data tree (one transaction each, in id order, as here).
// Not modelled: followers forwarding their clients' touches to the leader a tick later (the simulation
// delivers touches to the leader itself), session moves, the local sessions of 3.5+ (off by default).
#pragma once

#include "data_tree.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace zklock::testing::simulation {

struct session_limits {
    std::int64_t tick_ms = 2'000;                ///< tickTime
    std::optional<std::int64_t> min_timeout_ms;  ///< minSessionTimeout: 2 ticks when unset
    std::optional<std::int64_t> max_timeout_ms;  ///< maxSessionTimeout: 20 ticks when unset
};

class session_table {
public:
    /// The leader's tracker, started at `now_ms` (its first bucket is the next multiple of the tick).
    explicit session_table(session_limits limits = {}, std::int64_t now_ms = 0);

    struct opened {
        session_id id = 0;
        std::int64_t timeout_ms = 0;  ///< the negotiated timeout
    };
    /// A new session asking for `requested_ms`, heard from at `now_ms`. Ids count from 1.
    opened open(std::int64_t now_ms, std::int64_t requested_ms);
    /// The timeout a request for `requested_ms` is given.
    std::int64_t negotiate(std::int64_t requested_ms) const noexcept;
    /// `id` was heard from at `now_ms`: false if it is not alive (expired, closed, unknown).
    bool touch(session_id id, std::int64_t now_ms);
    /// The client closed `id`; false if it was not alive.
    bool close(session_id id);
    /// The sessions of every bucket due by `now_ms` (in bucket order, each bucket in id order), removed.
    std::vector<session_id> expire_due(std::int64_t now_ms);
    /// When the leader next looks at a bucket (a simulation wakes then).
    std::int64_t next_check_ms() const noexcept { return next_bucket_; }
    /// When `id` falls due, if it is alive.
    std::optional<std::int64_t> expires_at(session_id id) const;
    bool alive(session_id id) const { return live_.count(id) != 0; }
    /// How many sessions are alive.
    std::size_t live_count() const noexcept { return live_.size(); }

private:
    struct live_session {
        std::int64_t timeout_ms;  // negotiated
        std::int64_t due_ms;      // its bucket
    };
    std::int64_t bucket_after(std::int64_t t) const noexcept { return (t / limits_.tick_ms + 1) * limits_.tick_ms; }
    void leave_bucket(session_id id, std::int64_t due);

    session_limits limits_;
    std::int64_t next_bucket_;
    session_id next_id_ = 1;
    std::map<session_id, live_session> live_;
    std::map<std::int64_t, std::set<session_id>> buckets_;  // bucket -> sessions due then
};

}  // namespace zklock::testing::simulation
