// The simulation's model of ZooKeeper's data tree (src/testing/simulation/data_tree.hpp), against what the
// Java server does: sequential names from cversion, ephemeral owners, versions, one-shot watches in
// transaction order, multi all or none, the end of a session.
#include "testing/simulation/data_tree.hpp"

#include <zklock/error.hpp>

#include <boost/test/unit_test.hpp>

namespace unit_test_sim_data_tree {

using namespace zklock;
using zklock::testing::simulation::data_tree;
using zklock::testing::simulation::fired_watch;

constexpr std::int64_t alice = 11, bob = 22;

boost::system::error_code code(zk_errc e) { return make_error_code(e); }

op::create make(std::string path, create_mode mode = create_mode::persistent, std::string data = {})
{
    return op::create{std::move(path), std::move(data), mode, open_acl()};
}

std::vector<std::string> children(data_tree& t, const std::string& path)
{
    std::vector<std::string> names;
    zklock::stat st;
    BOOST_TEST_REQUIRE(!t.get_children(path, names, st));
    return names;
}

BOOST_AUTO_TEST_SUITE(sim_data_tree)

BOOST_AUTO_TEST_CASE(a_sequential_suffix_counts_the_creates_so_no_name_comes_twice)
{
    data_tree t;
    BOOST_TEST(!t.create(alice, make("/locks")).ec);
    BOOST_TEST(t.create(alice, make("/locks/n-", create_mode::ephemeral_sequential)).path == "/locks/n-0000000000");
    BOOST_TEST(!t.remove(op::remove{"/locks/n-0000000000", -1}));
    // As ZooKeeper 3.8 names them (checked with kazoo): the delete does not count, any create does, and
    // no name comes twice (Curator and kazoo sort on it).
    BOOST_TEST(t.create(bob, make("/locks/n-", create_mode::ephemeral_sequential)).path == "/locks/n-0000000001");
    BOOST_TEST(t.create(bob, make("/locks/x")).path == "/locks/x");
    BOOST_TEST(t.create(bob, make("/locks/n-", create_mode::persistent_sequential)).path == "/locks/n-0000000003");
    // cversion counts the delete too (4 creates, 1 delete), as the server's stat does.
    const auto parent = t.exists("/locks");
    BOOST_TEST_REQUIRE(parent.has_value());
    BOOST_TEST(parent->cversion == 5);
    BOOST_TEST(parent->num_children == 3);
}

BOOST_AUTO_TEST_CASE(writes_are_refused_as_the_server_refuses_them)
{
    data_tree t;
    BOOST_TEST(t.create(alice, make("/a/b")).ec == code(zk_errc::no_node));
    BOOST_TEST(t.create(alice, make("relative")).ec == code(zk_errc::bad_arguments));
    BOOST_TEST(t.create(alice, make("/trailing/")).ec == code(zk_errc::bad_arguments));
    BOOST_TEST(t.create(alice, make("/")).ec == code(zk_errc::bad_arguments));
    BOOST_TEST(!t.create(alice, make("/e", create_mode::ephemeral)).ec);
    BOOST_TEST(t.create(alice, make("/e/child")).ec == code(zk_errc::no_children_for_ephemerals));
    BOOST_TEST(t.create(bob, make("/e")).ec == code(zk_errc::node_exists));
    BOOST_TEST(!t.create(alice, make("/p")).ec);
    BOOST_TEST(!t.create(alice, make("/p/c")).ec);
    BOOST_TEST(t.remove(op::remove{"/p", -1}) == code(zk_errc::not_empty));
    BOOST_TEST(t.remove(op::remove{"/p/c", 3}) == code(zk_errc::bad_version));
    BOOST_TEST(t.remove(op::remove{"/nothing", -1}) == code(zk_errc::no_node));
    BOOST_TEST(t.set_data(op::set_data{"/p", "x", 1}).ec == code(zk_errc::bad_version));
    BOOST_TEST(t.last_zxid() == 13);  // 13 writes, 3 applied: a refused write is a transaction too, as the server logs it
    BOOST_TEST(t.size() == 4u);
}

BOOST_AUTO_TEST_CASE(stats_carry_zxids_versions_and_the_owner)
{
    data_tree t;
    t.set_time(1000);
    const auto made = t.create(alice, make("/n", create_mode::ephemeral, "v1"));
    BOOST_TEST(made.stat.czxid == 1);
    BOOST_TEST(made.stat.ephemeral_owner == alice);
    BOOST_TEST(made.stat.ctime_ms == 1000);
    t.set_time(2000);
    const auto set = t.set_data(op::set_data{"/n", "value2", 0});
    BOOST_TEST(!set.ec);
    BOOST_TEST(set.stat.version == 1);
    BOOST_TEST(set.stat.mzxid == 2);
    BOOST_TEST(set.stat.czxid == 1);
    BOOST_TEST(set.stat.mtime_ms == 2000);
    BOOST_TEST(set.stat.data_length == 6);
    std::string data;
    zklock::stat st;
    BOOST_TEST(!t.get_data("/n", data, st));
    BOOST_TEST(data == "value2");
    const auto root = t.exists("/");
    BOOST_TEST_REQUIRE(root.has_value());
    BOOST_TEST(root->cversion == 1);
    BOOST_TEST(root->pzxid == 1);
    BOOST_TEST(root->num_children == 1);
}

BOOST_AUTO_TEST_CASE(watches_fire_once_per_session_in_transaction_order)
{
    data_tree t;
    BOOST_TEST(!t.create(alice, make("/q")).ec);
    BOOST_TEST(!t.exists("/q/a", alice).has_value());  // a watch on a missing node: fires on its create
    children(t, "/q");
    std::vector<std::string> names;
    zklock::stat st;
    BOOST_TEST(!t.get_children("/q", names, st, alice));
    BOOST_TEST(!t.get_children("/q", names, st, alice));  // set twice: fires once
    BOOST_TEST(!t.get_children("/q", names, st, bob));
    BOOST_TEST(!t.create(bob, make("/q/a")).ec);
    auto fired = t.take_fired();
    BOOST_TEST_REQUIRE(fired.size() == 3u);
    BOOST_TEST(fired[0].session == alice);
    BOOST_TEST((fired[0].event.type == watch_event_type::created));  // (no printing: the operator is the library's)
    BOOST_TEST(fired[0].event.path == "/q/a");
    BOOST_TEST(fired[1].session == alice);
    BOOST_TEST((fired[1].event.type == watch_event_type::children_changed));
    BOOST_TEST(fired[2].session == bob);
    BOOST_TEST(!t.create(bob, make("/q/b")).ec);
    BOOST_TEST(t.take_fired().empty());  // one-shot: nobody set them again
}

BOOST_AUTO_TEST_CASE(a_deleted_node_tells_a_session_once_though_it_watched_data_and_children)
{
    data_tree t;
    BOOST_TEST(!t.create(alice, make("/d")).ec);
    std::string data;
    std::vector<std::string> names;
    zklock::stat st;
    BOOST_TEST(!t.get_data("/d", data, st, bob));
    BOOST_TEST(!t.get_children("/d", names, st, bob));
    BOOST_TEST(!t.remove(op::remove{"/d", -1}));
    const auto fired = t.take_fired();
    BOOST_TEST_REQUIRE(fired.size() == 1u);
    BOOST_TEST((fired[0].event.type == watch_event_type::deleted));
    BOOST_TEST(t.get_data("/missing", data, st, bob) == code(zk_errc::no_node));
    BOOST_TEST(!t.create(alice, make("/missing")).ec);
    BOOST_TEST(t.take_fired().empty());  // get_data on a missing node leaves no watch, unlike exists
}

BOOST_AUTO_TEST_CASE(a_multi_is_one_transaction_all_or_none)
{
    data_tree t;
    BOOST_TEST(!t.create(alice, make("/m")).ec);
    std::vector<std::string> names;
    zklock::stat st;
    BOOST_TEST(!t.get_children("/m", names, st, bob));
    // The lock protocol's hand-off: the next node created and the held one deleted, at one zxid.
    BOOST_TEST(!t.create(alice, make("/m/lock-", create_mode::ephemeral_sequential)).ec);
    t.take_fired();
    const auto ok = t.multi(alice, {op::create{"/m/lock-", "", create_mode::ephemeral_sequential, open_acl()},
                                    op::remove{"/m/lock-0000000000", -1}});
    BOOST_TEST_REQUIRE(ok.size() == 2u);
    BOOST_TEST(!ok[0].ec);
    BOOST_TEST(ok[0].path == "/m/lock-0000000001");
    BOOST_TEST(!ok[1].ec);
    BOOST_TEST(t.last_zxid() == 3);
    const auto node = t.exists("/m/lock-0000000001");
    BOOST_TEST_REQUIRE(node.has_value());
    BOOST_TEST(node->czxid == 3);

    const auto before = t.last_zxid();
    const auto failed = t.multi(bob, {op::create{"/m/new", "", create_mode::persistent, open_acl()},
                                      op::check{"/m/lock-0000000001", 7}, op::remove{"/m", -1}});
    BOOST_TEST_REQUIRE(failed.size() == 3u);
    BOOST_TEST(!failed[0].ec);
    BOOST_TEST(failed[0].path.empty());
    BOOST_TEST(failed[1].ec == code(zk_errc::bad_version));
    BOOST_TEST(failed[2].ec == code(zk_errc::runtime_inconsistency));
    BOOST_TEST(!t.exists("/m/new").has_value());  // the create before the failure was not applied
    BOOST_TEST(t.last_zxid() == before + 1);  // refused, and still a transaction
    BOOST_TEST(t.take_fired().empty());
}

BOOST_AUTO_TEST_CASE(the_end_of_a_session_deletes_its_ephemerals_in_one_transaction_and_forgets_its_watches)
{
    data_tree t;
    BOOST_TEST(!t.create(alice, make("/s")).ec);
    BOOST_TEST(!t.create(alice, make("/s/a-", create_mode::ephemeral_sequential)).ec);
    BOOST_TEST(!t.create(alice, make("/s/b", create_mode::ephemeral)).ec);
    BOOST_TEST(!t.create(bob, make("/s/c", create_mode::ephemeral)).ec);
    BOOST_TEST(t.exists("/s/c", alice).has_value());  // alice's watch: forgotten with her session
    std::vector<std::string> names;
    zklock::stat st;
    BOOST_TEST(!t.get_children("/s", names, st, bob));
    t.end_session(alice);
    BOOST_TEST(t.last_zxid() == 5);  // one transaction: both deletes at zxid 5
    const auto parent = t.exists("/s");
    BOOST_TEST_REQUIRE(parent.has_value());
    BOOST_TEST(parent->pzxid == 5);
    BOOST_TEST(children(t, "/s") == (std::vector<std::string>{"c"}));
    const auto fired = t.take_fired();
    BOOST_TEST_REQUIRE(fired.size() == 1u);  // bob's child watch, once for both deletes
    BOOST_TEST(fired[0].session == bob);
    BOOST_TEST((fired[0].event.type == watch_event_type::children_changed));
    BOOST_TEST(!t.remove(op::remove{"/s/c", -1}));
    BOOST_TEST(t.take_fired().empty());
    t.start_session(bob + 1);
    BOOST_TEST(t.last_zxid() == 7);  // a session's start is a transaction
    t.end_session(alice);            // nothing of hers is left: still a transaction
    BOOST_TEST(t.last_zxid() == 8);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_test_sim_data_tree
