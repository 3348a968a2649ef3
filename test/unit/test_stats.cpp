// The arithmetic of the statistics (zklock/stats.hpp), the error names, and the Prometheus text format's
// details (escaping, cumulative buckets, seconds), without a server. (promtool checks the whole output
// in stats_tests.)
#include <zklock/error.hpp>
#include <zklock/prometheus.hpp>
#include <zklock/stats.hpp>

#include <boost/test/unit_test.hpp>

#include <sstream>

namespace unit_stats {  // a namespace of its own: the unit tests compile as one translation unit

using namespace std::chrono_literals;
using zklock::latency_histogram;

BOOST_AUTO_TEST_SUITE(stats_arithmetic)

BOOST_AUTO_TEST_CASE(a_value_falls_in_the_first_bucket_whose_bound_it_does_not_exceed)
{
    struct row {
        std::chrono::steady_clock::duration value;
        std::size_t bucket;
    };
    for (const auto& r : {row{0us, 0}, row{-5us, 0}, row{50us, 0}, row{51us, 1}, row{100us, 1}, row{999us, 4},
                          row{1ms, 4}, row{1001us, 5}, row{10s, 16}, row{10s + 1us, 17}, row{1h, 17}}) {
        latency_histogram h;
        h.record(r.value);
        BOOST_TEST_CONTEXT("value " << std::chrono::duration_cast<std::chrono::microseconds>(r.value).count() << " us")
        {
            BOOST_TEST(h.count == 1u);
            BOOST_TEST(h.buckets[r.bucket] == 1u);
            std::uint64_t total = 0;
            for (auto b : h.buckets) total += b;
            BOOST_TEST(total == 1u);
        }
    }
}

BOOST_AUTO_TEST_CASE(the_sum_counts_microseconds_and_merge_adds_everything)
{
    latency_histogram a, b;
    a.record(1500us);
    a.record(-3ms);  // counted as zero
    b.record(2s);
    a.merge(b);
    BOOST_TEST(a.count == 3u);
    BOOST_TEST(a.sum.count() == 2'001'500);
    BOOST_TEST(a.buckets[0] == 1u);   // the negative one
    BOOST_TEST(a.buckets[5] == 1u);   // 1.5 ms: up to 2.5 ms
    BOOST_TEST(a.buckets[14] == 1u);  // 2 s: up to 2.5 s
}

BOOST_AUTO_TEST_CASE(a_quantile_is_the_bound_of_the_bucket_that_holds_it)
{
    latency_histogram h;
    BOOST_TEST(h.quantile_bound(0.5).count() == 0);
    for (int i = 0; i < 90; ++i) h.record(80us);  // up to 100 us
    for (int i = 0; i < 10; ++i) h.record(40ms);  // up to 50 ms
    BOOST_TEST(h.quantile_bound(0.5).count() == 100);
    BOOST_TEST(h.quantile_bound(0.9).count() == 100);
    BOOST_TEST(h.quantile_bound(0.91).count() == 50'000);
    BOOST_TEST(h.quantile_bound(1.0).count() == 50'000);
    h.record(1h);
    BOOST_TEST(h.quantile_bound(1.0).count() == 10'000'000);  // the +Inf bucket: the greatest bound
}

BOOST_AUTO_TEST_CASE(lock_stats_merge_adds_counters_maps_gauges_and_histograms)
{
    zklock::lock_stats a, b;
    a.granted = 2, a.failures["no_auth"] = 1, a.losses["lease_expired"] = 1, a.holders = 1;
    b.granted = 3, b.failures["no_auth"] = 2, b.failures["draining"] = 1, b.waiters = 4;
    b.wait.record(1ms);
    a.merge(b);
    BOOST_TEST(a.granted == 5u);
    BOOST_TEST(a.failures["no_auth"] == 3u);
    BOOST_TEST(a.failures["draining"] == 1u);
    BOOST_TEST(a.losses["lease_expired"] == 1u);
    BOOST_TEST(a.holders == 1u);
    BOOST_TEST(a.waiters == 4u);
    BOOST_TEST(a.wait.count == 1u);
}

BOOST_AUTO_TEST_CASE(error_names_are_the_enumerators)
{
    BOOST_TEST(zklock::error_name({}) == "ok");
    BOOST_TEST(zklock::error_name(zklock::error::timeout) == "timeout");
    BOOST_TEST(zklock::error_name(zklock::error::draining) == "draining");
    BOOST_TEST(zklock::error_name(zklock::zk_errc::connection_loss) == "connection_loss");
    BOOST_TEST(zklock::error_name(zklock::zk_errc::no_node) == "no_node");
    BOOST_TEST(zklock::error_name({-999, zklock::zookeeper_category()}) == "zookeeper_999");
    BOOST_TEST(zklock::error_name(make_error_code(boost::system::errc::operation_canceled)) == "operation_aborted");
    BOOST_TEST(zklock::error_name({999, zklock::zklock_category()}) == "zklock_999");
}

BOOST_AUTO_TEST_CASE(prometheus_output_escapes_labels_and_writes_cumulative_buckets_in_seconds)
{
    zklock::session_stats s;
    s.state = zklock::session_state::connected;
    auto& orders = s.by_label["say \"hi\"\\\n"];
    orders.granted = 7;
    orders.wait.record(40us);
    orders.wait.record(2ms);
    s.requests_by_kind["create"].sent = 3;
    s.requests_by_kind["create"].errors["node_exists"] = 1;
    std::ostringstream os;
    zklock::write_prometheus(os, s);
    const auto out = os.str();
    auto has = [&](const std::string& line) {
        BOOST_TEST_CONTEXT(line) { BOOST_TEST(out.find(line + "\n") != std::string::npos); }
    };
    has(R"(zklock_acquires_total{lock="say \"hi\"\\\n",outcome="granted"} 7)");
    has(R"(zklock_acquires_total{lock="",outcome="granted"} 0)");  // unlabelled locks: always a series
    has(R"(zklock_wait_seconds_bucket{lock="say \"hi\"\\\n",le="0.00005"} 1)");
    has(R"(zklock_wait_seconds_bucket{lock="say \"hi\"\\\n",le="0.001"} 1)");
    has(R"(zklock_wait_seconds_bucket{lock="say \"hi\"\\\n",le="0.0025"} 2)");
    has(R"(zklock_wait_seconds_bucket{lock="say \"hi\"\\\n",le="10"} 2)");
    has(R"(zklock_wait_seconds_bucket{lock="say \"hi\"\\\n",le="+Inf"} 2)");
    has(R"(zklock_wait_seconds_sum{lock="say \"hi\"\\\n"} 0.00204)");
    has(R"(zklock_wait_seconds_count{lock="say \"hi\"\\\n"} 2)");
    has(R"(zklock_session_state{state="connected"} 1)");
    has(R"(zklock_session_state{state="closed"} 0)");
    has(R"(zklock_requests_total{kind="create"} 3)");
    has(R"(zklock_request_errors_total{kind="create",error="node_exists"} 1)");
    has("# TYPE zklock_wait_seconds histogram");
    has("# TYPE zklock_holders gauge");
    // Each family once, with its samples together.
    const auto once = [](const std::string& text, const std::string& line) {
        const auto first = text.find(line);
        return first != std::string::npos && first == text.rfind(line);
    };
    BOOST_TEST(once(out, "# TYPE zklock_acquires_total counter"));

    std::ostringstream two;
    zklock::write_prometheus(two, {{{{"session", "a"}}, s}, {{{"session", "b"}}, s}});
    BOOST_TEST(two.str().find(R"(zklock_requests_total{session="b",kind="create"} 3)") != std::string::npos);
    BOOST_TEST(once(two.str(), "# TYPE zklock_requests_total counter"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_stats
