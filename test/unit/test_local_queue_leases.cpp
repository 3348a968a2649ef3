// Hold-time limits without a server: what the local queue does when a holder's lease runs out (the shell's
// timer sends on_lease_expired), and the lock node's data that shows owners and lease deadlines.
#include "local_queue_fixture.hpp"

#include "recipes/core/node_data.hpp"

namespace unit_local_queue_leases {  // a namespace of its own: the unit tests compile as one translation unit


using namespace local_queue_test;

BOOST_AUTO_TEST_SUITE(lease_tests)

BOOST_FIXTURE_TEST_CASE(an_expired_lease_releases_the_node_and_tells_the_holder, fixture)
{
    const auto h = hold_first();
    BOOST_TEST(kinds(at().wait_lost(100, h)) == "watch_own");
    auto out = at().on_lease_expired(h);
    BOOST_TEST(kinds(out) == "notify_lost cancel_loss_clock release_contender");
    BOOST_TEST(out[0].id == 100u);
    BOOST_TEST(out[0].ec == lease_expired);
    BOOST_TEST(!q.holds(h));
    BOOST_TEST(q.lost(h) == lease_expired);  // the guard still says why, until it is released
    out = at().wait_lost(101, h);            // and a listener that comes later hears it at once
    BOOST_TEST(kinds(out) == "notify_lost");
    BOOST_TEST(out[0].ec == lease_expired);
    BOOST_TEST(at().enter(h) == 0u);  // no re-entry on an expired hold
    out = release(h);
    BOOST_TEST(kinds(out) == "release_done");  // nothing more to delete
    BOOST_TEST(out[0].ec == lease_expired);
    BOOST_TEST(q.lost(h) == error_code{});
    BOOST_TEST(kinds(release(h)) == "release_done");  // a second release: not held
}

BOOST_FIXTURE_TEST_CASE(an_expired_lease_hands_the_lock_to_the_next_local_waiter, fixture)
{
    const auto h = hold_first();
    BOOST_TEST(acquire(2).empty());  // queued behind the holder
    auto out = at().on_lease_expired(h);
    BOOST_TEST(granted(out) == ids{2});
    const auto h2 = holder(out, 2);
    BOOST_TEST(q.holds(h2));
    BOOST_TEST(q.lost(h2) == error_code{});  // the next holder lost nothing
    BOOST_TEST(q.lost(h) == lease_expired);
    out = release(h);  // the old guard's release does not touch the new holder
    BOOST_TEST(kinds(out) == "release_done");
    BOOST_TEST(q.holds(h2));
}

BOOST_FIXTURE_TEST_CASE(a_lease_running_out_after_a_loss_keeps_the_first_reason, fixture)
{
    const auto h = hold_first();
    at().on_lost(deleted);
    BOOST_TEST(at().on_lease_expired(h).empty());
    BOOST_TEST(q.lost(h) == deleted);
    BOOST_TEST(at().on_lease_expired(999).empty());  // an unknown holder: nothing
}

BOOST_FIXTURE_TEST_CASE(one_reader_expiring_leaves_the_other_readers_holding, fixture)
{
    remake(true, 10, false);
    BOOST_REQUIRE(kinds(acquire(1)) == "start_contender");
    BOOST_TEST(acquire(2).empty());
    auto out = at().on_acquired();
    BOOST_TEST(granted(out) == (ids{1, 2}));
    const auto r1 = holder(out, 1), r2 = holder(out, 2);
    out = at().on_lease_expired(r1);
    BOOST_TEST(kinds(out) == "release_done");  // the node stays for the other reader
    BOOST_TEST(q.holds(r2));
    BOOST_TEST(q.lost(r1) == lease_expired);
}

BOOST_AUTO_TEST_CASE(node_data_round_trips)
{
    BOOST_TEST(encode_node_data("web-3:4711", std::nullopt) == "web-3:4711");
    BOOST_TEST(encode_node_data("web-3:4711", 1763870000123) == "web-3:4711\nlease-until-ms=1763870000123");
    auto d = decode_node_data("web-3:4711\nlease-until-ms=1763870000123");
    BOOST_TEST(d.owner == "web-3:4711");
    BOOST_REQUIRE(d.lease_until_ms.has_value());
    BOOST_TEST(*d.lease_until_ms == 1763870000123);
    BOOST_TEST(!d.revoke_requested);
    // A semaphore's lease node also records its N.
    BOOST_TEST(encode_node_data("web-3:4711", std::nullopt, 3) == "web-3:4711\nmax-permits=3");
    d = decode_node_data(encode_node_data("web-3:4711", 1763870000123, 3));
    BOOST_TEST(d.owner == "web-3:4711");
    BOOST_TEST(d.lease_until_ms.value_or(0) == 1763870000123);
    BOOST_TEST(d.max_permits.value_or(0) == 3u);
    BOOST_TEST(!decode_node_data("web-3:4711\nmax-permits=3x").max_permits.has_value());
    // An owner with a newline cannot forge a lease line.
    d = decode_node_data(encode_node_data("evil\nlease-until-ms=1", std::nullopt));
    BOOST_TEST(d.owner == "evil");
    BOOST_TEST(!d.lease_until_ms.has_value());
}

BOOST_AUTO_TEST_CASE(other_clients_data_reads_as_an_owner)
{
    auto d = decode_node_data("10.0.0.5");  // Curator: the client's address
    BOOST_TEST(d.owner == "10.0.0.5");
    BOOST_TEST(!d.lease_until_ms.has_value());
    d = decode_node_data("__REVOKE__");  // Curator's revocation request replaced the data
    BOOST_TEST(d.revoke_requested);
    BOOST_TEST(d.owner.empty());
    d = decode_node_data("");
    BOOST_TEST(d.owner.empty());
    d = decode_node_data("a:1\nlease-until-ms=12x\nfuture-key=3");  // a bad number and an unknown line
    BOOST_TEST(d.owner == "a:1");
    BOOST_TEST(!d.lease_until_ms.has_value());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_local_queue_leases
