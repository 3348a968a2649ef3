// Cooperative revocation in the two machines: the contender reports Curator's "__REVOKE__" in its held
// node's data; the local queue tells the holders' listeners, and gives up a lingering node at once.
#include "contender_fixture.hpp"
#include "recipes/core/local_queue.hpp"

#include <boost/asio/error.hpp>

namespace unit_revocation_machines {  // a namespace of its own: the unit tests compile as one translation unit

using namespace contender_test;

namespace {

using Q = queue_action::type;

bool first_is(const local_queue::actions& out, Q what) { return !out.empty() && out.front().what == what; }

std::size_t count(const local_queue::actions& out, Q what)
{
    return static_cast<std::size_t>(std::count_if(out.begin(), out.end(), [&](const auto& a) { return a.what == what; }));
}

std::uint64_t first_holder(const local_queue::actions& out)
{
    for (const auto& a : out)
        if (a.what == Q::grant) return a.holder;
    BOOST_FAIL("no grant");
    return 0;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(revocation_machines)

BOOST_FIXTURE_TEST_CASE(the_contender_reports_a_revoke_request_in_its_own_data, fixture)
{
    hold();
    BOOST_TEST(show(m.on_data(0, watch_slot::own, ok, 100, "report")).find("revoke") == std::string::npos);
    BOOST_TEST(show(m.on_watch_fired(0, watch_slot::own, ok, wet::data_changed)) == "get_data(" + own + ")");
    BOOST_TEST(show(m.on_data(0, watch_slot::own, ok, 100, "__REVOKE__")) == "await_watch[own] revoke_requested");
    m.release();
    BOOST_TEST(m.on_data(0, watch_slot::own, ok, 100, "__REVOKE__").empty());  // finished: nobody to tell
}

BOOST_AUTO_TEST_CASE(the_queue_tells_every_holder_and_later_listeners_at_once)
{
    local_queue q({true, 10, false});
    q.observe(true, {}, false);
    q.acquire(1, false);
    q.acquire(2, false);
    const auto grants = q.on_acquired();
    const auto h1 = first_holder(grants);
    BOOST_TEST(first_is(q.wait_revoked(10, h1), Q::watch_own));  // the first listener has the node watched
    BOOST_TEST(q.wait_revoked(11, h1 + 1).empty());
    BOOST_TEST(first_is(q.wait_revoked(12, 999), Q::abort_revoke_waiter));  // not a holder
    BOOST_TEST(count(q.on_revoke_requested(), Q::notify_revoked) == 2u);
    BOOST_TEST(first_is(q.wait_revoked(13, h1), Q::notify_revoked));  // asked already
    BOOST_TEST(first_is(q.wait_revoked(14, h1), Q::notify_revoked));
    BOOST_TEST(q.cancel_revoked(14).empty());  // completed already
}

BOOST_AUTO_TEST_CASE(a_release_aborts_its_listeners_and_a_new_node_starts_unasked)
{
    local_queue q({false, 10, false});
    q.observe(true, {}, false);
    q.acquire(1, false);
    const auto h = first_holder(q.on_acquired());
    q.wait_revoked(10, h);
    q.on_revoke_requested();
    q.acquire(2, false);
    const auto handed = q.release(h, true);  // hand-off: same node, already asked
    const auto h2 = first_holder(handed);
    BOOST_TEST(first_is(q.wait_revoked(11, h2), Q::notify_revoked));
    const auto out = q.release(h2, true);  // no waiters: the node goes
    BOOST_TEST(count(out, Q::release_contender) == 1u);
    q.acquire(3, false);
    const auto h3 = first_holder(q.on_acquired());
    const auto listen = q.wait_revoked(12, h3);  // a new node: nobody asked yet, and it is watched from now on
    BOOST_TEST(count(listen, Q::notify_revoked) == 0u);
    BOOST_TEST(count(listen, Q::watch_own) == 1u);
    BOOST_TEST(first_is(q.cancel_revoked(12), Q::abort_revoke_waiter));
}

BOOST_AUTO_TEST_CASE(a_lingering_node_goes_when_revoked)
{
    local_queue q({false, 10, true});
    q.observe(true, {}, false);
    q.acquire(1, false);
    q.release(first_holder(q.on_acquired()), true);  // lingers
    BOOST_TEST(count(q.on_revoke_requested(), Q::release_contender) == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_revocation_machines
