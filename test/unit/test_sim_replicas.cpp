// The simulation's model of the ensemble's servers (src/testing/simulation/replicas.hpp): a lagging
// follower reads the past, its watches fire when it applies the transaction, and every server ends in the
// leader's state, with the same zxids, stats and sequential names.
#include "testing/simulation/replicas.hpp"

#include <zklock/error.hpp>

#include <boost/test/unit_test.hpp>

namespace unit_test_sim_replicas {

using namespace zklock;
using zklock::testing::simulation::replicas;

constexpr std::int64_t alice = 1, bob = 2;

op::create make(std::string path, create_mode mode = create_mode::persistent)
{
    return op::create{std::move(path), {}, mode, open_acl()};
}

std::vector<std::string> children(replicas& r, std::size_t s, const std::string& path)
{
    std::vector<std::string> names;
    zklock::stat st;
    BOOST_TEST_REQUIRE(!r.server(s).get_children(path, names, st));
    return names;
}

BOOST_AUTO_TEST_SUITE(sim_replicas)

BOOST_AUTO_TEST_CASE(a_lagging_follower_reads_the_past_until_it_applies)
{
    replicas r(3);
    BOOST_TEST(!r.create(alice, make("/locks")).ec);
    BOOST_TEST(r.server(replicas::leader).exists("/locks").has_value());
    BOOST_TEST(!r.server(1).exists("/locks").has_value());  // not applied there yet
    BOOST_TEST(r.applied(1) == 0);
    r.catch_up(1);
    BOOST_TEST(r.server(1).exists("/locks").has_value());
    BOOST_TEST(r.applied(1) == r.last_zxid());
    BOOST_TEST(!r.server(2).exists("/locks").has_value());  // each follower at its own point
}

BOOST_AUTO_TEST_CASE(a_watch_on_a_follower_fires_when_that_follower_applies_the_write)
{
    replicas r(3);
    r.create(alice, make("/locks"));
    r.catch_up(1);
    std::vector<std::string> names;
    zklock::stat st;
    BOOST_TEST(!r.server(1).get_children("/locks", names, st, bob));  // bob, connected to follower 1, watches
    const auto node = r.create(alice, make("/locks/n-", create_mode::ephemeral_sequential));
    BOOST_TEST(node.path == "/locks/n-0000000000");
    BOOST_TEST(r.server(1).take_fired().empty());       // the leader applied it; the follower has not
    BOOST_TEST(r.server(0).take_fired().empty());       // bob's watch is not on the leader
    r.catch_up(1);
    const auto fired = r.server(1).take_fired();
    BOOST_TEST_REQUIRE(fired.size() == 1u);
    BOOST_TEST(fired[0].session == bob);
    BOOST_TEST(fired[0].event.path == "/locks");
}

BOOST_AUTO_TEST_CASE(catching_up_to_a_zxid_applies_exactly_that_far)
{
    replicas r(2);
    r.create(alice, make("/a"));
    const auto after_a = r.last_zxid();
    r.create(alice, make("/b"));
    r.catch_up(1, after_a);  // as a write's answer waits for its own zxid on the client's server
    BOOST_TEST(r.applied(1) == after_a);
    BOOST_TEST(r.server(1).exists("/a").has_value());
    BOOST_TEST(!r.server(1).exists("/b").has_value());
    r.catch_up(1, after_a);  // nothing twice
    BOOST_TEST(r.applied(1) == after_a);
}

BOOST_AUTO_TEST_CASE(every_server_ends_in_the_leaders_state_refused_writes_and_session_ends_included)
{
    replicas r(3);
    r.set_time(1'000);
    r.start_session(alice);
    r.start_session(bob);
    r.create(alice, make("/locks"));
    r.create(alice, make("/locks/n-", create_mode::ephemeral_sequential));
    r.set_time(2'000);
    r.create(bob, make("/locks/n-", create_mode::ephemeral_sequential));
    BOOST_TEST(r.create(bob, make("/locks")).ec == make_error_code(zk_errc::node_exists));  // refused: a zxid all the same
    BOOST_TEST(r.set_data(op::set_data{"/locks", "x", 7}).ec == make_error_code(zk_errc::bad_version));
    const std::vector<multi_op> ops{op::check{"/locks", 0}, op::set_data{"/locks", "y", -1}};
    BOOST_TEST(!r.multi(bob, ops)[1].ec);
    r.end_session(alice);  // its node goes, on every server in turn
    r.catch_up(1);
    r.catch_up(2);
    for (std::size_t s = 1; s < r.size(); ++s) {
        BOOST_TEST(r.applied(s) == r.last_zxid());
        BOOST_TEST(children(r, s, "/locks") == children(r, 0, "/locks"));
        std::string data, leader_data;
        zklock::stat st, leader_st;
        BOOST_TEST(!r.server(s).get_data("/locks", data, st));
        BOOST_TEST(!r.server(0).get_data("/locks", leader_data, leader_st));
        BOOST_TEST(data == leader_data);
        BOOST_TEST(st.mzxid == leader_st.mzxid);
        BOOST_TEST(st.mtime_ms == leader_st.mtime_ms);  // the commit's time, not the follower's
        BOOST_TEST(st.cversion == leader_st.cversion);
        BOOST_TEST(st.pzxid == leader_st.pzxid);
    }
    BOOST_TEST(children(r, 2, "/locks") == std::vector<std::string>{"n-0000000001"});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_test_sim_replicas
