// Time, no server: the clocks of a lock's shell (core/lock_clock.hpp, core/loss_clock.hpp) on a mock
// clock, alone and driving a local_queue the way recipes/lock_queue.cpp does: the loss warning, leases,
// waiters' deadlines, the one look's bound, the own-watch delay.
#include "local_queue_fixture.hpp"
#include "mock_clock.hpp"
#include "recipes/core/lock_clock.hpp"
#include "session/core/session_timing.hpp"

#include <functional>
#include <map>
#include <optional>

namespace unit_lock_clock {  // a namespace of its own: the unit tests compile as one translation unit

using namespace local_queue_test;
using namespace clock_test;

namespace {

using A = clock_alarm::type;

/// The alarm types in order, space separated: "deadline lease".
std::string show(const std::vector<clock_alarm>& due)
{
    std::string s;
    for (const auto& a : due) {
        s += s.empty() ? "" : " ";
        switch (a.what) {
        case A::deadline: s += "deadline(" + std::to_string(a.id) + ")"; break;
        case A::lease: s += "lease(" + std::to_string(a.id) + ")"; break;
        case A::loss: s += "loss"; break;
        case A::own_watch: s += "own_watch"; break;
        }
    }
    return s;
}

/// A local_queue and its clocks, stepped as the shell steps them: the session's state and the loss
/// clock observed before each event, the clock actions performed after it, and the alarms rung in order
/// when the mock clock moves.
struct timed : fixture {
    mock_clock clock;
    lock_clock clocks;
    touch session{clock.now(), 2s};  // the newest answered send: now; the grace: 2 s
    std::map<std::uint64_t, clock_duration> lease_of;  // a waiter's lease length, if it asked for one
    clock_duration one_look_limit = 1s;

    actions event(const std::function<actions(local_queue&)>& e)
    {
        q.observe(connected, end, session.ran_out(clock.now()));
        auto out = e(q);
        for (const auto& a : out) perform(a);
        return out;
    }
    void perform(const queue_action& a)
    {
        switch (a.what) {
        case Q::grant:
            clocks.stop_waiter(a.id);
            if (auto it = lease_of.find(a.id); it != lease_of.end()) clocks.start_lease(a.holder, clock.now() + it->second);
            break;
        case Q::fail_waiter: clocks.stop_waiter(a.id); break;
        case Q::arm_loss_clock:
            if (q.has_holders()) clocks.arm_loss();
            break;
        case Q::cancel_loss_clock: clocks.disarm_loss(); break;
        case Q::start_own_watch_clock:
            clocks.start_own_watch(clock.now() + std::chrono::milliseconds(local_queue::own_watch_delay_ms));
            break;
        case Q::release_contender:
        case Q::abandon_contender:
        case Q::forget_contender: clocks.stop_own_watch(); break;
        default: break;
        }
    }
    actions wait_for(std::uint64_t id, std::optional<clock_duration> timeout)
    {
        std::optional<clock_time> deadline;
        if (timeout) deadline = clock.now() + *timeout;
        const bool one_look = clocks.start_waiter(id, deadline, clock.now(), one_look_limit);
        return event([&](local_queue& m) { return m.acquire(id, one_look); });
    }
    actions let_go(std::uint64_t holder)
    {
        clocks.stop_lease(holder);
        return event([&](local_queue& m) { return m.release(holder, true); });
    }
    /// A request sent `ago` is answered through the leader now.
    void answered(clock_duration ago = 0s) { session.last_answered_send = clock.now() - ago; }
    /// Moves the clock; the actions of every alarm that rang, in order.
    actions advance(clock_duration d)
    {
        clock.advance_time_by(d);
        actions all;
        for (const auto& a : clocks.take_due(clock.now(), session)) {
            actions out;
            switch (a.what) {
            case A::deadline: out = event([&](local_queue& m) { return m.cancel(a.id, timeout); }); break;
            case A::lease: out = event([&](local_queue& m) { return m.on_lease_expired(a.id); }); break;
            case A::loss:
                if (q.has_holders()) out = event([](local_queue& m) { return m.on_uncertain(); });
                break;
            case A::own_watch: out = event([](local_queue& m) { return m.on_own_watch_due(); }); break;
            }
            all.insert(all.end(), out.begin(), out.end());
        }
        return all;
    }
    std::uint64_t hold(std::uint64_t id)
    {
        BOOST_REQUIRE(kinds(wait_for(id, std::nullopt)) == "start_contender");
        return holder(event([](local_queue& m) { return m.on_acquired(); }), id);
    }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(lock_clock_tests)

// --- The loss warning --------------------------------------------------------------------------------

BOOST_FIXTURE_TEST_CASE(the_loss_warning_comes_at_send_plus_grace, timed)
{
    struct row {
        clock_duration grace, sent_ago;  // the newest answered request was sent that long before the grant
    };
    const row rows[] = {{2s, 0s}, {2s, 1500ms}, {5833ms, 300ms}, {1ms, 0s}};
    for (const auto& r : rows) {
        remake(false, 10, false);
        clocks = {};
        session = {clock.now() - r.sent_ago, r.grace};
        const auto h = hold(1);
        event([&](local_queue& m) { return m.wait_lost(100, h); });
        const auto warn = session.last_answered_send + r.grace;
        BOOST_TEST(advance(warn - clock.now() - 1ns).empty());  // not a moment before
        const auto out = advance(1ns);
        BOOST_TEST(kinds(out) == "cancel_loss_clock notify_lost");
        BOOST_TEST(the(out, Q::notify_lost).ec == uncertain);
        BOOST_TEST(q.lost(h) == uncertain);
        BOOST_TEST(!clocks.next(session).has_value());  // rings once
        let_go(h);
    }
}

BOOST_FIXTURE_TEST_CASE(the_loss_warning_never_comes_after_the_derived_bound, timed)
{
    // Whatever is configured and negotiated, the holder is told no later than 7/12 of the session
    // timeout after the newest answered send (docs/DESIGN.md, "Loss timing").
    struct row {
        milliseconds t;
        std::optional<milliseconds> configured;
    };
    const row rows[] = {{4'000ms, std::nullopt}, {4'000ms, 2'333ms}, {4'000ms, 9'000ms}, {10'000ms, 5'833ms},
                        {10'000ms, 30'000ms},    {40'000ms, std::nullopt}, {1'000ms, 1'000ms}};
    for (const auto& r : rows) {
        remake(false, 10, false);
        clocks = {};
        answered();
        const auto sent = session.last_answered_send;
        session.grace = choose_loss_grace(r.configured, r.t).grace;
        const auto h = hold(1);
        const auto bound = sent + loss_grace_bound(r.t);
        BOOST_TEST((clocks.next(session) <= bound), "T " << r.t.count());
        const auto out = advance(bound - clock.now());
        BOOST_TEST(q.lost(h) == uncertain, "T " << r.t.count() << ": [" << kinds(out) << "]");
        let_go(h);
    }
}

BOOST_FIXTURE_TEST_CASE(a_newer_answer_moves_the_warning, timed)
{
    const auto h = hold(1);
    BOOST_TEST(kinds(advance(1500ms)) == "watch_own");  // (held a moment: the node is watched)
    answered(100ms);                     // a keepalive sent 100 ms ago was answered through the leader
    BOOST_TEST(advance(500ms).empty());  // 2 s after the first send: the warning moved
    BOOST_TEST((clocks.next(session) == session.last_answered_send + 2s));
    BOOST_TEST(advance(session.warning_at() - clock.now() - 1ns).empty());
    BOOST_TEST(kinds(advance(1ns)) == "cancel_loss_clock");
    BOOST_TEST(q.lost(h) == uncertain);
}

BOOST_FIXTURE_TEST_CASE(the_warning_runs_only_while_someone_holds, timed)
{
    const auto h = hold(1);
    let_go(h);  // released before the grace: nothing rings, and the timer stops
    BOOST_TEST(!clocks.next(session).has_value());
    BOOST_TEST(advance(10s).empty());
    // Armed again by the next grant, from the touch as it is then.
    answered();
    hold(2);
    BOOST_TEST((clocks.next(session) == clock.now() + 1ms));  // the own watch first, then the warning
    advance(1ms);
    BOOST_TEST((clocks.next(session) == clock.now() - 1ms + 2s));
}

BOOST_FIXTURE_TEST_CASE(a_waiter_away_longer_than_the_grace_is_not_handed_a_lost_guard, timed)
{
    // Seen under a real partition: a waiter whose session had no answer through the leader for longer
    // than the grace reconnected, was granted, and was told ownership_uncertain at once.
    wait_for(1, 30s);
    clock.advance_time_by(500ms);
    connected = false;
    BOOST_TEST(event([](local_queue& m) { return m.on_acquired(); }).empty());
    clock.advance_time_by(2s);  // 2.5 s after the newest answered send: past the grace
    connected = true;
    BOOST_TEST(kinds(event([](local_queue& m) { return m.on_connected(); })) == "confirm_touch");
    BOOST_TEST(!q.has_holders());
    BOOST_TEST(advance(3ms).empty());  // nothing rings for a waiter
    answered(3ms);                     // the sync, sent 3 ms ago, answered through the leader
    const auto confirm = event([](local_queue& m) { return m.on_touch_confirmed(); });
    BOOST_TEST(kinds(confirm) == "confirm_node");  // the node became ours while away: still there?
    const auto h = holder(event([&](local_queue& m) { return m.on_node_confirmed(the(confirm, Q::confirm_node).seq, {}); }), 1);
    // The guard's clock counts from the sync's answer: a whole grace ahead.
    const auto out = advance(session.warning_at() - clock.now() - 1ns);
    BOOST_TEST(kinds(out) == "watch_own");
    BOOST_TEST(!q.lost(h));
    BOOST_TEST(kinds(advance(1ns)) == "cancel_loss_clock");
}

// --- Leases ------------------------------------------------------------------------------------------

BOOST_FIXTURE_TEST_CASE(a_lease_expiring_exactly_at_a_release, timed)
{
    lease_of[1] = 5s;
    session.grace = 1h;  // this case is about leases
    auto h = hold(1);
    BOOST_TEST(kinds(advance(1ms)) == "watch_own");
    wait_for(2, std::nullopt);
    // The release comes first at the lease's last instant: an ordinary release, the lock passes on.
    clock.advance_time_by(5s - 1ms);
    auto out = let_go(h);
    BOOST_TEST(kinds(out) == "grant arm_loss_clock release_done");
    BOOST_TEST(the(out, Q::release_done).ec == error_code{});
    BOOST_TEST(clocks.take_due(clock.now(), session).empty());  // the lease went with the release
    // The lease rings first at that instant: the lock passes on, and the late release hears it.
    const auto h2 = holder(out, 2);
    clocks.start_lease(h2, clock.now());  // a lease that ends now
    wait_for(3, std::nullopt);
    out = advance(0s);
    BOOST_TEST(kinds(out) == "grant arm_loss_clock release_done");  // passed to waiter 3 as a release would
    BOOST_TEST(q.holds(holder(out, 3)));
    BOOST_TEST(q.lost(h2) == lease_expired);
    out = let_go(h2);
    BOOST_TEST(kinds(out) == "release_done");
    BOOST_TEST(out[0].ec == lease_expired);
}

BOOST_FIXTURE_TEST_CASE(a_lease_extended_at_its_last_instant_does_not_run_out, timed)
{
    session.grace = 1h;
    lease_of[1] = 5s;
    const auto h = hold(1);
    BOOST_TEST(kinds(advance(1ms)) == "watch_own");
    clock.advance_time_by(5s - 1ms - 1ns);
    clocks.start_lease(h, clock.now() + 5s);  // extend_lease: a new end, the old one forgotten
    BOOST_TEST(advance(1ns).empty());
    BOOST_TEST((clocks.lease_end(h) == clock.now() - 1ns + 5s));
    BOOST_TEST(advance(5s - 2ns).empty());
    const auto out = advance(1ns);
    BOOST_TEST(kinds(out) == "cancel_loss_clock release_contender");  // nobody waits: the node goes
    BOOST_TEST(q.lost(h) == lease_expired);
}

// has_leases() lets a grant skip the lease's publication when no holder has one: it must see a lease
// among the other alarms (deadlines sort before leases, the own watch after), and forget it when it goes.
BOOST_FIXTURE_TEST_CASE(has_leases_sees_only_leases, timed)
{
    lock_clock c;
    const auto now = clock.now();
    BOOST_TEST(!c.has_leases());
    c.start_waiter(7, now + 1s, now, 1s);
    c.start_own_watch(now + 1s);
    BOOST_TEST(!c.has_leases());  // a deadline and the own watch, around where a lease would sort
    c.start_lease(3, now + 5s);
    BOOST_TEST(c.has_leases());
    c.start_lease(3, now + 6s);  // an extension: still one lease
    c.stop_lease(3);
    BOOST_TEST(!c.has_leases());
    c.start_lease(4, now + 2s);
    BOOST_TEST(show(c.take_due(now + 2s, session)) == "deadline(7) own_watch lease(4)");
    BOOST_TEST(!c.has_leases());  // rung: gone
}

BOOST_FIXTURE_TEST_CASE(a_lease_end_is_shown_on_the_wall_clock, timed)
{
    const auto wall = std::chrono::system_clock::time_point{} + 1'700'000'000'000ms;
    BOOST_TEST(wall_clock_ms(clock.now() + 30s, clock.now(), wall) == 1'700'000'030'000);
    BOOST_TEST(wall_clock_ms(clock.now() - 1s, clock.now(), wall) == 1'699'999'999'000);
}

// --- Waiters' deadlines ------------------------------------------------------------------------------

BOOST_FIXTURE_TEST_CASE(a_deadline_that_falls_during_a_reconnect, timed)
{
    session.grace = 1h;
    wait_for(1, 3s);
    clock.advance_time_by(1s);
    connected = false;  // the connection drops; the node is queued behind someone
    event([](local_queue& m) { return m.on_queued(); });
    auto out = advance(2s);  // the deadline passes while the session reconnects
    BOOST_TEST(kinds(out) == "fail_waiter abandon_contender");
    BOOST_TEST(out[0].ec == timeout);
    connected = true;
    BOOST_TEST(event([](local_queue& m) { return m.on_connected(); }).empty());  // nothing left to grant
    BOOST_TEST(!clocks.next(session).has_value());
}

BOOST_FIXTURE_TEST_CASE(a_node_that_became_ours_during_a_reconnect_is_granted_before_the_deadline, timed)
{
    session.grace = 1h;
    wait_for(1, 3s);
    clock.advance_time_by(1s);
    connected = false;
    BOOST_TEST(event([](local_queue& m) { return m.on_acquired(); }).empty());  // the node may be lost
    clock.advance_time_by(1s);
    connected = true;
    answered();
    const auto confirm = event([](local_queue& m) { return m.on_connected(); });
    BOOST_TEST(kinds(confirm) == "confirm_node");  // the node became ours while away: still there?
    BOOST_TEST(granted(event([&](local_queue& m) { return m.on_node_confirmed(the(confirm, Q::confirm_node).seq, {}); })) == ids{1});
    BOOST_TEST(kinds(advance(1s)).find("fail_waiter") == std::string::npos);  // its deadline went with the grant
}

BOOST_FIXTURE_TEST_CASE(a_one_look_is_bounded_by_its_own_limit, timed)
{
    struct row {
        std::optional<clock_duration> timeout;
        bool one_look;
        std::optional<clock_duration> rings_after;
    };
    const row rows[] = {
        {std::nullopt, false, std::nullopt},  // no deadline: no clock
        {0s, true, 1s},                       // try_acquire: the one look's own limit
        {-5s, true, 1s},                      // a deadline already past is a one look too
        {1ns, false, 1ns},                    // the smallest real wait
        {30s, false, 30s},
    };
    std::uint64_t id = 1;
    for (const auto& r : rows) {
        lock_clock c;
        std::optional<clock_time> deadline;
        if (r.timeout) deadline = clock.now() + *r.timeout;
        BOOST_TEST(c.start_waiter(id, deadline, clock.now(), one_look_limit) == r.one_look);
        const auto next = c.next(session);
        BOOST_TEST(next.has_value() == r.rings_after.has_value());
        if (next && r.rings_after) BOOST_TEST((*next == clock.now() + *r.rings_after));
        ++id;
    }
}

// --- The own-watch delay -----------------------------------------------------------------------------

BOOST_FIXTURE_TEST_CASE(the_own_watch_is_due_a_moment_after_the_node_became_held, timed)
{
    session.grace = 1h;
    wait_for(1, std::nullopt);
    const auto out = event([](local_queue& m) { return m.on_acquired(); });
    BOOST_TEST(kinds(out) == "grant arm_loss_clock start_own_watch_clock");
    const auto delay = std::chrono::milliseconds(local_queue::own_watch_delay_ms);
    BOOST_TEST(advance(delay - 1ns).empty());
    BOOST_TEST(kinds(advance(1ns)) == "watch_own");
    // A hold shorter than the delay never pays for the watch.
    let_go(holder(out, 1));
    wait_for(2, std::nullopt);
    const auto second = event([](local_queue& m) { return m.on_acquired(); });
    let_go(holder(second, 2));  // the node goes: its own-watch alarm with it
    BOOST_TEST(advance(delay).empty());
}

// --- The machine of alarms ---------------------------------------------------------------------------

BOOST_FIXTURE_TEST_CASE(alarms_due_together_ring_in_order, timed)
{
    const auto t = clock.now() + 1s;
    clocks.start_own_watch(t);
    clocks.arm_loss();
    session = {t - 2s, 2s};  // the warning at t too
    clocks.start_lease(7, t);
    clocks.start_waiter(9, t, clock.now(), one_look_limit);
    clocks.start_lease(8, t - 1ns);  // earlier comes first
    BOOST_TEST(show(clocks.take_due(t, session)) == "lease(8) deadline(9) lease(7) loss own_watch");
    BOOST_TEST(clocks.take_due(t, session).empty());
    BOOST_TEST(!clocks.next(session).has_value());
}

BOOST_FIXTURE_TEST_CASE(the_timer_is_set_to_the_earliest_alarm_and_stops_when_none_is_left, timed)
{
    BOOST_TEST(!clocks.next(session).has_value());
    clocks.start_waiter(1, clock.now() + 30s, clock.now(), one_look_limit);
    clocks.start_lease(5, clock.now() + 10s);
    BOOST_TEST((clocks.next(session) == clock.now() + 10s));
    clocks.arm_loss();  // the warning: 2 s after the newest answered send
    BOOST_TEST((clocks.next(session) == clock.now() + 2s));
    clocks.disarm_loss();
    clocks.stop_lease(5);
    BOOST_TEST((clocks.next(session) == clock.now() + 30s));
    clocks.stop_waiter(1);
    clocks.stop_waiter(1);  // twice: nothing
    BOOST_TEST(!clocks.next(session).has_value());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_lock_clock
