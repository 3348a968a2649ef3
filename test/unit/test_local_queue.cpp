// The coroutines of one session queued behind one node: events in, actions out, no server. Grants and
// hand-offs, one looks, cancellation, lingering, shared readers, second holds. (Losses, disconnection and
// session end: test_local_queue_loss.cpp.) Each event is preceded by observe(connected, end, stale), as the
// shell (recipes/lock_queue.cpp) does.
#include "local_queue_fixture.hpp"

namespace unit_local_queue {  // a namespace of its own: the unit tests compile as one translation unit

using namespace local_queue_test;

BOOST_AUTO_TEST_SUITE(local_queue_tests)

BOOST_FIXTURE_TEST_CASE(grants_in_fifo_order_on_one_node, fixture)
{
    BOOST_TEST(kinds(acquire(1)) == "start_contender");
    BOOST_TEST(acquire(2).empty());  // one node per session: the others queue locally
    BOOST_TEST(acquire(3).empty());
    auto out = at().on_acquired();
    // The node is watched for its deletion once held a moment (see own_watch_delay_ms), or at once for a listener.
    BOOST_TEST(kinds(out) == "grant arm_loss_clock start_own_watch_clock");
    BOOST_TEST(out[0].id == 1u);
    BOOST_TEST(out[0].seq == 0u);
    out = release(out[0].holder);
    // A local hand-off, no round trip. Three grants in all stay within the bound (10): nobody is asked who
    // queues behind the node.
    BOOST_TEST(kinds(out) == "grant arm_loss_clock release_done");
    BOOST_TEST(out[0].id == 2u);
    BOOST_TEST(out[0].seq == 1u);
    BOOST_TEST(!out[2].ec);
    out = release(out[0].holder);
    BOOST_TEST(out[0].id == 3u);
    BOOST_TEST(out[0].seq == 2u);
    out = release(out[0].holder);
    BOOST_TEST(kinds(out) == "cancel_loss_clock release_contender");
    BOOST_TEST(out[1].answer);  // the releaser hears ZooKeeper's answer
    BOOST_TEST(!q.has_holders());
}

// The contender lists the directory (with a watch) to learn whether another process queues behind the node:
// asked at a local hand-off once the waiters here could take the node to the bound, so that the answer is
// in before it is needed; a queue that ends within the bound never pays that listing.
BOOST_FIXTURE_TEST_CASE(a_node_asks_about_followers_once_its_waiters_could_pass_the_bound, fixture)
{
    remake(false, 3, false);  // the node's first grant and 3 hand-offs go unasked
    for (std::uint64_t id = 1; id <= 3; ++id) acquire(id);
    auto out = at().on_acquired();
    out = release(holder(out, 1));
    BOOST_TEST(kinds(out) == "grant arm_loss_clock release_done");  // 2 grants, 1 waiting
    acquire(4);
    out = release(holder(out, 2));
    BOOST_TEST(kinds(out) == "grant arm_loss_clock release_done");  // 3 grants, 1 waiting: 4 in all
    acquire(5);
    out = release(holder(out, 3));
    BOOST_TEST(kinds(out) == "grant arm_loss_clock watch_followers release_done");  // 4 + 1 would pass it
    out = release(holder(out, 4));
    BOOST_TEST(kinds(out).find("watch_followers") == std::string::npos);  // asked once a node
}

BOOST_FIXTURE_TEST_CASE(handoff_limit_bounds_the_grants_once_another_process_waits, fixture)
{
    remake(false, 2, false);
    for (std::uint64_t id = 1; id <= 5; ++id) acquire(id);
    auto out = at().on_acquired();
    BOOST_TEST(kinds(out) == "grant arm_loss_clock start_own_watch_clock");
    out = release(out[0].holder);  // the first local hand-off: the contender is asked who queues behind
    BOOST_TEST(kinds(out) == "grant arm_loss_clock watch_followers release_done");
    BOOST_TEST(granted(out) == ids{2});
    out = release(out[0].holder);  // within the bound
    BOOST_TEST(granted(out) == ids{3});
    auto h3 = out[0].holder;
    out = release(h3);  // beyond it, the answer not in yet: the hand-off waits for it
    BOOST_TEST(kinds(out) == "cancel_loss_clock release_done");
    BOOST_TEST(!q.has_holders());
    out = at().on_followers_none();  // nobody else waits: the node stays and the hand-off goes on
    BOOST_TEST(granted(out) == ids{4});
    out = release(out[0].holder);
    BOOST_TEST(granted(out) == ids{5});
    BOOST_TEST(kinds(out) == "grant arm_loss_clock release_done");  // asked once per node
    acquire(6);
    BOOST_TEST(at().on_followers_waiting().empty());  // another process queues behind the node
    out = release(out[0].holder);
    BOOST_TEST(kinds(out) == "cancel_loss_clock release_contender start_contender");  // it gets its turn now
    out = at().on_acquired();
    BOOST_TEST(granted(out) == ids{6});
    BOOST_TEST(out[0].seq == 0u);  // counted per node
}

BOOST_FIXTURE_TEST_CASE(a_hand_off_paused_at_the_bound_yields_when_another_process_waits, fixture)
{
    remake(false, 1, false);
    for (std::uint64_t id = 1; id <= 3; ++id) acquire(id);
    auto out = release(holder(at().on_acquired(), 1));
    BOOST_TEST(kinds(out) == "grant arm_loss_clock watch_followers release_done");
    out = release(out[0].holder);  // beyond the bound, the answer still out
    BOOST_TEST(kinds(out) == "cancel_loss_clock release_done");
    BOOST_TEST(kinds(acquire(4, true)) == "fail_waiter");  // a one look sees the queue
    out = at().on_followers_waiting();  // someone queued: the node goes, ours queues again behind
    BOOST_TEST(kinds(out) == "release_contender start_contender");
    BOOST_TEST(granted(at().on_acquired()) == ids{3});
}

// Nobody waited at the look; then the directory changes (someone queued). Until the next look answers, the
// node no longer passes beyond the bound: a contender that just queued does not wait out a round trip's worth
// of local grants (at a microsecond each, hundreds).
BOOST_FIXTURE_TEST_CASE(a_change_in_the_directory_stops_the_hand_offs_beyond_the_bound_until_the_next_look, fixture)
{
    remake(false, 1, false);
    for (std::uint64_t id = 1; id <= 5; ++id) acquire(id);
    auto out = release(holder(at().on_acquired(), 1));
    BOOST_TEST(kinds(out) == "grant arm_loss_clock watch_followers release_done");
    at().on_followers_none();
    out = release(out[0].holder);  // beyond the bound, nobody behind: the node stays
    BOOST_TEST(granted(out) == ids{3});
    BOOST_TEST(at().on_followers_changed().empty());
    out = release(out[0].holder);  // the change is not yet explained: the hand-off waits
    BOOST_TEST(kinds(out) == "cancel_loss_clock release_done");
    out = at().on_followers_waiting();  // it was someone queuing: the node goes
    BOOST_TEST(kinds(out) == "release_contender start_contender");
    // Had it been someone leaving, the look would have found nobody, and the hand-off would go on.
    remake(false, 1, false);
    for (std::uint64_t id = 1; id <= 5; ++id) acquire(id);
    out = release(holder(at().on_acquired(), 1));
    at().on_followers_none();
    at().on_followers_changed();
    out = release(out[0].holder);
    BOOST_TEST(kinds(out) == "cancel_loss_clock release_done");
    BOOST_TEST(granted(at().on_followers_none()) == ids{3});
}

BOOST_FIXTURE_TEST_CASE(under_steady_contention_the_node_goes_at_the_bound_without_waiting, fixture)
{
    remake(false, 1, false);
    for (std::uint64_t id = 1; id <= 40; ++id) acquire(id);
    // A node: hand-off, then the answer says another process waits: the node goes at the bound.
    auto out = release(holder(at().on_acquired(), 1));
    BOOST_TEST(kinds(out) == "grant arm_loss_clock watch_followers release_done");
    at().on_followers_waiting();
    out = release(out[0].holder);
    BOOST_TEST(kinds(out) == "cancel_loss_clock release_contender start_contender");
    // The next nodes: their answer is not in at the bound, and history says contended: no waiting.
    std::size_t paused_after = 0;
    for (std::size_t node = 1; node <= local_queue::relook_every + 1 && paused_after == 0; ++node) {
        out = release(at().on_acquired()[0].holder);  // the first hand-off asks again
        out = release(out[0].holder);
        if (kinds(out) == "cancel_loss_clock release_done") paused_after = node;  // waits for the answer
        else BOOST_TEST(kinds(out) == "cancel_loss_clock release_contender start_contender");
    }
    BOOST_TEST(paused_after == local_queue::relook_every + 1);  // every relook_every nodes it looks again
    out = at().on_followers_none();  // the rivals left: the hand-off goes on, beyond the bound
    BOOST_TEST(granted(out).size() == 1u);
}

BOOST_FIXTURE_TEST_CASE(handoff_limit_zero_makes_a_node_per_grant, fixture)
{
    remake(false, 0, false);
    acquire(1);
    acquire(2);
    auto out = release(holder(at().on_acquired(), 1));
    BOOST_TEST(kinds(out) == "cancel_loss_clock release_contender start_contender");
    BOOST_TEST(granted(at().on_acquired()) == ids{2});
}

BOOST_FIXTURE_TEST_CASE(one_look_succeeds_only_when_free, fixture)
{
    BOOST_TEST(kinds(acquire(1, true)) == "start_contender");  // free: worth one look
    const auto h = holder(at().on_acquired(), 1);
    auto out = acquire(2, true);  // held here
    BOOST_TEST(kinds(out) == "fail_waiter");
    BOOST_TEST(out[0].ec == timeout);
    release(h);

    acquire(3);  // queued here
    BOOST_TEST(the(acquire(4, true), Q::fail_waiter).ec == timeout);
    at().cancel(3, aborted);

    connected = false;  // disconnected
    BOOST_TEST(the(acquire(5, true), Q::fail_waiter).ec == timeout);
}

BOOST_FIXTURE_TEST_CASE(one_look_gives_up_once_queued_behind_another_process, fixture)
{
    acquire(1, true);
    auto out = at().on_queued();
    BOOST_TEST(kinds(out) == "fail_waiter abandon_contender");
    BOOST_TEST(out[0].ec == timeout);
    BOOST_TEST(q.waiting() == 0u);
}

BOOST_FIXTURE_TEST_CASE(cancel_of_a_waiter, fixture)
{
    acquire(1);
    acquire(2);
    auto out = at().cancel(2, aborted);
    BOOST_TEST(kinds(out) == "fail_waiter");  // waiter 1 still wants the node
    BOOST_TEST(out[0].id == 2u);
    BOOST_TEST(out[0].ec == aborted);
    out = at().cancel(1, timeout);
    BOOST_TEST(kinds(out) == "fail_waiter abandon_contender");  // nobody wants it any more
    BOOST_TEST(out[0].ec == timeout);
    BOOST_TEST(at().cancel(1, aborted).empty());  // already gone
    const auto h = hold_first();  // a fresh node
    acquire(2);
    BOOST_TEST(kinds(at().cancel(2, aborted)) == "fail_waiter");  // the holder keeps the node
    BOOST_TEST(q.holds(h));
}

BOOST_FIXTURE_TEST_CASE(release_of_a_non_holder_is_not_held, fixture)
{
    auto out = release(42);
    BOOST_TEST(kinds(out) == "release_done");
    BOOST_TEST(out[0].ec == error_code(zerr::error::not_held));
    const auto h = hold_first();
    release(h);
    BOOST_TEST(the(release(h), Q::release_done).ec == error_code(zerr::error::not_held));  // twice
}

BOOST_FIXTURE_TEST_CASE(linger_keeps_the_node_until_followers_wait, fixture)
{
    remake(false, 10, true);
    BOOST_TEST(kinds(release(hold_first())) == "cancel_loss_clock release_done");  // the node stays
    auto out = acquire(2, true);  // a lingering node is free: even a one look gets it at once
    BOOST_TEST(kinds(out) == "grant arm_loss_clock");
    release(out[0].holder);
    BOOST_TEST(kinds(at().on_followers_waiting()) == "release_contender");  // another process queues
    // Followers that came while it was held: the node goes at the release.
    const auto h = hold_first();
    BOOST_TEST(at().on_followers_waiting().empty());
    BOOST_TEST(kinds(release(h)) == "cancel_loss_clock release_contender");
}

BOOST_FIXTURE_TEST_CASE(shared_readers_hold_together_within_the_bound, fixture)
{
    remake(true, 2, false);
    for (std::uint64_t id = 1; id <= 5; ++id) acquire(id);
    BOOST_TEST(at().on_followers_waiting().empty());  // a writer queues behind the read node
    auto out = at().on_acquired();
    BOOST_TEST(granted(out) == (ids{1, 2, 3}));  // one grant and two joins
    BOOST_TEST(the(out, Q::grant, 2).seq == 2u);
    BOOST_TEST(acquire(6).empty());  // the bound is reached: a writer elsewhere gets its turn
    BOOST_TEST(kinds(release(holder(out, 1))) == "release_done");
    BOOST_TEST(kinds(release(holder(out, 2))) == "release_done");
    BOOST_TEST(kinds(release(holder(out, 3))) == "cancel_loss_clock release_contender start_contender");
    BOOST_TEST(granted(at().on_acquired()) == (ids{4, 5, 6}));  // no writer behind the new node: all join
}

BOOST_FIXTURE_TEST_CASE(a_read_node_asks_for_its_followers_at_its_first_join, fixture)
{
    remake(true, 10, false);
    acquire(1);
    // A reader alone pays no listing and no watch for followers: there is nobody to let in beyond the bound.
    BOOST_TEST(kinds(at().on_acquired()) == "grant arm_loss_clock start_own_watch_clock");
    BOOST_TEST(kinds(acquire(2)) == "grant arm_loss_clock watch_followers");
    BOOST_TEST(kinds(acquire(3)) == "grant arm_loss_clock");  // asked once a node
}

BOOST_FIXTURE_TEST_CASE(readers_join_without_bound_until_a_writer_queues_even_with_limit_zero, fixture)
{
    remake(true, 0, false);
    hold_first();
    BOOST_TEST(granted(acquire(2)) == ids{2});
    BOOST_TEST(granted(acquire(3, true)) == ids{3});
    BOOST_TEST(at().on_followers_waiting().empty());
    BOOST_TEST(acquire(4).empty());  // a writer waits: no more joins
}

BOOST_FIXTURE_TEST_CASE(shared_readers_join_a_held_node, fixture)
{
    remake(true, 10, false);
    hold_first();
    BOOST_TEST(granted(acquire(2)) == ids{2});
    BOOST_TEST(granted(acquire(3, true)) == ids{3});  // joinable: even a one look gets it
    at().on_lost(deleted);
    BOOST_TEST(acquire(4).empty());  // never join a lost node
    BOOST_TEST(kinds(acquire(5, true)) == "fail_waiter");
    remake(true, 1, false);  // nor beyond the bound once a writer waits
    hold_first();
    at().on_followers_waiting();
    BOOST_TEST(granted(acquire(2)) == ids{2});
    BOOST_TEST(the(acquire(3, true), Q::fail_waiter).ec == timeout);
}

BOOST_FIXTURE_TEST_CASE(enter_gives_a_second_hold_on_the_same_node, fixture)
{
    const auto h = hold_first();
    const auto h2 = at().enter(h);
    BOOST_TEST(h2 != 0u);
    BOOST_TEST(h2 != h);
    BOOST_TEST(q.holds(h2));
    BOOST_TEST(at().enter(12345) == 0u);  // not a holder
    BOOST_TEST(kinds(release(h)) == "release_done");  // the node stays for the second hold
    BOOST_TEST(q.holds(h2));
    BOOST_TEST(kinds(release(h2)) == "cancel_loss_clock release_contender");
}

BOOST_FIXTURE_TEST_CASE(enter_counts_toward_the_handoff_limit, fixture)
{
    remake(false, 1, false);
    const auto h = hold_first();
    acquire(2);
    const auto h2 = at().enter(h);
    BOOST_TEST(at().next_seq() == 2u);
    at().on_followers_waiting();  // another process waits: the bound applies
    release(h);
    BOOST_TEST(kinds(release(h2)) == "cancel_loss_clock release_contender start_contender");
}

BOOST_FIXTURE_TEST_CASE(followers_heard_before_acquired_are_not_forgotten, fixture)
{
    remake(false, 10, true);
    acquire(1);
    BOOST_TEST(at().on_followers_waiting().empty());  // a node found again: followers heard first
    const auto h = holder(at().on_acquired(), 1);
    BOOST_TEST(kinds(release(h)) == "cancel_loss_clock release_contender");  // no linger: someone waits
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_local_queue
