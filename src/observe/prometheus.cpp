// zklock/prometheus.hpp: the text exposition format, family by family (each family's samples together,
// after its HELP and TYPE, as the format requires). Pure: part of the core target.
#include <zklock/prometheus.hpp>

#include <ostream>
#include <string_view>
#include <utility>

namespace zklock {
namespace {

using label_list = std::vector<std::pair<std::string, std::string>>;

void write_escaped(std::ostream& os, std::string_view v, bool quote_too)
{
    for (const char c : v) {
        if (c == '\\') os << "\\\\";
        else if (c == '\n') os << "\\n";
        else if (quote_too && c == '"') os << "\\\"";
        else os << c;
    }
}

void write_labels(std::ostream& os, const label_list& labels)
{
    if (labels.empty()) return;
    os << '{';
    bool first = true;
    for (const auto& [name, value] : labels) {
        if (!std::exchange(first, false)) os << ',';
        os << name << "=\"";
        write_escaped(os, value, true);
        os << '"';
    }
    os << '}';
}

void header(std::ostream& os, std::string_view name, std::string_view type, std::string_view help)
{
    os << "# HELP " << name << ' ';
    write_escaped(os, help, false);
    os << "\n# TYPE " << name << ' ' << type << '\n';
}

void sample(std::ostream& os, std::string_view name, const label_list& labels, std::uint64_t value)
{
    os << name;
    write_labels(os, labels);
    os << ' ' << value << '\n';
}

/// Microseconds as seconds, exactly, in decimal ("0.00005", "2.5", "10").
std::string seconds(std::int64_t us)
{
    std::string s = std::to_string(us / 1'000'000);
    if (auto frac = us % 1'000'000; frac != 0) {
        std::string f = std::to_string(frac);
        f.insert(0, 6 - f.size(), '0');
        while (f.back() == '0') f.pop_back();
        s += '.' + f;
    }
    return s;
}

void histogram_samples(std::ostream& os, std::string_view name, label_list labels, const latency_histogram& h)
{
    const std::string bucket = std::string(name) + "_bucket";
    std::uint64_t cumulative = 0;
    labels.emplace_back("le", "");
    for (std::size_t i = 0; i <= latency_histogram::upper_bounds_us.size(); ++i) {
        cumulative += h.buckets[i];
        labels.back().second = i < latency_histogram::upper_bounds_us.size()
                                   ? seconds(latency_histogram::upper_bounds_us[i])
                                   : std::string("+Inf");
        sample(os, bucket, labels, cumulative);
    }
    labels.pop_back();
    os << name << "_sum";
    write_labels(os, labels);
    os << ' ' << seconds(h.sum.count()) << '\n';
    sample(os, std::string(name) + "_count", labels, h.count);
}

label_list with(const std::map<std::string, std::string>& base, label_list more)
{
    label_list l(base.begin(), base.end());
    l.insert(l.end(), more.begin(), more.end());
    return l;
}

/// A family over the sessions' locks: `each(out, session labels + lock label, stats)`, for every stats
/// label of each session. The unlabelled locks ("") always have their series, zero if there were none.
template <class Each>
void lock_family(std::ostream& os, const std::vector<labelled_stats>& all, std::string_view name,
                 std::string_view type, std::string_view help, Each each)
{
    static const lock_stats none{};
    header(os, name, type, help);
    for (const auto& one : all) {
        if (!one.stats.by_label.contains("")) each(with(one.labels, {{"lock", ""}}), none);
        for (const auto& [label, st] : one.stats.by_label) each(with(one.labels, {{"lock", label}}), st);
    }
}

void write_session_families(std::ostream& os, const std::vector<labelled_stats>& all)
{
    auto plain_counter = [&](std::string_view name, std::string_view help, std::uint64_t session_stats::*field) {
        header(os, name, "counter", help);
        for (const auto& one : all) sample(os, name, with(one.labels, {}), one.stats.*field);
    };
    plain_counter("zklock_watch_events_total", "Node watches that fired.", &session_stats::watch_events);
    plain_counter("zklock_connections_total", "Connections made to a ZooKeeper server (the first, then each reconnect).",
                  &session_stats::connections);
    plain_counter("zklock_renewals_total", "New sessions opened after an expiry.", &session_stats::renewals);
    plain_counter("zklock_keepalives_total", "Syncs sent to keep a lock holder's touch fresh.",
                  &session_stats::keepalives);
    plain_counter("zklock_revocations_requested_total", "Requests to let go that this session sent to holders.",
                  &session_stats::revocations_requested);

    header(os, "zklock_session_state", "gauge", "1 for the session's current state, 0 for the others.");
    for (const auto& one : all)
        for (auto st : {session_state::idle, session_state::connecting, session_state::connected,
                        session_state::expired, session_state::auth_failed, session_state::closed})
            sample(os, "zklock_session_state", with(one.labels, {{"state", std::string(to_string(st))}}),
                   one.stats.state == st ? 1 : 0);

    header(os, "zklock_requests_total", "counter", "Requests sent to ZooKeeper, by kind.");
    for (const auto& one : all)
        for (const auto& [kind, r] : one.stats.requests_by_kind)
            sample(os, "zklock_requests_total", with(one.labels, {{"kind", kind}}), r.sent);
    header(os, "zklock_request_errors_total", "counter", "Requests ZooKeeper answered with an error, by kind and error.");
    for (const auto& one : all)
        for (const auto& [kind, r] : one.stats.requests_by_kind)
            for (const auto& [error, n] : r.errors)
                sample(os, "zklock_request_errors_total", with(one.labels, {{"kind", kind}, {"error", error}}), n);
    header(os, "zklock_request_duration_seconds", "histogram", "Round trip of a request to ZooKeeper, by kind.");
    for (const auto& one : all)
        for (const auto& [kind, r] : one.stats.requests_by_kind)
            histogram_samples(os, "zklock_request_duration_seconds", with(one.labels, {{"kind", kind}}), r.round_trip);
}

void write_lock_families(std::ostream& os, const std::vector<labelled_stats>& all)
{
    lock_family(os, all, "zklock_acquires_total", "counter", "Acquires completed, by outcome.",
                [&](label_list l, const lock_stats& s) {
                    l.emplace_back("outcome", "");
                    for (auto [outcome, n] : {std::pair<const char*, std::uint64_t>{"granted", s.granted},
                                              {"timed_out", s.timed_out}, {"cancelled", s.cancelled},
                                              {"failed", s.failed}}) {
                        l.back().second = outcome;
                        sample(os, "zklock_acquires_total", l, n);
                    }
                });
    // A counter per key of one of lock_stats' maps (failures by error, losses by reason).
    auto keyed_counter = [&](std::string_view name, std::string_view help, const char* key,
                             std::map<std::string, std::uint64_t> lock_stats::*field) {
        lock_family(os, all, name, "counter", help, [&](label_list l, const lock_stats& s) {
            l.emplace_back(key, "");
            for (const auto& [value, n] : s.*field) {
                l.back().second = value;
                sample(os, name, l, n);
            }
        });
    };
    keyed_counter("zklock_acquire_failures_total", "Failed acquires, by error.", "error", &lock_stats::failures);
    lock_family(os, all, "zklock_grants_total", "counter",
                "Granted acquires, by how: a local hand-off between coroutines, or through ZooKeeper.",
                [&](label_list l, const lock_stats& s) {
                    l.emplace_back("via", "local");
                    sample(os, "zklock_grants_total", l, s.local_grants);
                    l.back().second = "zookeeper";
                    sample(os, "zklock_grants_total", l, s.zookeeper_grants);
                });
    keyed_counter("zklock_losses_total", "Holds that lost the lock, by reason.", "reason", &lock_stats::losses);
    auto lock_counter = [&](std::string_view name, std::string_view type, std::string_view help,
                            std::uint64_t lock_stats::*field) {
        lock_family(os, all, name, type, help, [&](const label_list& l, const lock_stats& s) { sample(os, name, l, s.*field); });
    };
    lock_counter("zklock_leases_run_out_total", "counter", "Holds ended by the library because their lease ran out.",
                 &lock_stats::leases_run_out);
    lock_counter("zklock_revocations_received_total", "counter", "Requests to let go that reached a held node.",
                 &lock_stats::revocations_received);
    lock_counter("zklock_schema_refusals_total", "counter",
                 "Acquires refused because the path holds another kind of lock's nodes.", &lock_stats::schema_refusals);
    lock_counter("zklock_holders", "gauge", "Guards that hold a lock.", &lock_stats::holders);
    lock_counter("zklock_waiters", "gauge", "Acquires waiting.", &lock_stats::waiters);
    lock_counter("zklock_contenders", "gauge", "Paths on which the session has a node in ZooKeeper's queue.",
                 &lock_stats::contenders);
    lock_family(os, all, "zklock_wait_seconds", "histogram", "From an acquire's start to its grant.",
                [&](const label_list& l, const lock_stats& s) { histogram_samples(os, "zklock_wait_seconds", l, s.wait); });
    lock_family(os, all, "zklock_hold_seconds", "histogram", "From a grant to its release, or to its lease's end.",
                [&](const label_list& l, const lock_stats& s) { histogram_samples(os, "zklock_hold_seconds", l, s.hold); });
}

}  // namespace

void write_prometheus(std::ostream& os, const std::vector<labelled_stats>& sessions)
{
    write_session_families(os, sessions);
    write_lock_families(os, sessions);
}

void write_prometheus(std::ostream& os, const session_stats& stats)
{
    write_prometheus(os, std::vector<labelled_stats>{{{}, stats}});
}

}  // namespace zklock
