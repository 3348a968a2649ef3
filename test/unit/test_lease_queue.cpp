// The semaphore's local side (core/lease_queue): events in, actions out, no server. Who gets a freed lease,
// the run for the oldest waiter, the bound, one looks, connection trouble and the session's end.
#include "recipes/core/lease_queue.hpp"

#include <zklock/error.hpp>

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <string>

namespace unit_lease_queue {  // a namespace of its own: the unit tests compile as one translation unit

using namespace zklock::detail;
using L = lease_action::type;

namespace {

const error_code aborted = boost::asio::error::operation_aborted;
const error_code timeout = zklock::error::timeout;
const error_code expired = zklock::error::session_expired;
const error_code lost_connection = zklock::zk_errc::connection_loss;

std::string name(L t)
{
    switch (t) {
    case L::start_run: return "start_run";
    case L::abandon_run: return "abandon_run";
    case L::grant_run: return "grant_run";
    case L::pass_lease: return "pass_lease";
    case L::delete_lease: return "delete_lease";
    case L::fail_waiter: return "fail_waiter";
    case L::look_for_followers: return "look_for_followers";
    }
    return "unknown";
}

/// The actions as "start_run(1) pass_lease(2) delete_lease": the waiter in brackets where there is one.
std::string show(const lease_queue::actions& out)
{
    std::string s;
    for (const auto& a : out) {
        s += (s.empty() ? "" : " ") + name(a.what);
        if (a.id) s += "(" + std::to_string(a.id) + ")";
    }
    return s;
}

struct fixture {
    lease_queue q{10};
    bool connected = true;
    lease_queue& at() { return q.observe(connected), q; }
    std::string acquire(std::uint64_t id, std::size_t n = 1, bool one_look = false)
    {
        return show(at().acquire(id, n, one_look));
    }
    std::string freed(bool usable = true) { return show(at().lease_freed(usable)); }
    std::string run_done(error_code ec = {}, bool retryable = false) { return show(at().on_run_done(ec, retryable)); }
    std::string cancel(std::uint64_t id, error_code why = aborted) { return show(at().cancel(id, why)); }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(lease_queue_tests)

// The starvation the issue found: three coroutines on one lease. The oldest waiter is served first even
// while its run is under way; the run goes on for the next one.
BOOST_FIXTURE_TEST_CASE(a_freed_lease_goes_to_the_oldest_waiter_even_while_its_run_is_under_way, fixture)
{
    BOOST_TEST(acquire(1) == "start_run(1)");
    BOOST_TEST(run_done() == "grant_run(1)");  // 1 holds
    BOOST_TEST(acquire(2) == "start_run(2)");   // waits in ZooKeeper for the leases to shrink
    BOOST_TEST(acquire(3) == "");
    BOOST_TEST(freed() == "look_for_followers pass_lease(2)");  // not 3: 2 is older. The run is now 3's
    BOOST_TEST(q.run_for() == 3u);
    BOOST_TEST(acquire(4) == "");               // 1 again, behind 3
    BOOST_TEST(freed() == "pass_lease(3)");
    BOOST_TEST(q.run_for() == 4u);
    BOOST_TEST(acquire(5) == "");               // 2 again
    BOOST_TEST(freed() == "pass_lease(4)");
    BOOST_TEST(freed() == "abandon_run pass_lease(5)");  // the last waiter: its run is given up
    BOOST_TEST(q.run_for() == 0u);
    BOOST_TEST(q.waiters() == 0u);
}

BOOST_FIXTURE_TEST_CASE(the_last_waiter_served_locally_gives_its_run_up, fixture)
{
    acquire(1);
    run_done();
    BOOST_TEST(acquire(2) == "start_run(2)");
    BOOST_TEST(freed() == "look_for_followers abandon_run pass_lease(2)");
    BOOST_TEST(q.run_for() == 0u);
}

BOOST_FIXTURE_TEST_CASE(a_waiter_for_several_leases_stops_local_passing_until_its_run_has_them, fixture)
{
    acquire(1);
    run_done();
    BOOST_TEST(acquire(2, 2) == "start_run(2)");
    BOOST_TEST(acquire(3) == "");
    // The oldest waiter wants two: a single waiter behind it is not served first; the node goes, so that
    // the leases directory shrinks and the pair's run succeeds.
    BOOST_TEST(freed() == "delete_lease");
    BOOST_TEST(run_done() == "grant_run(2) start_run(3)");
    BOOST_TEST(q.handoffs() == 0u);
}

BOOST_FIXTURE_TEST_CASE(a_run_moves_on_only_to_a_waiter_that_wants_as_many_leases, fixture)
{
    acquire(1);
    run_done();
    BOOST_TEST(acquire(2) == "start_run(2)");
    BOOST_TEST(acquire(3, 2) == "");
    BOOST_TEST(freed() == "look_for_followers abandon_run pass_lease(2) start_run(3)");
    BOOST_TEST(q.run_for() == 3u);
}

BOOST_FIXTURE_TEST_CASE(the_bound_holds_while_the_look_is_out_and_lifts_when_nobody_else_waits, fixture)
{
    q = lease_queue(2);
    acquire(1);
    run_done();
    for (std::uint64_t id = 2; id <= 5; ++id) acquire(id);
    BOOST_TEST(freed() == "look_for_followers pass_lease(2)");
    BOOST_TEST(freed() == "pass_lease(3)");  // 2 hand-offs: the bound
    BOOST_TEST(freed() == "delete_lease");   // beyond it, the look's answer not in: strict
    BOOST_TEST(at().on_followers_none().empty());
    BOOST_TEST(freed() == "pass_lease(4)");  // nobody else waits: it goes on
    BOOST_TEST(show(at().on_followers_changed(true)) == "look_for_followers");  // someone came: look again
    BOOST_TEST(freed() == "delete_lease");   // unknown meanwhile: strict
    BOOST_TEST(run_done() == "grant_run(5)");
    BOOST_TEST(q.handoffs() == 0u);          // a lease through ZooKeeper starts the count again
}

BOOST_FIXTURE_TEST_CASE(a_limit_of_zero_never_passes_locally_and_never_looks, fixture)
{
    q = lease_queue(0);
    acquire(1);
    run_done();
    acquire(2);
    BOOST_TEST(freed() == "delete_lease");
    BOOST_TEST(show(at().on_followers_changed(true)) == "");
    BOOST_TEST(run_done() == "grant_run(2)");
}

BOOST_FIXTURE_TEST_CASE(a_lost_lease_or_a_lost_connection_sends_the_node_back, fixture)
{
    acquire(1);
    run_done();
    acquire(2);
    BOOST_TEST(freed(false) == "delete_lease");  // the releaser's lease was lost: it is not ours to give
    connected = false;
    BOOST_TEST(freed() == "delete_lease");       // no hand-off on a connection that may be stale
    BOOST_TEST(q.run_for() == 2u);
}

BOOST_FIXTURE_TEST_CASE(a_one_look_is_served_only_with_nobody_ahead_on_a_live_connection, fixture)
{
    BOOST_TEST(acquire(1, 1, true) == "start_run(1)");
    BOOST_TEST(acquire(2, 1, true) == "fail_waiter(2)");  // someone here is ahead
    BOOST_TEST(acquire(3) == "");
    // A one-look run is not handed on: it gives up after one look.
    BOOST_TEST(cancel(1) == "abandon_run fail_waiter(1) start_run(3)");
    connected = false;
    BOOST_TEST(acquire(4, 1, true) == "fail_waiter(4)");
    auto out = at().acquire(5, 1, true);
    BOOST_TEST(out.front().ec == timeout);
}

BOOST_FIXTURE_TEST_CASE(a_one_look_run_that_finds_no_lease_fails_its_waiter_and_the_next_runs, fixture)
{
    acquire(1, 1, true);
    BOOST_TEST(acquire(2) == "");
    BOOST_TEST(run_done(timeout) == "fail_waiter(1) start_run(2)");
}

BOOST_FIXTURE_TEST_CASE(a_waiter_that_leaves_hands_its_run_to_the_next_or_gives_it_up, fixture)
{
    acquire(1);
    acquire(2);
    acquire(3, 2);
    BOOST_TEST(cancel(1, timeout) == "fail_waiter(1)");  // 2 wants as many: the run is its now
    BOOST_TEST(q.run_for() == 2u);
    BOOST_TEST(cancel(2) == "abandon_run fail_waiter(2) start_run(3)");
    BOOST_TEST(cancel(3) == "abandon_run fail_waiter(3)");
    BOOST_TEST(cancel(3) == "");  // twice: nothing
    BOOST_TEST(q.run_for() == 0u);
}

BOOST_FIXTURE_TEST_CASE(connection_trouble_keeps_the_waiter_and_runs_again_once_connected, fixture)
{
    acquire(1);
    connected = false;
    BOOST_TEST(run_done(lost_connection, true) == "");  // not while disconnected
    BOOST_TEST(q.waiting(1));
    connected = true;
    BOOST_TEST(show(at().on_connected()) == "start_run(1)");
    BOOST_TEST(show(at().on_connected()) == "");  // one run at a time
}

BOOST_FIXTURE_TEST_CASE(a_run_that_fails_fails_its_waiter_and_the_next_runs, fixture)
{
    acquire(1);
    acquire(2);
    auto out = at().on_run_done(zklock::error::schema_mismatch, false);
    BOOST_TEST(show(out) == "fail_waiter(1) start_run(2)");
    BOOST_TEST((out.front().ec == zklock::error::schema_mismatch));
}

BOOST_FIXTURE_TEST_CASE(the_sessions_end_fails_every_waiter_and_gives_the_run_up, fixture)
{
    acquire(1);
    acquire(2, 2);
    auto out = at().on_session_final(expired);
    BOOST_TEST(show(out) == "abandon_run fail_waiter(1) fail_waiter(2)");
    BOOST_TEST(out[1].ec == expired);
    BOOST_TEST(q.waiters() == 0u);
    BOOST_TEST(show(at().on_session_final(expired)) == "");
}

// The session expired and a new one is opened: the run goes; requeue keeps the waiters (a one look
// fails) for a run on the new session once connected; fail_pending fails them all.
BOOST_FIXTURE_TEST_CASE(a_renewal_gives_the_run_up_and_keeps_or_fails_the_waiters, fixture)
{
    acquire(1);
    acquire(2, 2);
    connected = false;
    auto out = at().on_session_renewed(true);
    BOOST_TEST(show(out) == "abandon_run");
    BOOST_TEST(q.waiters() == 2u);
    connected = true;
    BOOST_TEST(show(at().on_connected()) == "start_run(1)");
    connected = false;
    out = at().on_session_renewed(false);
    BOOST_TEST(show(out) == "abandon_run fail_waiter(1) fail_waiter(2)");
    BOOST_TEST(out[1].ec == expired);
    BOOST_TEST(q.waiters() == 0u);
}

BOOST_FIXTURE_TEST_CASE(nothing_runs_before_the_session_is_connected, fixture)
{
    connected = false;
    BOOST_TEST(acquire(1) == "");
    connected = true;
    BOOST_TEST(show(at().on_connected()) == "start_run(1)");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_lease_queue
