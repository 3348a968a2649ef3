// The coroutines of one session queued behind one node, no server: a lost node, a disconnection, the end
// of the session, a failed contender, teardown. (Grants and hand-offs: test_local_queue.cpp.) Each event is
// preceded by observe(connected, end, stale), as the shell (recipes/lock_queue.cpp) does.
#include "local_queue_fixture.hpp"

namespace unit_local_queue_loss {  // a namespace of its own: the unit tests compile as one translation unit

using namespace local_queue_test;

BOOST_AUTO_TEST_SUITE(local_queue_tests)

BOOST_FIXTURE_TEST_CASE(loss_while_holding_notifies_listeners, fixture)
{
    const auto h = hold_first();
    BOOST_TEST(kinds(at().wait_lost(100, h)) == "watch_own");  // a listener: the node is watched at once
    BOOST_TEST(at().wait_lost(101, h).empty());                 // ... once
    BOOST_TEST(kinds(at().cancel_lost(101)) == "abort_lost_waiter");
    auto out = at().on_lost(deleted);
    BOOST_TEST(kinds(out) == "cancel_loss_clock notify_lost");
    BOOST_TEST(out[1].id == 100u);
    BOOST_TEST(out[1].ec == deleted);
    BOOST_TEST(q.lost(h) == deleted);
    out = at().wait_lost(101, h);  // a loss already known is told at once
    BOOST_TEST(kinds(out) == "notify_lost");
    BOOST_TEST(out[0].ec == deleted);
    BOOST_TEST(at().enter(h) == 0u);  // no second hold on a lost node
    out = release(h);
    BOOST_TEST(kinds(out) == "cancel_loss_clock release_done release_contender");
    BOOST_TEST(out[1].ec == deleted);  // the releaser hears the loss
    BOOST_TEST(!out[2].answer);
}

BOOST_FIXTURE_TEST_CASE(loss_listeners_of_a_released_holder_are_aborted, fixture)
{
    const auto h = hold_first();
    at().wait_lost(100, h);
    at().wait_lost(101, h);
    BOOST_TEST(kinds(at().cancel_lost(101)) == "abort_lost_waiter");
    BOOST_TEST(at().cancel_lost(101).empty());
    auto out = release(h);
    BOOST_TEST(the(out, Q::abort_lost_waiter).id == 100u);
    BOOST_TEST(kinds(at().wait_lost(102, h)) == "abort_lost_waiter");  // not a holder any more
}

// One reason per loss: the first one reported is what every reporter says, then and later (issue 48.6:
// async_wait_lost said lock_node_deleted, lost() polled later said session_expired).
BOOST_FIXTURE_TEST_CASE(the_first_loss_reason_reported_stays, fixture)
{
    const auto h = hold_first();
    at().wait_lost(100, h);
    auto out = at().on_uncertain();
    BOOST_TEST(the(out, Q::notify_lost).ec == uncertain);
    BOOST_TEST(q.lost(h) == uncertain);
    BOOST_TEST(at().on_lost(deleted).empty());  // told already: nobody hears a second reason
    BOOST_TEST(q.lost(h) == uncertain);
    BOOST_TEST(the(at().wait_lost(101, h), Q::notify_lost).ec == uncertain);

    end = expired;  // the server deleted the node because it expired the session
    connected = false;
    at().on_session_final(expired);
    BOOST_TEST(q.lost(h) == uncertain);
    out = release(h);
    BOOST_TEST(kinds(out) == "cancel_loss_clock release_done");  // the contender went with the session
    BOOST_TEST(out[1].ec == uncertain);
}

BOOST_FIXTURE_TEST_CASE(a_deleted_node_stays_the_reason_after_the_session_ends, fixture)
{
    const auto h = hold_first();
    at().on_lost(deleted);
    BOOST_TEST(the(at().wait_lost(100, h), Q::notify_lost).ec == deleted);  // told at once: deleted
    end = expired;
    connected = false;
    at().on_session_final(expired);
    BOOST_TEST(q.lost(h) == deleted);
    BOOST_TEST(the(at().wait_lost(101, h), Q::notify_lost).ec == deleted);
}

BOOST_FIXTURE_TEST_CASE(the_session_end_is_the_reason_when_nothing_was_reported_before, fixture)
{
    const auto h = hold_first();
    end = expired;
    connected = false;
    BOOST_TEST(at().lost(h) == expired);  // known before the listeners hear of it
    at().on_session_final(expired);
    BOOST_TEST(q.lost(h) == expired);
    BOOST_TEST(the(at().wait_lost(100, h), Q::notify_lost).ec == expired);
}

// A node that became ours while the session was away may have been deleted meanwhile by someone else
// (`zklock break`, an operator): a grant on it would hand out a guard on a node already gone, with an
// older token than the holders' since. On reconnect the node is read first (behind a sync), and granted
// only if it is there. Failed before: the grant went at once on reconnect (the simulation's composed
// seed 1510 handed out token 46 after 61 to 66).
BOOST_FIXTURE_TEST_CASE(node_acquired_while_disconnected_is_granted_on_reconnect_once_found_there, fixture)
{
    acquire(1);
    connected = false;
    BOOST_TEST(at().on_acquired().empty());  // the node may already be lost: no grant yet
    BOOST_TEST(!q.has_holders());
    connected = true;
    const auto out = at().on_connected();
    BOOST_TEST(kinds(out) == "confirm_node");
    BOOST_TEST(at().on_connected().empty());  // one read at a time
    BOOST_TEST(!q.has_holders());
    BOOST_TEST(granted(at().on_node_confirmed(the(out, Q::confirm_node).seq, {})) == ids{1});
}

// Waiter 1's node became ours while the session was away, and the session is back: the seq of the read
// that the queue asks for before granting (confirm_node).
std::uint64_t acquired_while_away(fixture& f)
{
    f.acquire(1);
    f.connected = false;
    f.at().on_acquired();
    f.connected = true;
    return the(f.at().on_connected(), Q::confirm_node).seq;
}

BOOST_FIXTURE_TEST_CASE(node_acquired_while_disconnected_and_deleted_meanwhile_queues_again, fixture)
{
    const auto node = acquired_while_away(*this);
    BOOST_TEST(kinds(at().on_node_confirmed(node, zklock::zk_errc::no_node)) == "release_contender start_contender");
    BOOST_TEST(!q.has_holders());
}

BOOST_FIXTURE_TEST_CASE(a_node_confirmation_lost_with_the_connection_is_asked_again, fixture)
{
    const auto node = acquired_while_away(*this);
    connected = false;
    BOOST_TEST(at().on_node_confirmed(node, zklock::zk_errc::connection_loss).empty());
    connected = true;
    BOOST_TEST(kinds(at().on_connected()) == "confirm_node");
}

BOOST_FIXTURE_TEST_CASE(a_late_confirmation_of_a_node_given_up_is_ignored, fixture)
{
    const auto node = acquired_while_away(*this);
    BOOST_TEST(kinds(at().cancel(1, timeout)) == "fail_waiter release_contender");
    BOOST_TEST(at().on_node_confirmed(node, {}).empty());
    BOOST_TEST(kinds(acquire(2)) == "start_contender");
}

BOOST_FIXTURE_TEST_CASE(node_acquired_while_disconnected_goes_if_lost_or_unwanted, fixture)
{
    acquire(1);
    connected = false;
    at().on_acquired();
    connected = true;
    BOOST_TEST(kinds(at().on_lost(deleted)) == "release_contender start_contender");  // nobody held it: again
    connected = false;
    at().on_acquired();
    BOOST_TEST(kinds(at().cancel(1, timeout)) == "fail_waiter release_contender");  // it would block everyone
}

// No acquire completes with a guard whose loss is already known: while the loss clock has run out (no
// answer through the leader within the grace), a grant waits for a sync's answer, and the waiter keeps
// its place (the node stays).
BOOST_FIXTURE_TEST_CASE(a_grant_on_reconnect_after_the_grace_waits_for_a_confirmed_touch, fixture)
{
    acquire(1);
    connected = false;
    BOOST_TEST(at().on_acquired().empty());
    connected = true;
    stale = true;  // away longer than the grace
    BOOST_TEST(kinds(at().on_connected()) == "confirm_touch");
    BOOST_TEST(!q.has_holders());
    BOOST_TEST(at().on_connected().empty());  // one sync at a time
    stale = false;  // the sync was answered through the leader
    const auto out = at().on_touch_confirmed();  // and the node, which became ours while away, is read
    BOOST_TEST(kinds(out) == "confirm_node");
    BOOST_TEST(kinds(at().on_node_confirmed(the(out, Q::confirm_node).seq, {})) == "grant arm_loss_clock start_own_watch_clock");
}

BOOST_FIXTURE_TEST_CASE(a_grant_is_held_wherever_it_would_come_from, fixture)
{
    stale = true;
    // The node becomes ours while connected.
    acquire(1);
    BOOST_TEST(kinds(at().on_acquired()) == "confirm_touch");
    stale = false;
    const auto h = holder(at().on_touch_confirmed(), 1);
    // A local hand-off: the releaser is done, the next waiter waits on the node, which stays.
    acquire(2);
    stale = true;
    BOOST_TEST(kinds(release(h)) == "confirm_touch release_done");
    stale = false;
    const auto h2 = holder(at().on_touch_confirmed(), 2);
    // Readers joining a held read node.
    remake(true, 10, false);
    acquire(3);
    at().on_acquired();
    stale = true;
    BOOST_TEST(kinds(acquire(4)) == "confirm_touch");
    stale = false;
    BOOST_TEST(granted(at().on_touch_confirmed()) == ids{4});
    (void)h2;
}

// A second hold (re-entry, downgrade) is a grant too: none while the loss clock has run out.
BOOST_FIXTURE_TEST_CASE(no_second_hold_while_the_loss_clock_has_run_out, fixture)
{
    const auto h = hold_first();
    stale = true;
    error_code why;
    BOOST_TEST(at().enter(h, &why) == 0u);
    BOOST_TEST(why == uncertain);
    BOOST_TEST(at().enter(12345, &why) == 0u);
    BOOST_TEST(why == error_code(zklock::error::not_held));  // not a holder: that first
    stale = false;
    why = {};
    BOOST_TEST(at().enter(h, &why) != 0u);
    BOOST_TEST(!why);
}

BOOST_FIXTURE_TEST_CASE(a_touch_still_stale_when_confirmed_is_asked_again, fixture)
{
    acquire(1);
    stale = true;
    at().on_acquired();
    BOOST_TEST(kinds(at().on_touch_confirmed()) == "confirm_touch");  // an answer slower than the grace, or none
    connected = false;                                                 // the sync failed with the connection
    BOOST_TEST(at().on_touch_confirmed().empty());
    connected = true;
    stale = false;  // the keepalive after the reconnect was answered
    BOOST_TEST(granted(at().on_connected()) == ids{1});
}

BOOST_FIXTURE_TEST_CASE(a_waiter_that_gives_up_while_its_grant_is_held_lets_the_node_go, fixture)
{
    acquire(1);
    stale = true;
    at().on_acquired();
    BOOST_TEST(kinds(at().cancel(1, timeout)) == "fail_waiter release_contender");
    stale = false;
    BOOST_TEST(at().on_touch_confirmed().empty());  // the late answer finds nobody
    BOOST_TEST(kinds(acquire(2)) == "start_contender");
}

BOOST_FIXTURE_TEST_CASE(no_local_handoff_while_disconnected, fixture)
{
    const auto h = hold_first();
    acquire(2);
    connected = false;
    BOOST_TEST(kinds(release(h)) == "cancel_loss_clock release_contender");  // the next node once connected
    connected = true;
    BOOST_TEST(kinds(at().on_connected()) == "start_contender");
}

BOOST_FIXTURE_TEST_CASE(session_final_fails_every_waiter, fixture)
{
    acquire(1);
    end = zerr::error::session_closed;
    connected = false;
    auto out = at().on_session_final(end);
    BOOST_TEST(kinds(out) == "cancel_loss_clock abandon_contender fail_waiter");
    BOOST_TEST(out[2].ec == end);
    remake(false, 10, false);  // and with a holder
    end = {};
    connected = true;
    const auto h = hold_first();
    acquire(2);
    acquire(3);
    end = expired;
    connected = false;
    out = at().on_session_final(expired);
    BOOST_TEST(kinds(out) == "cancel_loss_clock cancel_loss_clock abandon_contender fail_waiter fail_waiter");
    BOOST_TEST(out[3].id == 2u);
    BOOST_TEST(out[4].ec == expired);
    BOOST_TEST(q.waiting() == 0u);
    BOOST_TEST(q.lost(h) == expired);
}

BOOST_FIXTURE_TEST_CASE(contender_failure_fails_every_waiter, fixture)
{
    acquire(1);
    acquire(2);
    auto out = at().on_failed(zerr::error::schema_mismatch);
    BOOST_TEST(kinds(out) == "forget_contender fail_waiter fail_waiter");
    BOOST_TEST(out[2].ec == error_code(zerr::error::schema_mismatch));
    BOOST_TEST(kinds(acquire(3)) == "start_contender");
}

BOOST_FIXTURE_TEST_CASE(teardown_aborts_everything, fixture)
{
    const auto h = hold_first();
    acquire(2);
    at().wait_lost(100, h);
    auto out = at().teardown();
    BOOST_TEST(kinds(out) == "cancel_loss_clock abandon_contender fail_waiter abort_lost_waiter");
    BOOST_TEST(out[2].id == 2u);
    BOOST_TEST(out[2].ec == aborted);
    BOOST_TEST(out[3].id == 100u);
}

BOOST_FIXTURE_TEST_CASE(uncertain_without_holders_is_nothing, fixture)
{
    acquire(1);
    BOOST_TEST(at().on_uncertain().empty());
    BOOST_TEST(at().on_queued().empty());  // a plain waiter stays queued
}

BOOST_FIXTURE_TEST_CASE(every_holder_of_a_lost_node_hears_the_loss_at_its_release, fixture)
{
    remake(true, 10, false);
    acquire(1);
    acquire(2);
    const auto out = at().on_acquired();
    at().on_lost(deleted);
    BOOST_TEST(the(release(holder(out, 1)), Q::release_done).ec == deleted);  // not only the last one
    BOOST_TEST(the(release(holder(out, 2)), Q::release_done).ec == deleted);
}

BOOST_FIXTURE_TEST_CASE(a_readers_release_aborts_only_its_own_listeners, fixture)
{
    remake(true, 10, false);
    for (std::uint64_t id = 1; id <= 3; ++id) acquire(id);
    const auto out = at().on_acquired();
    for (std::uint64_t id = 1; id <= 3; ++id) {
        at().wait_lost(100 + id, holder(out, id));
        at().wait_revoked(200 + id, holder(out, id));
    }
    const auto r = release(holder(out, 2));
    BOOST_TEST(kinds(r) == "abort_lost_waiter abort_revoke_waiter release_done");
    BOOST_TEST(the(r, Q::abort_lost_waiter).id == 102u);
    BOOST_TEST(the(r, Q::abort_revoke_waiter).id == 202u);
    // The others' listeners are still there, oldest first, and hear the loss and the request.
    const auto lost = at().on_lost(deleted);
    BOOST_TEST(the(lost, Q::notify_lost, 0).id == 101u);
    BOOST_TEST(the(lost, Q::notify_lost, 1).id == 103u);
    const auto revoked = at().on_revoke_requested();
    BOOST_TEST(kinds(revoked) == "notify_revoked notify_revoked");
    BOOST_TEST(at().cancel_lost(101).empty());  // told already
}

BOOST_FIXTURE_TEST_CASE(a_held_node_is_watched_after_a_moment_or_at_once_for_a_listener, fixture)
{
    acquire(1);
    const auto out = at().on_acquired();
    BOOST_TEST(kinds(out) == "grant arm_loss_clock start_own_watch_clock");
    BOOST_TEST(kinds(at().on_own_watch_due()) == "watch_own");
    BOOST_TEST(at().on_own_watch_due().empty());  // once per node
    BOOST_TEST(at().wait_lost(100, holder(out, 1)).empty());
    release(holder(out, 1));
    BOOST_TEST(at().on_own_watch_due().empty());  // the node is gone
    // A new node: a listener asks at once, and the moment passing asks nothing more.
    acquire(2);
    const auto second = at().on_acquired();
    BOOST_TEST(kinds(at().wait_revoked(101, holder(second, 2))) == "watch_own");
    BOOST_TEST(at().on_own_watch_due().empty());
}

BOOST_FIXTURE_TEST_CASE(lingering_nodes_are_watched_from_the_start, fixture)
{
    for (const bool shared : {true, false}) {
        remake(shared, 10, true);
        acquire(1);
        const auto out = at().on_acquired();
        BOOST_TEST(kinds(out) == "grant arm_loss_clock");  // the shell's contender watches already
        BOOST_TEST(at().wait_lost(100, holder(out, 1)).empty());
        BOOST_TEST(at().on_own_watch_due().empty());
    }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_local_queue_loss
