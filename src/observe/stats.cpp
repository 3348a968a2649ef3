// The arithmetic of zklock/stats.hpp: pure (part of the core target: the durations come in as arguments).
#include <zklock/stats.hpp>

#include <algorithm>
#include <cmath>

namespace zklock {

void latency_histogram::record(std::chrono::steady_clock::duration d) noexcept
{
    const auto us = std::max<std::int64_t>(0, std::chrono::duration_cast<std::chrono::microseconds>(d).count());
    const auto at = std::lower_bound(upper_bounds_us.begin(), upper_bounds_us.end(), us) - upper_bounds_us.begin();
    ++buckets[static_cast<std::size_t>(at)];
    ++count;
    sum += std::chrono::microseconds(us);
}

void latency_histogram::merge(const latency_histogram& other) noexcept
{
    for (std::size_t i = 0; i < buckets.size(); ++i) buckets[i] += other.buckets[i];
    count += other.count;
    sum += other.sum;
}

std::chrono::microseconds latency_histogram::quantile_bound(double q) const noexcept
{
    if (count == 0) return std::chrono::microseconds(0);
    // The rank of the q-quantile among `count` values, 1-based: the first bucket whose cumulative count
    // reaches it holds it.
    const auto rank = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count))));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < upper_bounds_us.size(); ++i) {
        seen += buckets[i];
        if (seen >= rank) return std::chrono::microseconds(upper_bounds_us[i]);
    }
    return std::chrono::microseconds(upper_bounds_us.back());
}

namespace {
void add_counts(std::map<std::string, std::uint64_t>& into, const std::map<std::string, std::uint64_t>& from)
{
    for (const auto& [name, n] : from) into[name] += n;
}
}  // namespace

void lock_stats::merge(const lock_stats& o)
{
    granted += o.granted;
    timed_out += o.timed_out;
    cancelled += o.cancelled;
    failed += o.failed;
    add_counts(failures, o.failures);
    local_grants += o.local_grants;
    zookeeper_grants += o.zookeeper_grants;
    add_counts(losses, o.losses);
    leases_run_out += o.leases_run_out;
    revocations_received += o.revocations_received;
    schema_refusals += o.schema_refusals;
    holders += o.holders;
    waiters += o.waiters;
    contenders += o.contenders;
    wait.merge(o.wait);
    hold.merge(o.hold);
}

}  // namespace zklock
