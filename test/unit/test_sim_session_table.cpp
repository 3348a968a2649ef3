// The simulation's model of the leader's sessions (src/testing/simulation/session_table.hpp), against what
// ZooKeeper 3.8 does: timeouts clamped to 2 and 20 ticks, expiry in buckets a tick apart, a session gone
// once expired or closed.
#include "testing/simulation/session_table.hpp"

#include <boost/test/unit_test.hpp>

namespace unit_test_sim_session_table {

using zklock::testing::simulation::session_id;
using zklock::testing::simulation::session_limits;
using zklock::testing::simulation::session_table;
using ids = std::vector<session_id>;

BOOST_AUTO_TEST_SUITE(sim_session_table)

BOOST_AUTO_TEST_CASE(a_timeout_is_clamped_to_two_and_twenty_ticks_or_the_configured_bounds)
{
    const session_table t(session_limits{200, {}, {}});
    BOOST_TEST(t.negotiate(100) == 400);
    BOOST_TEST(t.negotiate(1'000) == 1'000);
    BOOST_TEST(t.negotiate(10'000) == 4'000);
    const session_table u(session_limits{2'000, 1'000, 60'000});
    BOOST_TEST(u.negotiate(500) == 1'000);
    BOOST_TEST(u.negotiate(50'000) == 50'000);
    BOOST_TEST(u.negotiate(90'000) == 60'000);
}

BOOST_AUTO_TEST_CASE(a_silent_session_expires_at_the_first_tick_after_its_timeout)
{
    // Tick 2 s: a 4 s session opened at 1 s is due at the first multiple of 2 s after 5 s: 6 s.
    session_table t(session_limits{2'000, {}, {}}, 0);
    const auto s = t.open(1'000, 4'000);
    BOOST_TEST(s.id == 1);
    BOOST_TEST(s.timeout_ms == 4'000);
    BOOST_TEST(*t.expires_at(s.id) == 6'000);
    BOOST_TEST(t.expire_due(5'999).empty());
    BOOST_TEST(t.alive(s.id));
    BOOST_TEST(t.expire_due(6'000) == ids{s.id});
    BOOST_TEST(!t.alive(s.id));
    BOOST_TEST(!t.expires_at(s.id));
    // Exactly on a multiple: t + timeout = 6 s is due at 8 s, not 6 (a tick of grace, as the server gives).
    const auto r = t.open(2'000, 4'000);
    BOOST_TEST(*t.expires_at(r.id) == 8'000);
}

BOOST_AUTO_TEST_CASE(hearing_from_a_session_moves_its_expiry_and_a_gone_session_stays_gone)
{
    session_table t(session_limits{2'000, {}, {}}, 0);
    const auto s = t.open(0, 4'000);  // due at 6 s
    BOOST_TEST(t.touch(s.id, 3'500));  // due at 8 s
    BOOST_TEST(*t.expires_at(s.id) == 8'000);
    BOOST_TEST(t.touch(s.id, 3'900));  // the same bucket
    BOOST_TEST(t.expire_due(7'999).empty());
    BOOST_TEST(t.expire_due(8'000) == ids{s.id});
    BOOST_TEST(!t.touch(s.id, 8'001));  // expired: a touch brings nothing back
    BOOST_TEST(!t.alive(s.id));
    const auto c = t.open(8'001, 4'000);
    BOOST_TEST(c.id == 2);  // ids are never reused
    BOOST_TEST(t.close(c.id));
    BOOST_TEST(!t.close(c.id));
    BOOST_TEST(!t.touch(c.id, 8'002));
    BOOST_TEST(t.expire_due(100'000).empty());  // a closed session does not expire later
}

BOOST_AUTO_TEST_CASE(late_looks_take_every_bucket_due_in_order_and_each_bucket_once)
{
    session_table t(session_limits{200, {}, {}}, 50);  // the first bucket at 200 ms
    BOOST_TEST(t.next_check_ms() == 200);
    const auto a = t.open(0, 1'000);    // due at 1,200
    const auto b = t.open(300, 400);    // due at 800
    const auto c = t.open(300, 1'000);  // due at 1,400
    const auto d = t.open(0, 1'000);    // due at 1,200, with a
    BOOST_TEST(t.expire_due(799).empty());
    BOOST_TEST(t.next_check_ms() == 800);
    // The leader looks late (a long pause): every bucket due is taken, in order, each in id order.
    BOOST_TEST(t.expire_due(1'300) == (ids{b.id, a.id, d.id}));
    BOOST_TEST(t.next_check_ms() == 1'400);
    BOOST_TEST(t.alive(c.id));
    BOOST_TEST(t.expire_due(1'300).empty());  // nothing twice
    BOOST_TEST(t.expire_due(1'400) == ids{c.id});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_test_sim_session_table
