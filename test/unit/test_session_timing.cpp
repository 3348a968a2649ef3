// The session's side of the loss clock (session/core/session_timing.hpp), no server: which answers move
// it, the bound on the loss grace, the keepalive's schedule on a mock clock, the one look's bound.
#include "mock_clock.hpp"
#include "session/core/session_timing.hpp"

#include <zklock/config.hpp>
#include <zklock/validation.hpp>

#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>

namespace unit_session_timing {  // a namespace of its own: the unit tests compile as one translation unit

using namespace zklock::detail;
using namespace clock_test;
using zklock::zk_errc;
using ec_t = boost::system::error_code;

BOOST_AUTO_TEST_SUITE(session_timing_tests)

BOOST_AUTO_TEST_CASE(only_answers_that_certainly_passed_the_leader_move_the_loss_clock)
{
    struct row {
        const char* kind;
        ec_t ec;
        bool counts;
    };
    const row rows[] = {
        // Successes of writes and syncs.
        {"sync", {}, true},
        {"create", {}, true},
        {"remove", {}, true},
        {"set_data", {}, true},
        {"multi", {}, true},
        // Reads: a follower that lost the leader still answers them.
        {"exists", {}, false},
        {"get_data", {}, false},
        {"get_children", {}, false},
        {"get_data", zk_errc::no_node, false},
        // Write errors that only the leader's PrepRequestProcessor gives.
        {"create", zk_errc::node_exists, true},
        {"create", zk_errc::no_node, true},
        {"set_data", zk_errc::bad_version, true},
        {"remove", zk_errc::not_empty, true},
        {"remove", zk_errc::no_node, true},
        {"multi", zk_errc::bad_version, true},
        // Write errors a follower gives itself: the eager ACL check, the throttle.
        {"create", zk_errc::no_auth, false},
        {"set_data", zk_errc::no_auth, false},
        {"create", zk_errc::invalid_acl, false},
        {"create", zk_errc::throttled_op, false},
        {"sync", zk_errc::throttled_op, false},
        // No answer at all.
        {"create", zk_errc::connection_loss, false},
        {"sync", zk_errc::operation_timeout, false},
        {"remove", zk_errc::runtime_inconsistency, false},
        {"set_data", zklock::error::session_expired, false},
    };
    for (const auto& r : rows)
        BOOST_TEST(passed_the_leader(r.kind, r.ec) == r.counts, r.kind << " answered " << r.ec.message());
}

BOOST_AUTO_TEST_CASE(the_loss_grace_is_at_most_seven_twelfths_of_the_session_timeout)
{
    struct row {
        milliseconds t;
        std::optional<milliseconds> configured;
        milliseconds grace;
        bool clamped;
    };
    const row rows[] = {
        {10'000ms, std::nullopt, 5'000ms, false},  // unset: T/2
        {4'000ms, std::nullopt, 2'000ms, false},
        {10'000ms, 3'000ms, 3'000ms, false},
        {12'000ms, 7'000ms, 7'000ms, false},  // exactly the bound
        {12'000ms, 7'001ms, 7'000ms, true},   // a negotiated T shorter than asked: lowered to the bound
        {4'000ms, 9'000ms, 2'333ms, true},    // rounded down, never up
        {10'000ms, 9'000ms, 5'833ms, true},
    };
    for (const auto& r : rows) {
        const auto c = choose_loss_grace(r.configured, r.t);
        BOOST_TEST(c.grace.count() == r.grace.count(), "T " << r.t.count());
        BOOST_TEST(c.clamped == r.clamped, "T " << r.t.count());
    }
}

BOOST_AUTO_TEST_CASE(the_keepalive_interval_is_a_sixth_of_the_timeout_or_a_third_of_a_shorter_grace)
{
    struct row {
        milliseconds t, grace, every;
    };
    const row rows[] = {
        {6'000ms, 3'000ms, 1'000ms},  // the default grace: T/6
        {12'000ms, 2'000ms, 666ms},   // a short grace: three keepalives fit in it
        {4'000ms, 2'333ms, 666ms},
        {2ms, 1ms, 1ms},  // never zero
    };
    for (const auto& r : rows) BOOST_TEST(keepalive_interval(r.t, r.grace).count() == r.every.count());
}

BOOST_AUTO_TEST_CASE(the_keepalive_is_due_a_sixth_of_the_timeout_after_the_newest_answered_send)
{
    mock_clock clock;
    const auto every = keepalive_interval(6'000ms, 3'000ms);  // T/6 = 1 s
    const auto sent = clock.now();                             // the newest answered request was sent now

    struct row {
        milliseconds at;  // since `sent`
        bool in_flight, connected;
        bool send;
        milliseconds wake;  // since `sent`
    };
    const row rows[] = {
        {0ms, false, true, false, 1'000ms},    // answered just now: look again at T/6
        {999ms, false, true, false, 1'000ms},  // not before T/6
        {1'000ms, false, true, true, 1'500ms},   // due at T/6: a sync, and a look half an interval later
        {1'200ms, true, true, false, 1'700ms},   // one in flight already: no second one
        {1'200ms, false, false, false, 1'700ms},  // disconnected: none (the reconnect looks again)
        {5'000ms, false, true, true, 5'500ms},   // right after a reconnect, the touch long stale: at once
    };
    for (const auto& r : rows) {
        const auto step = keepalive_due(sent + r.at, sent, every, r.in_flight, r.connected);
        BOOST_TEST(step.send == r.send, "at " << r.at.count() << " ms");
        BOOST_TEST((step.wake_at == sent + r.wake), "at " << r.at.count() << " ms");
    }
}

BOOST_AUTO_TEST_CASE(a_newer_answer_moves_the_keepalive)
{
    mock_clock clock;
    const auto every = 1'000ms;
    const auto first = clock.now();
    clock.advance_time_by(900ms);
    const auto newer = clock.now() - 100ms;  // a lock's own write, sent at 800 ms, answered at 900 ms
    clock.advance_time_by(100ms);            // 1 s after the first send
    BOOST_TEST(keepalive_due(clock.now(), first, every, false, true).send);  // by the first alone: due
    const auto step = keepalive_due(clock.now(), newer, every, false, true);
    BOOST_TEST(!step.send);  // the newer answer moved it
    BOOST_TEST((step.wake_at == newer + every));
    clock.advance_time_by(800ms);
    BOOST_TEST(keepalive_due(clock.now(), newer, every, false, true).send);
}

BOOST_AUTO_TEST_CASE(a_one_look_waits_at_most_a_second_or_a_quarter_of_the_timeout)
{
    BOOST_TEST(one_look_limit(4'000ms).count() == 1'000);
    BOOST_TEST(one_look_limit(40'000ms).count() == 1'000);
    BOOST_TEST(one_look_limit(2'000ms).count() == 500);
    BOOST_TEST(session_timeout_in_use(0ms, 10'000ms).count() == 10'000);  // not negotiated yet: as asked
    BOOST_TEST(session_timeout_in_use(4'000ms, 10'000ms).count() == 4'000);
}

BOOST_AUTO_TEST_CASE(a_loss_grace_above_the_bound_is_refused_with_the_bound_in_the_message)
{
    zklock::session_config c;
    c.session_timeout = 10'000ms;
    struct row {
        std::optional<milliseconds> grace;
        bool ok;
        const char* says;
    };
    const row rows[] = {
        {std::nullopt, true, ""},
        {5'833ms, true, ""},  // 7/12 of 10 s, rounded down
        {5'834ms, false, "loss_grace 5834 ms is above 5833 ms, 7/12 of session_timeout 10000 ms"},
        {9'000ms, false, "above 5833 ms"},
        {0ms, false, "loss_grace must be above zero"},
        {-1ms, false, "loss_grace must be above zero"},
    };
    for (const auto& r : rows) {
        c.loss_grace = r.grace;
        std::string why;
        const auto ec = zklock::check_config(c, &why);
        BOOST_TEST(!ec == r.ok, why);
        if (!r.ok) {
            BOOST_TEST((ec == zklock::error::invalid_config));
            BOOST_TEST(why.find(r.says) != std::string::npos, why);
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_session_timing
