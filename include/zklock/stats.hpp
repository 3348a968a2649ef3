// What a session and its locks have done: counters, gauges and latency histograms, as one snapshot.
#pragma once

#include <zklock/session_state.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace zklock {

/**
 * A latency histogram with fixed buckets, so that snapshots of different sessions and processes add up
 * (Prometheus' `_bucket`, `_sum`, `_count`). Bounds run from 50 µs to 10 s; a value above the last falls
 * in the `+Inf` bucket.
 */
struct latency_histogram {
    /// The upper bounds of the buckets, in microseconds (a value equal to a bound falls in its bucket).
    static constexpr std::array<std::int64_t, 17> upper_bounds_us = {
        50, 100, 250, 500, 1'000, 2'500, 5'000, 10'000, 25'000, 50'000, 100'000, 250'000, 500'000,
        1'000'000, 2'500'000, 5'000'000, 10'000'000};

    /// Values per bucket, not cumulative; the last one counts the values above every bound.
    std::array<std::uint64_t, upper_bounds_us.size() + 1> buckets{};
    std::uint64_t count = 0;           ///< how many values were recorded (the sum of `buckets`)
    std::chrono::microseconds sum{0};  ///< the sum of the recorded values (negative ones counted as zero)

    /// Counts one value (a negative one counts as zero).
    void record(std::chrono::steady_clock::duration d) noexcept;
    /// Adds another histogram's values.
    void merge(const latency_histogram& other) noexcept;
    /// The upper bound of the bucket that holds the `q`-quantile (0 < q <= 1), as Prometheus'
    /// `histogram_quantile` without its interpolation: an upper estimate. Zero when empty; for the
    /// `+Inf` bucket, the greatest bound.
    std::chrono::microseconds quantile_bound(double q) const noexcept;
};

/**
 * The locks of one session that share a statistics label (mutex_options::stats_label, ...; unlabelled
 * locks share the label ""), or all of them. Every acquire is counted once, when it completes, under
 * exactly one outcome; a semaphore's acquire_many is one acquire however many permits it takes. The
 * internal lock a semaphore takes for its count is not counted.
 */
struct lock_stats {
    // Acquires, by outcome.
    std::uint64_t granted = 0;     ///< succeeded: local_grants + zookeeper_grants
    std::uint64_t timed_out = 0;   ///< error::timeout
    std::uint64_t cancelled = 0;   ///< operation_aborted
    std::uint64_t failed = 0;      ///< any other error: see `failures`
    std::map<std::string, std::uint64_t> failures;  ///< failed acquires by error_name()
    // How the granted ones were served.
    std::uint64_t local_grants = 0;      ///< handed over by another coroutine of this session: no round trip
    std::uint64_t zookeeper_grants = 0;  ///< through ZooKeeper: a node of this session came first
    /// Holds that lost the lock, by error_name() of the reason (session_expired, lock_node_deleted,
    /// ownership_uncertain, lease_expired, ...). Counted once per hold, for its first reason.
    std::map<std::string, std::uint64_t> losses;
    std::uint64_t leases_run_out = 0;          ///< holds the library ended because their hold-time limit ran out
    std::uint64_t revocations_received = 0;    ///< requests to let go that reached a held node of this session
    std::uint64_t schema_refusals = 0;         ///< acquires refused because the path holds another recipe's nodes

    // Gauges, as of the snapshot.
    std::uint64_t holders = 0;     ///< guards that hold
    std::uint64_t waiters = 0;     ///< acquires not yet completed
    std::uint64_t contenders = 0;  ///< paths on which this session has a node in ZooKeeper's queue (or holds)

    latency_histogram wait;  ///< from the acquire's start to its grant (granted acquires only)
    latency_histogram hold;  ///< from the grant to the release (or to the lease's end)

    /// Adds another set's counters, gauges and histograms.
    void merge(const lock_stats& other);
};

/// The requests of one kind ("create", "remove", "get_children", "multi", ...) a session sent.
/// Every request sent ends once: answered (`round_trip.count`, its errors in `errors`), or failed without
/// an answer when its connection or session ended first (`unanswered`, also in `errors` by the reason:
/// "connection_loss", "session_closed", ...). So `sent == round_trip.count + unanswered` once none is out.
struct request_stats {
    std::uint64_t sent = 0;                       ///< requests of this kind handed to the C client
    std::map<std::string, std::uint64_t> errors;  ///< failures (answered or not), by error_name()
    latency_histogram round_trip;                 ///< from the hand-off to the C client to the answer
    std::uint64_t unanswered = 0;                 ///< failed with no answer: the connection or session ended
};

/// Counters of one session and of its locks: a consistent snapshot, read on the session's executor
/// (`session::stats()`) or from anywhere (`session::async_stats`).
struct session_stats {
    std::uint64_t requests = 0;      ///< requests handed to ZooKeeper
    std::uint64_t watch_events = 0;  ///< node watches that fired (session events not counted)
    std::uint64_t renewals = 0;      ///< new sessions opened after an expiry (session_config::on_expiry)
    std::uint64_t connections = 0;   ///< connections made to a server (the first one, then each reconnect)
    std::uint64_t keepalives = 0;    ///< syncs sent to keep a holder's touch fresh (session_config::loss_grace)
    /// Requests to let go that this session wrote to holders' nodes (zklock/revoke.hpp), counted when the
    /// server took them; the holders count theirs in lock_stats::revocations_received.
    std::uint64_t revocations_requested = 0;
    session_state state = session_state::idle;  ///< the session's state when the snapshot was taken
    /// The requests handed to ZooKeeper by kind ("create", "get_data", ...): count, errors and round trips.
    std::map<std::string, request_stats> requests_by_kind;
    lock_stats locks;                          ///< every lock of the session
    std::map<std::string, lock_stats> by_label;  ///< the same, by stats label ("" for unlabelled locks)
};

}  // namespace zklock
