// Session statistics in Prometheus' text exposition format, for a /metrics endpoint.
#pragma once

#include <zklock/stats.hpp>

#include <iosfwd>
#include <map>
#include <string>
#include <vector>

namespace zklock {

/// One session's snapshot, with labels that tell it from the other sessions of the same output
/// (e.g. {{"session", "orders"}}).
struct labelled_stats {
    std::map<std::string, std::string> labels;  ///< label names and values added to every series of this session
    session_stats stats;                         ///< the session's snapshot (session::stats() or session::async_stats)
};

/**
 * Writes `stats` in Prometheus' text exposition format (version 0.0.4): each metric family once, with
 * its `# HELP` and `# TYPE`, counters as `_total`, latencies as histograms in seconds (`_bucket` with `le`,
 * `_sum`, `_count`), label values escaped. Lock figures carry a `lock` label: the stats label of the
 * locks (mutex_options::stats_label, ...), empty for unlabelled locks, so that a sum over `lock` is the
 * session's total. The families and their labels are listed in docs/observing.md.
 */
void write_prometheus(std::ostream& os, const session_stats& stats);
/// The same for several sessions in one output: each series also carries its session's `labels`.
void write_prometheus(std::ostream& os, const std::vector<labelled_stats>& sessions);

}  // namespace zklock
