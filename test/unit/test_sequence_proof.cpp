// The proof that a new node is first from its create's sequence alone (core/sequence_proof.hpp), and the
// contender machine's create without a listing that it allows. No server: each case is the order of
// answers a session can see.
#include "contender_fixture.hpp"
#include "recipes/core/sequence_proof.hpp"

#include <zklock/detail/sequence.hpp>

#include <limits>

namespace unit_sequence_proof {  // a namespace of its own: the unit tests compile as one translation unit

using namespace contender_test;

namespace {

constexpr std::uint64_t conn = 1;

/// A proof at the point where node `n` held the lock, went back to ZooKeeper and its delete answered.
sequence_proof after_a_cycle(std::int32_t n)
{
    sequence_proof p;
    p.watching(conn);
    p.created(n, conn);
    p.held(n);
    p.released(n);
    p.deleted(n);
    return p;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sequence_proof_tests)

BOOST_AUTO_TEST_CASE(the_next_sequence_after_our_deleted_holder_is_first)
{
    auto p = after_a_cycle(7);
    BOOST_TEST(p.expects(conn));
    BOOST_TEST(p.created(8, conn));
    // ... and that node starts the next proof once it holds.
    p.held(8);
    p.released(8);
    p.deleted(8);
    BOOST_TEST(p.created(9, conn));
}

BOOST_AUTO_TEST_CASE(a_node_created_by_someone_else_in_between_breaks_it)
{
    auto p = after_a_cycle(7);
    BOOST_TEST(!p.created(9, conn));  // 8 went to another contender: it may be ahead of us
    p.held(9);                        // held after a listing: the next cycle may be proven again
    p.released(9);
    p.deleted(9);
    BOOST_TEST(p.created(10, conn));
}

BOOST_AUTO_TEST_CASE(after_a_miss_creates_go_with_their_listing_until_one_would_have_been_proven)
{
    // Others create between our cycles without queueing behind us (the other side of a read/write lock):
    // a create by sequence would miss every time and pay its listing a round trip late.
    auto p = after_a_cycle(7);
    BOOST_TEST(p.expects(conn));
    BOOST_TEST(!p.created(9, conn));  // by sequence, and missed
    p.held(9);
    p.released(9);
    p.deleted(9);
    BOOST_TEST(!p.expects(conn));     // so the next create goes with its listing,
    BOOST_TEST(!p.created(11, conn));  // which shows that the proof would have missed again,
    p.held(11);
    p.released(11);
    p.deleted(11);
    BOOST_TEST(!p.expects(conn));
    BOOST_TEST(!p.next(conn).has_value());
    BOOST_TEST(p.created(12, conn));  // until one follows our node directly: the proof would have held,
    p.held(12);
    p.released(12);
    p.deleted(12);
    BOOST_TEST(p.expects(conn));  // and the next goes by sequence again
    BOOST_TEST((p.next(conn) == std::optional<std::int32_t>(13)));
}

BOOST_AUTO_TEST_CASE(a_create_with_no_held_node_to_follow_leaves_the_miss_as_it_was)
{
    auto p = after_a_cycle(7);
    BOOST_TEST(!p.created(9, conn));  // a miss
    p.held(9);
    p.contended();  // someone queued behind 9: nothing to follow
    p.released(9);
    p.deleted(9);
    BOOST_TEST(!p.created(10, conn));  // (would not be proven: no held node) tells nothing either way
    p.held(10);
    p.released(10);
    p.deleted(10);
    BOOST_TEST(!p.expects(conn));  // still after a miss
    auto q = after_a_cycle(7);
    q.contended();
    q.released(7);
    q.deleted(7);
    BOOST_TEST(!q.created(9, conn));  // not a miss: no proof was possible
    q.held(9);
    q.released(9);
    q.deleted(9);
    BOOST_TEST(q.expects(conn));
}

BOOST_AUTO_TEST_CASE(our_delete_must_have_answered_before_the_create)
{
    sequence_proof p;
    p.watching(conn);
    p.created(7, conn);
    p.held(7);
    p.released(7);
    BOOST_TEST(p.expects(conn));       // worth trying: the delete's answer comes before the create's
    BOOST_TEST(!p.created(8, conn));  // but here it did not (a delete retried after a reconnect)
    sequence_proof never_released;
    never_released.watching(conn);
    never_released.created(7, conn);
    never_released.held(7);
    never_released.deleted(7);  // a delete answered without a release asked (not ours to count)
    BOOST_TEST(!never_released.expects(conn));
    BOOST_TEST(!never_released.created(8, conn));
}

BOOST_AUTO_TEST_CASE(a_node_that_never_held_proves_nothing)
{
    sequence_proof p;
    p.watching(conn);
    p.created(7, conn);  // queued behind someone, then given up
    p.released(7);
    p.deleted(7);
    BOOST_TEST(!p.expects(conn));
    BOOST_TEST(!p.created(8, conn));
}

BOOST_AUTO_TEST_CASE(the_directory_watch_must_be_set_before_the_held_node_was_created)
{
    sequence_proof p;
    p.created(7, conn);  // no watch yet: the directory may have been made again before this node
    p.watching(conn);
    p.held(7);
    p.released(7);
    p.deleted(7);
    BOOST_TEST(!p.expects(conn));
    BOOST_TEST(!p.created(8, conn));
}

BOOST_AUTO_TEST_CASE(a_fired_directory_watch_ends_every_proof)
{
    // A container reaped once empty and made again restarts the count: 8 may then be anybody's.
    auto p = after_a_cycle(7);
    p.directory_changed();
    BOOST_TEST(!p.expects(conn));
    BOOST_TEST(!p.created(8, conn));
    p.watching(conn);  // watched again: a proof starts from the next node held
    BOOST_TEST(!p.created(8, conn));
    p.held(8);
    p.released(8);
    p.deleted(8);
    BOOST_TEST(p.created(9, conn));
}

BOOST_AUTO_TEST_CASE(a_new_connection_ends_every_proof)
{
    auto p = after_a_cycle(7);
    BOOST_TEST(!p.expects(conn + 1));
    BOOST_TEST(!p.created(8, conn + 1));
    BOOST_TEST(!p.watched(conn + 1));
}

BOOST_AUTO_TEST_CASE(a_watch_asked_again_on_a_new_connection_starts_from_nothing)
{
    // The re-asked watch is armed on c + 1, but whatever happened to the directory while the session was
    // away may have been told to the dropped watch only: what c proved is gone.
    auto p = after_a_cycle(7);
    p.watching(conn + 1);
    BOOST_TEST(p.watched(conn + 1));
    BOOST_TEST(!p.watched(conn));
    BOOST_TEST(!p.expects(conn + 1));
    BOOST_TEST(!p.created(8, conn + 1));
    // ... and a proof starts again from the next node held on c + 1.
    p.held(8);
    p.released(8);
    p.deleted(8);
    BOOST_TEST(p.created(9, conn + 1));
}

BOOST_AUTO_TEST_CASE(an_answer_on_the_next_connection_ends_it)
{
    auto p = after_a_cycle(7);
    BOOST_TEST(!p.created(8, conn + 1));  // the watch was answered on conn
    p.held(8);                            // not covered: it starts nothing
    p.released(8);
    p.deleted(8);
    BOOST_TEST(!p.expects(conn));
    BOOST_TEST(!p.created(9, conn));
}

BOOST_AUTO_TEST_CASE(a_watch_set_on_one_connection_proves_nothing_for_the_next)
{
    sequence_proof p;
    p.watching(conn);
    p.created(7, conn + 1);  // created after a reconnect, the watch still of the old connection
    p.held(7);
    p.released(7);
    p.deleted(7);
    BOOST_TEST(!p.expects(conn + 1));
    BOOST_TEST(!p.created(8, conn + 1));
}

BOOST_AUTO_TEST_CASE(an_answer_whose_connection_is_not_known_proves_nothing)
{
    auto p = after_a_cycle(7);
    BOOST_TEST(!p.created(8, std::nullopt));
    // The connection an answer came on: the one it was sent on, if still current when its handler runs.
    struct row {
        std::uint64_t sent_on, current;
        std::optional<std::uint64_t> on;
    };
    const row rows[] = {
        {1, 1, 1},             // sent and handled on one connection
        {1, 2, std::nullopt},  // sent while disconnected (out on 2), or a reconnect before the handler ran
        {3, 5, std::nullopt},
    };
    for (const auto& r : rows) BOOST_TEST((answered_on(r.sent_on, r.current) == r.on), r.sent_on << "," << r.current);
}

BOOST_AUTO_TEST_CASE(the_directory_watched_again_on_the_same_connection_keeps_the_proof)
{
    auto p = after_a_cycle(7);
    p.watching(conn);
    BOOST_TEST(p.created(8, conn));
}

BOOST_AUTO_TEST_CASE(a_follower_seen_behind_the_holder_ends_the_proof)
{
    sequence_proof p;
    p.watching(conn);
    p.created(7, conn);
    p.held(7);
    p.contended();
    p.released(7);
    p.deleted(7);
    BOOST_TEST(!p.expects(conn));
    BOOST_TEST(!p.created(8, conn));
}

BOOST_AUTO_TEST_CASE(the_sequence_wraps_as_a_java_int)
{
    constexpr auto top = std::numeric_limits<std::int32_t>::max();
    auto p = after_a_cycle(top);
    BOOST_TEST(p.created(std::numeric_limits<std::int32_t>::min(), conn));
    auto q = after_a_cycle(7);
    BOOST_TEST(!q.created(7, conn));  // not a successor (a second answer for the same node)
    auto r = after_a_cycle(7);
    BOOST_TEST(!r.created(6, conn));
}

BOOST_AUTO_TEST_CASE(the_next_sequence_is_predicted_only_when_a_create_is_expected_first)
{
    sequence_proof p;
    BOOST_TEST(!p.next(conn).has_value());
    auto q = after_a_cycle(7);
    BOOST_TEST((q.next(conn) == std::optional<std::int32_t>(8)));
    BOOST_TEST(!q.next(conn + 1).has_value());  // another connection proves nothing
    q.contended();
    BOOST_TEST(!q.next(conn).has_value());
    auto w = after_a_cycle(INT32_MAX);
    BOOST_TEST((w.next(conn) == std::optional<std::int32_t>(INT32_MIN)));  // the count wraps as Java's int
}

BOOST_AUTO_TEST_CASE(a_predicted_name_is_the_one_zookeeper_gives)
{
    BOOST_TEST(sequence_suffix(42) == "0000000042");
    BOOST_TEST(sequence_suffix(-5) == "-000000005");
    BOOST_TEST(sequence_suffix(INT32_MIN) == "-2147483648");
    for (std::int32_t seq : {0, 1, 42, 2147483647, -1, -5, -123456789, INT32_MIN})
        BOOST_TEST((parse_sequence("_c_u-lock-" + sequence_suffix(seq)) == std::optional<std::int32_t>(seq)), seq);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(contender_by_sequence_tests)

BOOST_FIXTURE_TEST_CASE(a_create_proven_first_holds_without_a_listing, fixture)
{
    auto out = m.start(true);
    BOOST_TEST(show(out) == "create_node(_c_u-lock-)");
    BOOST_TEST(show(m.on_created(r, ok, own_path, 100, true)) == "acquired");
    BOOST_TEST(m.held());
    BOOST_TEST(m.zxid() == 100);
}

BOOST_FIXTURE_TEST_CASE(only_a_create_without_a_listing_behind_it_may_be_batched, fixture)
{
    auto out = m.start(true);
    BOOST_TEST(out[0].batchable);  // nothing is pipelined behind it: it may wait for the turn's other creates
    remake(contender_kind::exclusive);
    out = m.start();
    BOOST_TEST(show(out) == "create_node(_c_u-lock-) list");
    BOOST_TEST(!out[0].batchable);  // the listing must see the node: the create goes first, alone
}

BOOST_FIXTURE_TEST_CASE(a_batched_create_proven_first_reads_its_token_before_it_holds, fixture)
{
    show(m.start(true));
    auto out = m.on_created(r, ok, own_path, 0, true);  // made in a multi: no czxid came back
    BOOST_TEST(show(out) == "get_data(" + own + ")");
    BOOST_TEST((out[0].slot == watch_slot::none));  // a read alone: no watch to pay a notification for
    BOOST_TEST(m.held());
    BOOST_TEST(m.zxid() == 0);
    BOOST_TEST(show(m.on_data(0, watch_slot::none, ok, 100, {}, 1)) == "acquired");
    BOOST_TEST(m.zxid() == 100);
    BOOST_TEST(show(m.watch_own_node()) == "get_data(" + own + ")");  // the watch is still set when asked
}

BOOST_FIXTURE_TEST_CASE(a_batched_create_with_the_own_watch_wanted_reads_the_token_with_it, fixture)
{
    BOOST_TEST(m.watch_own_node().empty());  // not held yet
    show(m.start(true));
    auto out = m.on_created(r, ok, own_path, 0, true);
    BOOST_TEST(show(out) == "get_data(" + own + ")");
    BOOST_TEST((out[0].slot == watch_slot::own));  // one read does both
    BOOST_TEST(show(m.on_data(0, watch_slot::own, ok, 100)) == "await_watch[own] acquired");
    BOOST_TEST(m.zxid() == 100);
}

BOOST_FIXTURE_TEST_CASE(a_batched_node_deleted_before_its_token_is_read_is_lost_unannounced, fixture)
{
    show(m.start(true));
    show(m.on_created(r, ok, own_path, 0, true));
    BOOST_TEST(show(m.on_data(0, watch_slot::none, no_node, 0, {}, 1)) == "lost");  // never "acquired": the queue queues again
    BOOST_TEST(m.zxid() == 0);
}

BOOST_FIXTURE_TEST_CASE(a_token_read_that_loses_its_connection_reads_again_with_the_watch, fixture)
{
    show(m.start(true));
    show(m.on_created(r, ok, own_path, 0, true));
    BOOST_TEST(show(m.on_data(0, watch_slot::none, conn_loss, 0, {}, 1)) == "await_connected[watch_own] waiting");
    BOOST_TEST(show(m.on_reconnected(resume::watch_own, true)) == "get_data(" + own + ")");
    BOOST_TEST(show(m.on_data(0, watch_slot::own, ok, 100)) == "await_watch[own] acquired");
    BOOST_TEST(m.watch_own_node().empty());  // the watch is set already
}

BOOST_FIXTURE_TEST_CASE(a_batched_create_not_proven_first_reads_its_token_beside_the_listing, fixture)
{
    show(m.start(true));
    auto out = m.on_created(r, ok, own_path, 0, false);  // someone else's node came in between
    BOOST_TEST(show(out) == "list get_data(" + own + ")");  // the token read does not wait for the turn
    BOOST_TEST((out[1].slot == watch_slot::none));
    const auto token_read = out[1];
    const auto v4 = seq_name("_c_v-lock-", 4);
    show(m.on_listed(r, listing::place, ok, {v4, own}));
    BOOST_TEST(m.on_data(0, watch_slot::none, ok, 100, {}, token_read.index).empty());  // noted while queued
    m.on_data(r, watch_slot::predecessor, ok, 40);
    BOOST_TEST(show(m.on_watch_fired(r, watch_slot::predecessor, ok, wet::deleted)) == "drop_watch acquired");
    BOOST_TEST(m.zxid() == 100);  // no read on the way to holding
}

BOOST_FIXTURE_TEST_CASE(a_token_read_for_an_earlier_node_is_ignored, fixture)
{
    show(m.start(true));
    const auto created = m.on_created(r, ok, own_path, 0, false);
    BOOST_TEST(show(created) == "list get_data(" + own + ")");
    const auto token_read = created[1];
    // Our node was deleted while we queued: a new node, created with its listing, has its czxid.
    BOOST_TEST(show(m.on_listed(r, listing::place, ok, {"config"})) == "create_node(_c_u-lock-) list");
    const auto own6 = seq_name(prefix, 6);
    m.on_created(r, ok, dir + "/" + own6, 600);
    BOOST_TEST(m.on_data(0, watch_slot::none, ok, 100, {}, token_read.index).empty());
    BOOST_TEST(show(m.on_listed(r, listing::place, ok, {own6})) == "acquired");
    BOOST_TEST(m.zxid() == 600);  // not the first node's
}

BOOST_FIXTURE_TEST_CASE(a_create_not_proven_first_is_listed_then, fixture)
{
    show(m.start(true));
    auto out = m.on_created(r, ok, own_path, 100, false);
    BOOST_TEST(show(out) == "list");
    const auto v4 = seq_name("_c_v-lock-", 4);
    BOOST_TEST(show(m.on_listed(r, listing::place, ok, {v4, own})) == "get_data(" + own + ") get_data(" + v4 + ") waiting");
}

BOOST_FIXTURE_TEST_CASE(a_failed_create_by_sequence_recovers_with_listings, fixture)
{
    show(m.start(true));
    auto out = m.on_created(r, no_node, "", 0);
    BOOST_TEST(show(out) == "exists(/locks) exists");  // the directory was removed
    m.on_exists(r, 0, ok, true);
    out = m.on_exists(r, 1, ok, true);
    BOOST_TEST(show(out) == "create_node(_c_u-lock-) list");  // later creates go with their listing
    BOOST_TEST(m.on_created(r, ok, own_path, 100, true).empty());  // a proof is not asked for here
    BOOST_TEST(show(m.on_listed(r, listing::place, ok, {own})) == "acquired");
}

BOOST_FIXTURE_TEST_CASE(without_permission_checked_the_start_lists_as_always, fixture)
{
    remake(contender_kind::exclusive, false);
    BOOST_TEST(show(m.start(true)) == "probe_delete(zklock-permission-probe) list[permissions]");
}

BOOST_FIXTURE_TEST_CASE(a_waiter_gone_while_the_create_by_sequence_flies_cleans_up, fixture)
{
    show(m.start(true));
    m.abandon();
    BOOST_TEST(show(m.on_created(r, ok, own_path, 100, true)) == "delete_node(" + own + ")");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_sequence_proof
