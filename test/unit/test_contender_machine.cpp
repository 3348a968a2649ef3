// One lock node's life, driven event by event: each case feeds the machine the answers a server would
// give and checks the actions it asks for. No server, no I/O. (Setting up, in test_contender_setup.cpp.)
#include "contender_fixture.hpp"

namespace unit_contender_machine {  // a namespace of its own: the unit tests compile as one translation unit

using namespace contender_test;

BOOST_AUTO_TEST_SUITE(contender_machine_tests)

BOOST_FIXTURE_TEST_CASE(uncontended_create_and_list_share_a_round_then_hold, fixture)
{
    auto out = m.start();
    BOOST_TEST(show(out) == "create_node(_c_u-lock-) list");
    BOOST_TEST(out[0].round == out[1].round);  // pipelined: the listing already contains the new node
    BOOST_TEST(m.on_created(r, ok, own_path, 100).empty());
    BOOST_TEST(m.node() == own_path);
    out = m.on_listed(r, listing::place, ok, {"config", own});
    BOOST_TEST(show(out) == "acquired");  // the czxid came with the create; the own node is watched when asked
    BOOST_TEST(m.held());
    BOOST_TEST(m.zxid() == 100);
    out = m.watch_own_node();
    BOOST_TEST(show(out) == "get_data(" + own + ")");
    BOOST_TEST((out[0].slot == watch_slot::own));
    BOOST_TEST(m.watch_own_node().empty());  // once
    BOOST_TEST(show(m.on_data(0, watch_slot::own, ok, 100)) == "await_watch[own]");  // no second acquired
}

BOOST_FIXTURE_TEST_CASE(an_own_watch_asked_for_while_queued_starts_when_held, fixture)
{
    created();
    BOOST_TEST(show(m.on_listed(r, listing::place, ok, {v4, own})) == "get_data(" + own + ") get_data(" + v4 + ") waiting");
    BOOST_TEST(m.watch_own_node().empty());  // not held yet
    m.on_data(r, watch_slot::predecessor, ok, 40);
    BOOST_TEST(show(m.on_watch_fired(r, watch_slot::predecessor, ok, wet::deleted)) == "drop_watch get_data(" + own + ") acquired");
    BOOST_TEST(m.watch_own_node().empty());
    BOOST_TEST(m.release().size() > 0u);
    BOOST_TEST(m.watch_own_node().empty());  // finished
}

BOOST_FIXTURE_TEST_CASE(last_obstacle_deleted_makes_holder_without_relisting, fixture)
{
    created();
    auto out = m.on_listed(r, listing::place, ok, {v4, own});
    BOOST_TEST(show(out) == "get_data(" + own + ") get_data(" + v4 + ") waiting");  // the report comes last
    BOOST_TEST((out[0].slot == watch_slot::waiting_own));  // our own node first: its answer comes first
    BOOST_TEST((out[1].slot == watch_slot::predecessor));
    BOOST_TEST(m.waiting());
    out = m.on_data(r, watch_slot::predecessor, ok, 40);
    BOOST_TEST(show(out) == "await_watch[predecessor]");
    BOOST_TEST(out[0].round == r);
    const auto fired = m.on_watch_fired(r, watch_slot::predecessor, ok, wet::deleted);
    BOOST_TEST(show(fired) == "drop_watch acquired");  // the wait's watches go
    BOOST_TEST(m.held());
}

BOOST_FIXTURE_TEST_CASE(every_node_ahead_is_watched_and_the_last_deletion_makes_holder, fixture)
{
    created();
    const auto v3 = seq_name("_c_v-lock-", 3), w4 = seq_name("_c_w-lock-", 4);
    auto out = m.on_listed(r, listing::place, ok, {own, w4, v3});
    BOOST_TEST(show(out) == "get_data(" + own + ") get_data(" + w4 + ") get_data(" + v3 + ") waiting");  // own, then nearest first, one round
    BOOST_TEST(out[1].round == out[2].round);
    BOOST_TEST(out[1].index == 0u);
    BOOST_TEST(out[2].index == 1u);
    BOOST_TEST((out[0].slot == watch_slot::waiting_own));  // our own node, in the same round
    BOOST_TEST(out[0].round == out[1].round);
    BOOST_TEST(out[3].index == 2u);  // the waiting report: two ahead
    out = m.on_data(r, watch_slot::predecessor, ok, 40, {}, 1);
    BOOST_TEST(show(out) == "await_watch[predecessor]");
    BOOST_TEST(out[0].index == 1u);  // the wait is on the watch its read set
    BOOST_TEST(show(m.on_data(r, watch_slot::predecessor, ok, 30, {}, 0)) == "await_watch[predecessor]");
    // The head goes first, then the one just ahead: no listing in between.
    BOOST_TEST(m.on_watch_fired(r, watch_slot::predecessor, ok, wet::deleted).empty());
    BOOST_TEST(m.waiting());
    BOOST_TEST(show(m.on_watch_fired(r, watch_slot::predecessor, ok, wet::deleted)) == "drop_watch acquired");
    BOOST_TEST(m.held());
}

BOOST_FIXTURE_TEST_CASE(a_node_ahead_already_gone_counts_as_deleted, fixture)
{
    created();
    const auto v3 = seq_name("_c_v-lock-", 3);
    BOOST_TEST(listed({own, v4, v3}) == "get_data(" + own + ") get_data(" + v4 + ") get_data(" + v3 + ") waiting");
    BOOST_TEST(m.on_data(r, watch_slot::predecessor, no_node, 0, {}, 0).empty());
    BOOST_TEST(show(m.on_data(r, watch_slot::predecessor, no_node, 0, {}, 1)) == "drop_watch acquired");
}

BOOST_FIXTURE_TEST_CASE(a_node_ahead_changed_relists_and_the_old_watches_are_stale, fixture)
{
    created();
    const auto v3 = seq_name("_c_v-lock-", 3);
    listed({own, v4, v3});
    const auto watch_round = r;
    show(m.on_data(r, watch_slot::predecessor, ok, 40, {}, 0));
    show(m.on_data(r, watch_slot::predecessor, ok, 30, {}, 1));
    BOOST_TEST(show(m.on_watch_fired(r, watch_slot::predecessor, ok, wet::data_changed)) == "list");
    BOOST_TEST(r > watch_round);
    BOOST_TEST(m.on_watch_fired(watch_round, watch_slot::predecessor, ok, wet::deleted).empty());
    BOOST_TEST(listed({v3, own}) == "get_data(" + own + ") get_data(" + v3 + ") waiting");
    BOOST_TEST(!m.held());
}

BOOST_FIXTURE_TEST_CASE(a_lost_connection_while_watching_ahead_relists_once, fixture)
{
    created();
    const auto v3 = seq_name("_c_v-lock-", 3);
    listed({own, v4, v3});
    const auto watch_round = r;
    BOOST_TEST(show(m.on_data(r, watch_slot::predecessor, conn_loss, 0, {}, 0)) == "await_connected[relist] waiting");
    BOOST_TEST(m.on_data(watch_round, watch_slot::predecessor, conn_loss, 0, {}, 1).empty());  // the same round: moot
    BOOST_TEST(show(m.on_reconnected(resume::relist, true)) == "list");
}

BOOST_FIXTURE_TEST_CASE(our_node_deleted_while_waiting_queues_again_instead_of_holding, fixture)
{
    created();
    const auto v3 = seq_name("_c_v-lock-", 3);
    listed({own, v4, v3});
    const auto wait_round = r;
    show(m.on_data(r, watch_slot::predecessor, ok, 40, {}, 0));
    show(m.on_data(r, watch_slot::predecessor, ok, 30, {}, 1));
    BOOST_TEST(show(m.on_data(r, watch_slot::waiting_own, ok, 100)) == "await_watch[waiting_own]");
    // Its data changed (a revoke written on a waiting node): watch on.
    BOOST_TEST(show(m.on_watch_fired(r, watch_slot::waiting_own, ok, wet::data_changed)) == "get_data(" + own + ")");
    BOOST_TEST(show(m.on_data(r, watch_slot::waiting_own, ok, 100)) == "await_watch[waiting_own]");
    // Someone deletes it: look again, and the watches ahead no longer count.
    BOOST_TEST(show(m.on_watch_fired(r, watch_slot::waiting_own, ok, wet::deleted)) == "list");
    BOOST_TEST(m.on_watch_fired(wait_round, watch_slot::predecessor, ok, wet::deleted).empty());
    BOOST_TEST(m.on_watch_fired(wait_round, watch_slot::predecessor, ok, wet::deleted).empty());
    BOOST_TEST(!m.held());
    BOOST_TEST(listed({v3}) == "create_node(_c_u-lock-) list");  // a new node at the end of the queue
    // Found gone by the read itself, likewise.
    remake(contender_kind::exclusive);
    created();
    listed({own, v4});
    BOOST_TEST(show(m.on_data(r, watch_slot::waiting_own, no_node, 0)) == "list");
}

BOOST_FIXTURE_TEST_CASE(our_node_watch_after_holding_or_lost_connection, fixture)
{
    created();
    listed({own, v4});
    const auto wait_round = r;
    BOOST_TEST(show(m.on_data(r, watch_slot::waiting_own, conn_loss, 0)) == "await_connected[relist] waiting");
    BOOST_TEST(m.on_data(wait_round, watch_slot::predecessor, conn_loss, 0).empty());  // moot: one reconnect
    BOOST_TEST(show(m.on_reconnected(resume::relist, true)) == "list");
    BOOST_TEST(listed({own, v4}) == "get_data(" + own + ") get_data(" + v4 + ") waiting");
    show(m.on_data(r, watch_slot::waiting_own, ok, 100));
    show(m.on_data(r, watch_slot::predecessor, ok, 40));
    const auto held_round = r;
    BOOST_TEST(show(m.on_watch_fired(r, watch_slot::predecessor, ok, wet::deleted)) == "drop_watch acquired");
    // The waiting watch's late event is not a loss: the held node's own watch says that.
    BOOST_TEST(m.on_watch_fired(held_round, watch_slot::waiting_own, ok, wet::deleted).empty());
    BOOST_TEST(m.held());
}

BOOST_FIXTURE_TEST_CASE(far_back_only_the_nearest_is_watched_and_its_deletion_relists, fixture)
{
    remake(contender_kind::exclusive);
    own = seq_name(prefix, 50);
    own_path = dir + "/" + own;
    created();
    names children{own};
    for (int i = 0; i <= int(max_watched_ahead); ++i) children.push_back(seq_name("_c_v-lock-", 40 + i));
    const auto nearest = seq_name("_c_v-lock-", 40 + int(max_watched_ahead));
    BOOST_TEST(listed(children) == "get_data(" + nearest + ") waiting");  // one more than watched: the nearest only
    show(m.on_data(r, watch_slot::predecessor, ok, 40));
    BOOST_TEST(show(m.on_watch_fired(r, watch_slot::predecessor, ok, wet::deleted)) == "list");
    children.pop_back();  // now exactly as many ahead as are watched: all of them
    const auto out = m.on_listed(r, listing::place, ok, children);
    BOOST_TEST(out.size() == max_watched_ahead + 2);  // each ahead, our own node, the report
    BOOST_TEST(out.back().index == max_watched_ahead);
}

// A create with its listing behind it may still come back without its czxid: the session sent it in one
// multi with the deletes of its turn (a contended lock's release and its next waiter's node).
BOOST_FIXTURE_TEST_CASE(a_listed_create_without_its_czxid_takes_it_from_the_read_that_watches_it, fixture)
{
    show(m.start());
    BOOST_TEST(m.on_created(r, ok, own_path, 0).empty());  // the pipelined listing follows
    const auto out = m.on_listed(r, listing::place, ok, {v4, own});
    BOOST_TEST(show(out) == "get_data(" + own + ") get_data(" + v4 + ") waiting");  // no read of its own
    BOOST_TEST((out[0].slot == watch_slot::waiting_own));
    BOOST_TEST(show(m.on_data(r, watch_slot::waiting_own, ok, 100)) == "await_watch[waiting_own]");
    BOOST_TEST(m.zxid() == 100);
    m.on_data(r, watch_slot::predecessor, ok, 40);
    BOOST_TEST(show(m.on_watch_fired(r, watch_slot::predecessor, ok, wet::deleted)) == "drop_watch acquired");
    BOOST_TEST(m.zxid() == 100);  // no read on the way to holding
}

BOOST_FIXTURE_TEST_CASE(a_listed_create_without_its_czxid_reads_it_when_first_or_far_back, fixture)
{
    show(m.start());
    m.on_created(r, ok, own_path, 0);
    auto out = m.on_listed(r, listing::place, ok, {own});
    BOOST_TEST(show(out) == "get_data(" + own + ")");  // first: the token before "acquired"
    BOOST_TEST((out[0].slot == watch_slot::none));
    BOOST_TEST(show(m.on_data(0, watch_slot::none, ok, 100, {}, out[0].index)) == "acquired");
    BOOST_TEST(m.zxid() == 100);
    // Further back than the watched ones: our node is not watched while we wait, so it is read beside.
    remake(contender_kind::exclusive);
    own = seq_name(prefix, 50);
    own_path = dir + "/" + own;
    show(m.start());
    m.on_created(r, ok, own_path, 0);
    names children{own};
    for (int i = 0; i <= int(max_watched_ahead); ++i) children.push_back(seq_name("_c_v-lock-", 40 + i));
    out = m.on_listed(r, listing::place, ok, children);
    const auto nearest = seq_name("_c_v-lock-", 40 + int(max_watched_ahead));
    BOOST_TEST(show(out) == "get_data(" + nearest + ") get_data(" + own + ") waiting");
    BOOST_TEST((out[1].slot == watch_slot::none));
    BOOST_TEST(m.on_data(0, watch_slot::none, ok, 100, {}, out[1].index).empty());  // noted while queued
    BOOST_TEST(m.zxid() == 100);
}

BOOST_FIXTURE_TEST_CASE(predecessor_gone_before_the_watch_holds_and_older_answers_are_stale, fixture)
{
    created();
    const auto create_round = r;
    listed({v4, own});
    const auto watch_round = r;
    BOOST_TEST(show(m.on_data(r, watch_slot::predecessor, no_node, 0)) == "drop_watch acquired");  // gone: nothing else was ahead
    BOOST_TEST(m.on_listed(create_round, listing::place, ok, {own}).empty());
    BOOST_TEST(m.on_watch_fired(watch_round - 1, watch_slot::predecessor, ok, wet::deleted).empty());
    BOOST_TEST(m.on_created(create_round, ok, dir + "/" + seq_name(prefix, 9), 90).empty());
    BOOST_TEST(m.held());
    BOOST_TEST(m.node() == own_path);
}

BOOST_FIXTURE_TEST_CASE(abandon_deletes_the_node_at_once_or_when_its_create_lands, fixture)
{
    show(m.start());
    BOOST_TEST(show(m.abandon()) == "drop_watch drop_watch");  // no node yet: nothing to delete
    BOOST_TEST(m.finished());
    BOOST_TEST(show(m.on_created(r, ok, own_path, 100)) == "delete_node(" + own + ")");
    BOOST_TEST(m.on_listed(r, listing::place, ok, {own}).empty());
    BOOST_TEST(m.abandon().empty());  // once only
    remake(contender_kind::exclusive);
    created();
    listed({v4, own});
    BOOST_TEST(show(m.abandon()) == "drop_watch drop_watch delete_node(" + own + ")");
    BOOST_TEST(m.on_data(r, watch_slot::predecessor, ok, 40).empty());
    BOOST_TEST(m.on_watch_fired(r, watch_slot::predecessor, ok, wet::deleted).empty());
}

BOOST_FIXTURE_TEST_CASE(release_deletes_the_held_node_or_answers_at_once_without_one, fixture)
{
    hold();
    BOOST_TEST(show(m.release()) == "drop_watch drop_watch release_node(" + own + ")");
    BOOST_TEST(m.finished());
    BOOST_TEST(m.on_watch_fired(0, watch_slot::own, ok, wet::deleted).empty());  // our own delete
    remake(contender_kind::exclusive);
    show(m.start());
    BOOST_TEST(show(m.release()) == "drop_watch drop_watch release_node");  // no node: the path is empty
}

BOOST_FIXTURE_TEST_CASE(lost_create_is_found_by_its_protected_name, fixture)
{
    show(m.start());
    const auto create_round = r;
    BOOST_TEST(show(m.on_created(r, conn_loss, "", 0)) == "await_connected[find_own] waiting");
    BOOST_TEST(m.on_listed(create_round, listing::place, conn_loss, {}).empty());  // the pipelined listing
    // The sync first, so that the listing comes from a server that has seen the old create.
    BOOST_TEST(show(m.on_reconnected(resume::find_own, true)) == "sync list[find_own]");
    BOOST_TEST(r > create_round);
    const auto v6 = seq_name("_c_v-lock-", 6);
    BOOST_TEST(show(m.on_listed(r, listing::find_own, ok, {v6, own})) == "list");  // found by its uuid: place it
    BOOST_TEST(m.node() == own_path);
    BOOST_TEST(listed({own, v6}) == "get_data(" + own + ")");  // holds, but the czxid is unknown yet
    BOOST_TEST(m.zxid() == 0);
    BOOST_TEST(show(m.on_data(0, watch_slot::none, ok, 777, {}, 1)) == "acquired");  // read alone: nobody asked for the watch
    BOOST_TEST(m.zxid() == 777);
    // Not there: the create never happened.
    remake(contender_kind::exclusive);
    show(m.start());
    show(m.on_created(r, conn_loss, "", 0));
    show(m.on_reconnected(resume::find_own, true));
    BOOST_TEST(show(m.on_listed(r, listing::find_own, ok, {v6, "config"})) == "create_node(_c_u-lock-) list");
}

BOOST_FIXTURE_TEST_CASE(lost_create_of_an_abandoned_contender_is_cleaned_up, fixture)
{
    show(m.start());
    show(m.on_created(r, conn_loss, "", 0));
    BOOST_TEST(show(m.abandon()) == "drop_watch drop_watch");  // abandoned while waiting for the reconnect
    BOOST_TEST(show(m.on_reconnected(resume::find_own, true)) == "list[cleanup]");
    BOOST_TEST(show(m.on_listed(0, listing::cleanup, ok, {v4, own, "config"})) == "delete_node(" + own + ")");
    // Abandoned first, then the create's answer lost.
    remake(contender_kind::exclusive);
    show(m.start());
    m.abandon();
    BOOST_TEST(show(m.on_created(r, conn_loss, "", 0)) == "await_connected[cleanup]");  // nobody waits: no report
    BOOST_TEST(show(m.on_reconnected(resume::cleanup, true)) == "list[cleanup]");
    BOOST_TEST(show(m.on_listed(0, listing::cleanup, conn_loss, {})) == "await_connected[cleanup]");  // again
    BOOST_TEST(m.on_reconnected(resume::cleanup, false).empty());  // the session ended: its nodes went with it
}

BOOST_FIXTURE_TEST_CASE(own_node_missing_queues_again_and_a_second_one_is_deleted, fixture)
{
    created();
    const auto create_round = r;
    BOOST_TEST(listed({v4}) == "create_node(_c_u-lock-) list");  // deleted by someone else: a new node
    BOOST_TEST(r > create_round);
    BOOST_TEST(m.node().empty());
    m.on_created(r, ok, own_path, 100);
    const auto dup_after = seq_name(prefix, 7);  // a create the server applied twice
    BOOST_TEST(listed({seq_name("_c_v-lock-", 6), dup_after, own}) ==
               "delete_node(" + dup_after + ") acquired");
    // A duplicate ahead of us: deleted, and watched like any predecessor until its delete lands.
    remake(contender_kind::exclusive);
    created();
    const auto dup_before = seq_name(prefix, 3);
    BOOST_TEST(listed({own, dup_before}) == "delete_node(" + dup_before + ") get_data(" + own + ") get_data(" + dup_before + ") waiting");
}

BOOST_FIXTURE_TEST_CASE(a_foreign_schema_fails_and_deletes_our_node, fixture)
{
    created();
    auto out = m.on_listed(r, listing::place, ok, {own, "_c_x-__WRIT__0000000001"});
    BOOST_TEST(show(out) == "schema_found drop_watch drop_watch delete_node(" + own + ") failed");
    BOOST_TEST(out[0].path.find("read/write") != std::string::npos);
    BOOST_TEST(failure(out) == error_code(zerr::error::schema_mismatch));
    BOOST_TEST(m.finished());
}

// Issue 48.5: an election's candidate waiting when a Curator LeaderLatch node joined its path was granted
// on its predecessor's deletion, without a listing, and led beside the latch. With grant_only_on_listing
// the last deletion lists the directory first: the latch node is seen, and the campaign refused.
BOOST_FIXTURE_TEST_CASE(a_candidate_holds_only_on_a_listing_that_shows_no_other_recipe, fixture)
{
    m.grant_only_on_listing();
    created();
    auto out = m.on_listed(r, listing::place, ok, {v4, own});
    BOOST_TEST(show(out) == "get_data(" + own + ") get_data(" + v4 + ") waiting");
    m.on_data(r, watch_slot::predecessor, ok, 40);
    out = m.on_watch_fired(r, watch_slot::predecessor, ok, wet::deleted);
    BOOST_TEST(show(out) == "drop_watch list");  // not acquired: the listing decides
    BOOST_TEST(!m.held());
    const auto latch = seq_name("_c_z-latch-", 7);  // joined behind us while we waited
    out = m.on_listed(r, listing::place, ok, {own, latch});
    BOOST_TEST(show(out) == "schema_found drop_watch drop_watch delete_node(" + own + ") failed");
    BOOST_TEST(failure(out) == error_code(zerr::error::schema_mismatch));
    BOOST_TEST(!m.held());
}

// A node ahead whose deletion is heard after a reconnect: the server fires what the client missed in no
// particular order, so our own node may have been deleted first (by someone else, while we were away) and
// its event come later. The waiter holds only on a listing that still shows its node; else it queues again.
// Failed before: the deletion made it holder at once, a guard on a node already gone (found by the
// simulation's composed workload, seed 8).
BOOST_FIXTURE_TEST_CASE(a_node_ahead_gone_after_a_reconnect_is_held_only_on_a_listing, fixture)
{
    created();
    show(m.on_listed(r, listing::place, ok, {v4, own}));
    show(m.on_data(r, watch_slot::predecessor, ok, 40));
    auto out = m.on_watch_fired(r, watch_slot::predecessor, ok, wet::deleted, true);
    BOOST_TEST(show(out) == "drop_watch list");
    BOOST_TEST(!m.held());
    out = m.on_listed(r, listing::place, ok, {});  // our node is gone too: queue again with a new one
    BOOST_TEST(!m.held());
    BOOST_TEST(show(out).find("create") != std::string::npos, show(out));
}

BOOST_FIXTURE_TEST_CASE(a_node_ahead_gone_after_a_reconnect_is_held_on_a_listing_that_shows_ours, fixture)
{
    created();
    show(m.on_listed(r, listing::place, ok, {v4, own}));
    show(m.on_data(r, watch_slot::predecessor, ok, 40));
    BOOST_TEST(show(m.on_watch_fired(r, watch_slot::predecessor, ok, wet::deleted, true)) == "drop_watch list");
    show(m.on_listed(r, listing::place, ok, {own}));
    BOOST_TEST(m.held());
}

// Our own node read first in the wait's round: gone, its answer comes before the nodes ahead are found
// gone too, and makes the waiter queue again instead of holding.
BOOST_FIXTURE_TEST_CASE(our_node_found_gone_before_the_nodes_ahead_queues_again, fixture)
{
    created();
    show(m.on_listed(r, listing::place, ok, {v4, own}));
    const auto round = r;
    BOOST_TEST(show(m.on_data(round, watch_slot::waiting_own, no_node, 0)) == "list");
    BOOST_TEST(m.on_data(round, watch_slot::predecessor, no_node, 0).empty());  // a round gone by
    BOOST_TEST(!m.held());
}

BOOST_FIXTURE_TEST_CASE(a_candidate_granted_on_a_clean_listing_holds, fixture)
{
    m.grant_only_on_listing();
    auto out = m.start(true);  // a sequence proof is no listing: the listing is pipelined all the same
    BOOST_TEST(show(out) == "create_node(_c_u-lock-) list");
    BOOST_TEST(m.on_created(r, ok, own_path, 100, true).empty());
    BOOST_TEST(show(m.on_listed(r, listing::place, ok, {v4, own})) == "get_data(" + own + ") get_data(" + v4 + ") waiting");
    m.on_data(r, watch_slot::predecessor, ok, 40);
    BOOST_TEST(show(m.on_watch_fired(r, watch_slot::predecessor, ok, wet::deleted)) == "drop_watch list");
    BOOST_TEST(show(m.on_listed(r, listing::place, ok, {own})) == "acquired");
    BOOST_TEST(m.held());
}

BOOST_FIXTURE_TEST_CASE(a_holding_reader_lingers_beside_readers_but_not_before_a_writer, fixture)
{
    remake(contender_kind::reader, true, true);
    created();
    show(m.on_listed(r, listing::place, ok, {own}));
    const auto reader_after = seq_name("_c_v-__READ__", 7), writer_after = seq_name("_c_v-__WRIT__", 8);
    const auto writer_before = seq_name("_c_v-__WRIT__", 2);  // (gone by now in a real listing; ahead anyway)
    BOOST_TEST(show(m.on_listed(0, listing::followers, ok, {own, reader_after})) == "await_watch[followers] followers_none");
    BOOST_TEST(show(m.on_listed(0, listing::followers, ok, {writer_before, own})) ==
               "await_watch[followers] followers_none");
    BOOST_TEST(show(m.on_listed(0, listing::followers, ok, {own, reader_after, writer_after})) == "followers_waiting");
}

BOOST_FIXTURE_TEST_CASE(own_node_deleted_while_held_is_lost, fixture)
{
    hold();
    BOOST_TEST(show(m.on_data(0, watch_slot::own, conn_loss, 0)) == "await_connected[watch_own] waiting");
    BOOST_TEST(show(m.on_reconnected(resume::watch_own, true)) == "get_data(" + own + ")");
    BOOST_TEST(show(m.on_data(0, watch_slot::own, ok, 100)) == "await_watch[own]");
    BOOST_TEST(show(m.on_watch_fired(0, watch_slot::own, ok, wet::data_changed)) == "get_data(" + own + ")");
    show(m.on_data(0, watch_slot::own, ok, 100));  // keeps watching
    // A watch ended by the session's end, or a reconnect that never came: the queue hears the session.
    BOOST_TEST(m.on_watch_fired(0, watch_slot::own, zk_errc::session_expired, wet::deleted).empty());
    BOOST_TEST(m.on_reconnected(resume::watch_own, false).empty());
    auto out = m.on_watch_fired(0, watch_slot::own, ok, wet::deleted);
    BOOST_TEST(show(out) == "lost");
    BOOST_TEST(out[0].ec == error_code(zerr::error::lock_node_deleted));
    remake(contender_kind::exclusive);  // already gone when the watch was to be set
    hold();
    out = m.on_data(0, watch_slot::own, no_node, 0);
    BOOST_TEST(show(out) == "lost");
    BOOST_TEST(out[0].ec == error_code(zerr::error::lock_node_deleted));
}

BOOST_FIXTURE_TEST_CASE(reader_uses_read_nodes_and_waits_only_for_writers, fixture)
{
    remake(contender_kind::reader);
    BOOST_TEST(show(m.start()) == "create_node(_c_u-__READ__) list");
    BOOST_TEST(m.on_created(r, ok, own_path, 100).empty());
    const std::string w3 = "_c_a-__WRIT__0000000003", r4 = "_c_b-__READ__0000000004", w6 = "_c_c-__WRIT__0000000006";
    // The nearest writer ahead, not the reader just ahead; the writer behind does not count.
    BOOST_TEST(listed({w6, r4, own, w3}) == "get_data(" + own + ") get_data(" + w3 + ") waiting");
    show(m.on_data(r, watch_slot::predecessor, ok, 30));
    const auto fired = m.on_watch_fired(r, watch_slot::predecessor, ok, wet::deleted);
    BOOST_TEST(show(fired) == "drop_watch acquired");  // the wait's watches go
    remake(contender_kind::reader);
    created();
    BOOST_TEST(listed({r4, own, w6}) == "acquired");  // behind readers only
}

BOOST_FIXTURE_TEST_CASE(writer_uses_write_nodes_and_waits_for_readers, fixture)
{
    remake(contender_kind::writer);
    BOOST_TEST(show(m.start()) == "create_node(_c_u-__WRIT__) list");
    BOOST_TEST(m.on_created(r, ok, own_path, 100).empty());
    const std::string r4 = "_c_b-__READ__0000000004";
    BOOST_TEST(listed({own, r4}) == "get_data(" + own + ") get_data(" + r4 + ") waiting");
    remake(contender_kind::writer);  // a mutex node in a read/write directory is another schema
    created();
    auto out = m.on_listed(r, listing::place, ok, {own, "_c_x-lock-0000000001"});
    BOOST_TEST(failure(out) == error_code(zerr::error::schema_mismatch));
}

BOOST_FIXTURE_TEST_CASE(holder_watches_for_followers_when_asked, fixture)
{
    remake(contender_kind::exclusive, true, true);
    created();
    auto out = m.on_listed(r, listing::place, ok, {own});
    BOOST_TEST(show(out) == "list[followers] get_data(" + own + ") acquired");
    BOOST_TEST((out[0].slot == watch_slot::followers));
    BOOST_TEST(show(m.on_listed(0, listing::followers, ok, {own, "config", "locks"})) ==
               "await_watch[followers] followers_none");
    // The change is said at once (the queue pauses hand-offs beyond its bound), before the listing's answer.
    BOOST_TEST(show(m.on_watch_fired(0, watch_slot::followers, ok, wet::children_changed)) ==
               "list[followers] followers_changed");
    BOOST_TEST(show(m.on_listed(0, listing::followers, ok, {own, seq_name("_c_v-lock-", 9)})) == "followers_waiting");
    BOOST_TEST(show(m.on_listed(0, listing::followers, conn_loss, {})) == "await_connected[watch_followers] waiting");
    BOOST_TEST(show(m.on_reconnected(resume::watch_followers, true)) == "list[followers]");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_contender_machine
