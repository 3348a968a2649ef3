// The simulation's model of the clients' connections (src/testing/simulation/connections.hpp): one order
// per connection, writes answered once the client's server applied them, reads kept behind the session's
// earlier requests, syncs, what a dropped connection loses (and the writes it leaves applied), no
// connection to a server behind what the client has seen, and the watches sent again on a reconnect.
#include "testing/simulation/connections.hpp"

#include <zklock/error.hpp>

#include <boost/test/unit_test.hpp>

namespace unit_test_sim_connections {

using namespace zklock;
using namespace zklock::testing::simulation;

constexpr session_id alice = 1, bob = 2;

op::create make(std::string path) { return op::create{std::move(path), {}, create_mode::persistent, open_acl()}; }

/// An event's type as a word (the library's to_string is not in the pure core these tests link).
std::string word(watch_event_type t)
{
    switch (t) {
    case watch_event_type::created: return "created";
    case watch_event_type::deleted: return "deleted";
    case watch_event_type::data_changed: return "data_changed";
    case watch_event_type::children_changed: return "children_changed";
    }
    return "?";
}

/// Reads every message `s` has, as "answer:ID" or "EVENT:PATH".
std::string read_all(connections& net, session_id s)
{
    std::string out;
    while (auto m = net.receive(s)) {
        if (!out.empty()) out += ' ';
        if (const auto* a = std::get_if<answer>(&*m)) out += "answer:" + std::to_string(a->id);
        else out += word(std::get<watch_event>(*m).type) + ":" + std::get<watch_event>(*m).path;
    }
    return out;
}

answer next_answer(connections& net, session_id s)
{
    auto m = net.receive(s);
    BOOST_TEST_REQUIRE(m.has_value());
    BOOST_TEST_REQUIRE(std::holds_alternative<answer>(*m));
    return std::get<answer>(*m);
}

BOOST_AUTO_TEST_SUITE(sim_connections)

BOOST_AUTO_TEST_CASE(a_write_is_answered_once_the_clients_server_applied_it_after_the_events_it_fired)
{
    replicas r(3);
    connections net(r);
    BOOST_TEST(net.connect(alice, 1));  // a follower
    BOOST_TEST(net.connect(bob, replicas::leader));
    net.send(alice, get_children_request{"/", true});
    BOOST_TEST(net.serve(alice));
    BOOST_TEST(next_answer(net, alice).children.empty());

    // bob's create, on the leader: answered at once there; alice's follower has not applied it.
    const auto created = net.send(bob, make("/a"));
    BOOST_TEST(net.serve(bob));
    BOOST_TEST(read_all(net, bob) == "answer:" + std::to_string(created));
    net.send(alice, exists_request{"/a"});
    BOOST_TEST(net.serve(alice));
    BOOST_TEST(!next_answer(net, alice).st.has_value());  // the follower's past
    net.apply(1);
    BOOST_TEST(read_all(net, alice) == "children_changed:/");

    // alice's own write: the event it fires there goes out before its answer, once the follower applies.
    net.send(alice, get_children_request{"/", true});
    net.serve(alice);
    read_all(net, alice);
    const auto mine = net.send(alice, make("/b"));
    BOOST_TEST(net.serve(alice));
    BOOST_TEST(read_all(net, alice) == "");  // the leader applied it; the follower has not
    net.apply(1);
    BOOST_TEST(read_all(net, alice) == "children_changed:/ answer:" + std::to_string(mine));
    BOOST_TEST(net.last_seen(alice) == r.last_zxid());
}

BOOST_AUTO_TEST_CASE(a_read_waits_behind_the_sessions_unanswered_requests)
{
    replicas r(2);
    connections net(r);
    net.connect(alice, 1);
    const auto created = net.send(alice, make("/a"));
    const auto got = net.send(alice, get_data_request{"/a"});
    BOOST_TEST(net.has_unserved(alice));
    BOOST_TEST(net.serve(alice));   // the create, applied by the leader
    BOOST_TEST(!net.serve(alice));  // the read waits for the create's answer
    BOOST_TEST(net.has_unserved(alice));
    BOOST_TEST(!net.has_message(alice));  // the create's answer waits for the follower
    net.apply(1);
    BOOST_TEST(net.has_message(alice));
    BOOST_TEST(net.serve(alice));
    BOOST_TEST(!net.has_unserved(alice));
    BOOST_TEST(!net.has_unserved(bob));  // never connected
    const auto a = next_answer(net, alice);
    BOOST_TEST(a.id == created);
    BOOST_TEST(!a.ec);
    const auto b = next_answer(net, alice);
    BOOST_TEST(b.id == got);
    BOOST_TEST(!b.ec, b.ec.message());  // it sees its own write
}

BOOST_AUTO_TEST_CASE(a_sync_is_answered_once_the_server_applied_what_the_leader_had)
{
    replicas r(3);
    connections net(r);
    net.connect(alice, 2);
    net.connect(bob, replicas::leader);
    for (const auto* p : {"/a", "/b"}) {
        net.send(bob, make(p));
        net.serve(bob);
    }
    const auto synced = net.send(alice, sync_request{"/"});
    BOOST_TEST(net.serve(alice));
    net.apply(2, r.last_zxid() - 1);
    BOOST_TEST(!net.receive(alice).has_value());
    net.apply(2);
    const auto a = next_answer(net, alice);
    BOOST_TEST(a.id == synced);
    BOOST_TEST(a.zxid == r.last_zxid());
    net.send(alice, exists_request{"/b"});
    net.serve(alice);
    BOOST_TEST(next_answer(net, alice).st.has_value());
}

BOOST_AUTO_TEST_CASE(a_dropped_connection_loses_its_answers_and_leaves_a_served_write_applied)
{
    replicas r(2);
    connections net(r);
    net.connect(alice, 1);
    const auto applied = net.send(alice, make("/x"));  // served: applied, its answer waits for the follower
    const auto never = net.send(alice, make("/y"));    // never taken
    BOOST_TEST(net.serve(alice));
    const auto lost = net.drop(alice);
    BOOST_TEST_REQUIRE(lost.size() == 2u);
    BOOST_TEST(lost[0].id == applied);
    BOOST_TEST(lost[0].applied);
    BOOST_TEST(lost[1].id == never);
    BOOST_TEST(!lost[1].applied);
    BOOST_TEST(r.server(replicas::leader).exists("/x").has_value());
    BOOST_TEST(!r.server(replicas::leader).exists("/y").has_value());
    BOOST_TEST(!net.server_of(alice).has_value());

    // An answer gone out and not yet read is lost too.
    BOOST_TEST(net.connect(alice, replicas::leader));
    const auto out = net.send(alice, make("/z"));
    net.serve(alice);
    const auto lost_again = net.drop(alice);
    BOOST_TEST_REQUIRE(lost_again.size() == 1u);
    BOOST_TEST(lost_again[0].id == out);
    BOOST_TEST(lost_again[0].applied);
    BOOST_TEST(!net.receive(alice).has_value());
}

BOOST_AUTO_TEST_CASE(a_client_never_connects_to_a_server_behind_what_it_has_seen)
{
    replicas r(3);
    connections net(r);
    net.connect(alice, replicas::leader);
    net.send(alice, make("/a"));
    net.serve(alice);
    next_answer(net, alice);
    BOOST_TEST(net.last_seen(alice) == r.last_zxid());
    net.drop(alice);
    BOOST_TEST(!net.connect(alice, 2));  // follower 2 has applied nothing yet
    BOOST_TEST(!net.server_of(alice).has_value());
    net.apply(2);
    BOOST_TEST(net.connect(alice, 2));
    BOOST_TEST(!net.connect(alice, 1));  // one connection at a time
}

BOOST_AUTO_TEST_CASE(a_reconnect_sends_the_watches_again_and_fires_what_was_missed)
{
    replicas r(3);
    connections net(r);
    net.connect(bob, replicas::leader);
    for (const auto* p : {"/d", "/c", "/gone", "/same"}) {
        net.send(bob, make(p));
        net.serve(bob);
    }
    read_all(net, bob);
    net.apply(1);
    net.connect(alice, 1);
    net.send(alice, get_data_request{"/d", true});
    net.send(alice, exists_request{"/e", true});  // missing: an exist watch
    net.send(alice, get_children_request{"/c", true});
    net.send(alice, get_data_request{"/gone", true});
    net.send(alice, exists_request{"/same", true});  // there: a data watch
    while (net.serve(alice)) {
    }
    BOOST_TEST(read_all(net, alice).size() > 0u);
    BOOST_TEST(net.watches(alice).data.size() == 3u);
    BOOST_TEST(net.watches(alice).exist.size() == 1u);
    BOOST_TEST(net.watches(alice).child.size() == 1u);

    // alice's connection breaks; meanwhile four of the five change.
    net.drop(alice);
    net.send(bob, op::set_data{"/d", "new", -1});
    net.send(bob, make("/e"));
    net.send(bob, make("/c/x"));
    net.send(bob, op::remove{"/gone", -1});
    while (net.serve(bob)) {
    }
    read_all(net, bob);
    BOOST_TEST(r.server(1).take_fired().empty());  // the server forgot alice's watches with her connection
    net.apply(2);
    BOOST_TEST(net.connect(alice, 2));
    BOOST_TEST(read_all(net, alice) == "data_changed:/d deleted:/gone created:/e children_changed:/c");
    BOOST_TEST(net.watches(alice).data.size() == 1u);  // /same, set again on server 2
    BOOST_TEST(net.watches(alice).exist.empty());
    BOOST_TEST(net.watches(alice).child.empty());
    net.send(bob, op::set_data{"/same", "x", -1});
    net.serve(bob);
    net.apply(2);
    BOOST_TEST(read_all(net, alice) == "data_changed:/same");
    BOOST_TEST(net.watches(alice).data.empty());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_test_sim_connections
