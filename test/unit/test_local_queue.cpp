// The coroutines of one session queued behind one node: events in, actions out, no server.
// Each event is preceded by observe(connected, end), as the shell (recipes/lock_queue.cpp) does.
#include "recipes/core/local_queue.hpp"

#include <zklock/error.hpp>

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace zklock::detail;

namespace {

using Q = queue_action::type;
using actions = local_queue::actions;
namespace zerr = zklock;

const error_code aborted = boost::asio::error::operation_aborted;
const error_code timeout = zerr::error::timeout;
const error_code deleted = zerr::error::lock_node_deleted;
const error_code uncertain = zerr::error::ownership_uncertain;
const error_code expired = zerr::error::session_expired;

/// The action types in order, space separated: "grant arm_loss_clock".
std::string kinds(const actions& out)
{
    static const char* const names[] = {"grant",          "fail_waiter",      "start_contender", "abandon_contender",
                                        "release_contender", "forget_contender", "release_done",   "notify_lost",
                                        "abort_lost_waiter", "arm_loss_clock",   "cancel_loss_clock"};
    std::string s;
    for (const auto& a : out) s += (s.empty() ? "" : " ") + std::string(names[static_cast<int>(a.what)]);
    return s;
}

/// The `nth` action of type `what` (the test stops if there is none).
const queue_action& the(const actions& out, Q what, std::size_t nth = 0)
{
    for (const auto& a : out)
        if (a.what == what && nth-- == 0) return a;
    BOOST_FAIL("action " << static_cast<int>(what) << " missing from [" << kinds(out) << "]");
    throw;  // unreachable
}

/// The waiters granted, in order.
std::vector<std::uint64_t> granted(const actions& out)
{
    std::vector<std::uint64_t> ids;
    for (const auto& a : out)
        if (a.what == Q::grant) ids.push_back(a.id);
    return ids;
}
using ids = std::vector<std::uint64_t>;

struct fixture {
    local_queue q{{}};
    bool connected = true;
    error_code end{};

    void remake(bool shared, std::size_t limit, bool linger) { q = local_queue({shared, limit, linger}); }
    // Each event as the shell sends it: the session's state first.
    local_queue& at() { return q.observe(connected, end), q; }
    actions acquire(std::uint64_t id, bool one_look = false) { return at().acquire(id, one_look); }
    actions release(std::uint64_t holder) { return at().release(holder, true); }
    /// The holder id of waiter `id` in a grant of `out`.
    static std::uint64_t holder(const actions& out, std::uint64_t id)
    {
        for (const auto& a : out)
            if (a.what == Q::grant && a.id == id) return a.holder;
        BOOST_FAIL("waiter " << id << " not granted in [" << kinds(out) << "]");
        return 0;
    }
    /// Waiter 1 acquires an uncontended node: its holder id.
    std::uint64_t hold_first()
    {
        BOOST_REQUIRE(kinds(acquire(1)) == "start_contender");
        return holder(at().on_acquired(), 1);
    }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(local_queue_tests)

BOOST_FIXTURE_TEST_CASE(grants_in_fifo_order_on_one_node, fixture)
{
    BOOST_TEST(kinds(acquire(1)) == "start_contender");
    BOOST_TEST(acquire(2).empty());  // one node per session: the others queue locally
    BOOST_TEST(acquire(3).empty());
    auto out = at().on_acquired();
    BOOST_TEST(kinds(out) == "grant arm_loss_clock");
    BOOST_TEST(out[0].id == 1u);
    BOOST_TEST(out[0].seq == 0u);
    out = release(out[0].holder);
    BOOST_TEST(kinds(out) == "grant arm_loss_clock release_done");  // a local hand-off, no round trip
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

BOOST_FIXTURE_TEST_CASE(handoff_limit_bounds_the_grants_per_node, fixture)
{
    remake(false, 2, false);
    for (std::uint64_t id = 1; id <= 4; ++id) acquire(id);
    auto out = at().on_acquired();
    for (std::uint64_t id = 2; id <= 3; ++id) {  // two hand-offs after the first grant
        out = release(out[0].holder);
        BOOST_TEST(granted(out) == ids{id});
    }
    out = release(out[0].holder);
    BOOST_TEST(kinds(out) == "cancel_loss_clock release_contender start_contender");  // others get their turn
    out = at().on_acquired();
    BOOST_TEST(granted(out) == ids{4});
    BOOST_TEST(out[0].seq == 0u);  // counted per node
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

BOOST_FIXTURE_TEST_CASE(loss_while_holding_notifies_listeners, fixture)
{
    const auto h = hold_first();
    BOOST_TEST(at().wait_lost(100, h).empty());
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

BOOST_FIXTURE_TEST_CASE(loss_reasons_replace_each_other_in_order, fixture)
{
    const auto h = hold_first();
    at().wait_lost(100, h);
    auto out = at().on_uncertain();
    BOOST_TEST(the(out, Q::notify_lost).ec == uncertain);
    BOOST_TEST(q.lost(h) == uncertain);
    at().on_lost(deleted);  // a definitive reason replaces "uncertain"
    BOOST_TEST(q.lost(h) == deleted);
    BOOST_TEST(at().on_uncertain().empty());  // but not the other way round
    BOOST_TEST(q.lost(h) == deleted);

    end = expired;  // the server deleted the node because it expired the session
    connected = false;
    at().on_session_final(expired);
    BOOST_TEST(q.lost(h) == expired);
    out = release(h);
    BOOST_TEST(kinds(out) == "cancel_loss_clock release_done");  // the contender went with the session
    BOOST_TEST(out[1].ec == expired);
}

BOOST_FIXTURE_TEST_CASE(session_end_replaces_a_deleted_node_for_listeners_too, fixture)
{
    const auto h = hold_first();
    at().on_lost(deleted);
    at().wait_lost(100, h);  // told at once: deleted
    end = expired;
    connected = false;
    at().on_session_final(expired);
    BOOST_TEST(q.lost(h) == expired);
    BOOST_TEST(the(at().wait_lost(101, h), Q::notify_lost).ec == expired);
}

BOOST_FIXTURE_TEST_CASE(node_acquired_while_disconnected_is_granted_on_reconnect, fixture)
{
    acquire(1);
    connected = false;
    BOOST_TEST(at().on_acquired().empty());  // the node may already be lost: no grant yet
    BOOST_TEST(!q.has_holders());
    connected = true;
    BOOST_TEST(granted(at().on_connected()) == ids{1});
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

BOOST_FIXTURE_TEST_CASE(no_local_handoff_while_disconnected, fixture)
{
    const auto h = hold_first();
    acquire(2);
    connected = false;
    BOOST_TEST(kinds(release(h)) == "cancel_loss_clock release_contender start_contender");
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

BOOST_FIXTURE_TEST_CASE(shared_readers_hold_together_within_the_bound, fixture)
{
    remake(true, 2, false);
    for (std::uint64_t id = 1; id <= 5; ++id) acquire(id);
    BOOST_TEST(at().on_followers_waiting().empty());  // a writer queues behind the read node
    auto out = at().on_acquired();
    BOOST_TEST(granted(out) == (ids{1, 2, 3}));  // one grant and two joins
    BOOST_TEST(out[4].seq == 2u);
    BOOST_TEST(acquire(6).empty());  // the bound is reached: a writer elsewhere gets its turn
    BOOST_TEST(kinds(release(out[0].holder)) == "release_done");
    BOOST_TEST(kinds(release(out[2].holder)) == "release_done");
    BOOST_TEST(kinds(release(out[4].holder)) == "cancel_loss_clock release_contender start_contender");
    BOOST_TEST(granted(at().on_acquired()) == (ids{4, 5, 6}));  // no writer behind the new node: all join
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
    release(h);
    BOOST_TEST(kinds(release(h2)) == "cancel_loss_clock release_contender start_contender");
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

BOOST_FIXTURE_TEST_CASE(followers_heard_before_acquired_are_not_forgotten, fixture)
{
    remake(false, 10, true);
    acquire(1);
    BOOST_TEST(at().on_followers_waiting().empty());  // a node found again: followers heard first
    const auto h = holder(at().on_acquired(), 1);
    BOOST_TEST(kinds(release(h)) == "cancel_loss_clock release_contender");  // no linger: someone waits
}

BOOST_AUTO_TEST_SUITE_END()
