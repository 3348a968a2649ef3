// The local queue when the session expires and a new one is opened under it (session_config::on_expiry):
// holders are told and cut off, the contender goes, and waiters wait for the new session's node or fail.
#include "local_queue_fixture.hpp"

namespace unit_local_queue_renewal {  // a namespace of its own: the unit tests compile as one translation unit

using namespace local_queue_test;

BOOST_AUTO_TEST_SUITE(local_queue_renewal_tests)

// Holder 1 (with a loss and a revocation listener), waiter 2, and a one look, when the session expires.
// Requeue: the holder hears session_expired and stays lost until it releases; the one look fails; waiter
// 2 waits, and gets a node of the new session once it is connected, its grants counted from zero.
BOOST_FIXTURE_TEST_CASE(renewal_cuts_holders_off_and_requeues_waiters, fixture)
{
    const auto h = hold_first();
    at().wait_lost(100, h);
    at().wait_revoked(200, h);
    acquire(2);
    acquire(3, true);  // a one look: not served while the lock is held, it fails at once
    connected = false;
    auto out = at().on_session_renewed(true);
    BOOST_TEST(kinds(out) == "cancel_loss_clock notify_lost abort_revoke_waiter abandon_contender");
    BOOST_TEST(the(out, Q::notify_lost).id == 100u);
    BOOST_TEST(the(out, Q::notify_lost).ec == expired);
    BOOST_TEST(the(out, Q::abort_revoke_waiter).id == 200u);
    BOOST_TEST(q.lost(h) == expired);
    BOOST_TEST(!q.has_holders());
    BOOST_TEST(q.waiting() == 1u);
    BOOST_TEST(the(at().wait_lost(101, h), Q::notify_lost).ec == expired);  // a later listener is told at once
    BOOST_TEST(at().enter(h) == 0u);

    // The new session connects: a new node for waiter 2.
    connected = true;
    BOOST_TEST(kinds(at().on_connected()) == "start_contender");
    // The old holder releases: it hears why it had lost, and nothing of the new node is touched.
    out = release(h);
    BOOST_TEST(kinds(out) == "release_done");
    BOOST_TEST(out[0].ec == expired);
    out = at().on_acquired();
    BOOST_TEST(granted(out) == ids{2});
    BOOST_TEST(the(out, Q::grant).seq == 0u);
    BOOST_TEST(q.lost(holder(out, 2)) == error_code{});
}

BOOST_FIXTURE_TEST_CASE(renewal_with_fail_pending_fails_every_waiter, fixture)
{
    const auto h = hold_first();
    acquire(2);
    acquire(3);
    connected = false;
    auto out = at().on_session_renewed(false);
    BOOST_TEST(kinds(out) == "cancel_loss_clock abandon_contender fail_waiter fail_waiter");
    BOOST_TEST(out[2].id == 2u);
    BOOST_TEST(out[3].ec == expired);
    BOOST_TEST(q.waiting() == 0u);
    BOOST_TEST(q.lost(h) == expired);
    connected = true;
    BOOST_TEST(at().on_connected().empty());  // nobody waits: no node
    BOOST_TEST(kinds(release(h)) == "release_done");
}

// A waiter whose node was still queued (nobody here holds): the node goes, the waiter waits on. An
// acquire made before the new session connects makes no node yet; the one node comes once connected.
BOOST_FIXTURE_TEST_CASE(renewal_while_queued_makes_one_node_once_connected, fixture)
{
    acquire(1);
    BOOST_TEST(at().on_queued().empty());
    connected = false;
    BOOST_TEST(kinds(at().on_session_renewed(true)) == "cancel_loss_clock abandon_contender");
    BOOST_TEST(acquire(2).empty());
    connected = true;
    BOOST_TEST(kinds(at().on_connected()) == "start_contender");
    BOOST_TEST(granted(at().on_acquired()) == ids{1});
}

// A second renewal before the first new node was made: nothing to give up, the waiters still wait.
BOOST_FIXTURE_TEST_CASE(renewal_twice_keeps_waiters, fixture)
{
    connected = false;
    BOOST_TEST(acquire(1).empty());
    BOOST_TEST(kinds(at().on_session_renewed(true)) == "cancel_loss_clock");
    BOOST_TEST(kinds(at().on_session_renewed(true)) == "cancel_loss_clock");
    connected = true;
    BOOST_TEST(kinds(at().on_connected()) == "start_contender");
}

// A lease that ran out cuts its holder off too: the renewal does not change its reason.
BOOST_FIXTURE_TEST_CASE(a_holder_cut_off_by_its_lease_keeps_that_reason, fixture)
{
    const auto h = hold_first();
    at().on_lease_expired(h);
    connected = false;
    at().on_session_renewed(true);
    BOOST_TEST(q.lost(h) == lease_expired);
    BOOST_TEST(release(h)[0].ec == lease_expired);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_local_queue_renewal
