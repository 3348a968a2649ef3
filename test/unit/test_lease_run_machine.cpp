// One run of the semaphore's protocol (core/lease_run_machine): events in, actions out, no server. The
// look at PATH before anything is made, the internal lock, pipelined creates and listing, waiting for the
// leases to shrink, one looks, a missing directory, lost answers, abandonment, and speculation (the lock
// let go with the first round's requests).
#include "recipes/core/lease_run_machine.hpp"

#include <zklock/error.hpp>

#include <boost/test/unit_test.hpp>

#include <string>

namespace unit_lease_run_machine {  // a namespace of its own: the unit tests compile as one translation unit

using namespace zklock::detail;
using R = run_action::type;

namespace {

const error_code lost_connection = zklock::zk_errc::connection_loss;
const error_code no_node = zklock::zk_errc::no_node;

std::string short_name(error_code ec)
{
    if (ec == zklock::error::timeout) return "timeout";
    if (ec == zklock::error::schema_mismatch) return "schema_mismatch";
    if (ec == zklock::error::no_create_permission) return "no_create_permission";
    if (ec == lost_connection) return "connection_loss";
    return ec.message();
}

std::string name(const run_action& a)
{
    switch (a.what) {
    case R::check_schema: return "check_schema";
    case R::schema_ok: return "schema_ok";
    case R::lock: return a.one_look ? "lock(once)" : "lock";
    case R::create_lease: return "create(" + std::to_string(a.round) + "." + std::to_string(a.index) + ")";
    case R::list_leases: return "list(" + std::to_string(a.round) + ")";
    case R::wait_leases: return "wait(" + std::to_string(a.round) + ")";
    case R::make_leases_dir: return "make_dir";
    case R::delete_node: return "delete(" + a.node.substr(a.node.rfind('-') + 1) + ")";
    case R::find_orphans: return "find_orphans";
    case R::unlock: return "unlock";
    case R::done: return a.ec ? "done(" + short_name(a.ec) + ")" : "done";
    }
    return "unknown";
}

std::string show(const lease_run_machine::actions& out)
{
    std::string s;
    for (const auto& a : out) s += (s.empty() ? "" : " ") + name(a);
    return s;
}

/// A lease node's full path with sequence `seq`, and its child name.
std::string node(int seq) { return "/s/leases/_c_u-lease-" + std::to_string(1000000000 + seq); }
std::string child(int seq) { return node(seq).substr(std::string("/s/leases/").size()); }

/// A machine for `n` of `max` leases, started with the schema known and the internal lock granted.
struct fixture {
    lease_run_machine m{1, 2, false, true};
    std::string start(std::size_t n, std::size_t max, bool one_look = false, bool schema_known = true,
                      bool speculate = false)
    {
        m = lease_run_machine(n, max, one_look, schema_known, speculate);
        return show(m.start());
    }
    std::string locked(error_code ec = {}) { return show(m.on_locked(ec)); }
    std::string created(std::uint64_t r, std::size_t i, int seq, error_code ec = {})
    {
        return show(m.on_created(r, i, ec, ec ? "" : node(seq), seq));
    }
    std::string listed(std::uint64_t r, std::vector<std::string> leases, error_code ec = {})
    {
        return show(m.on_listed(r, ec, leases));
    }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(lease_run_machine_tests)

BOOST_FIXTURE_TEST_CASE(a_lease_within_the_count_is_held_after_one_pipelined_round, fixture)
{
    BOOST_TEST(start(2, 3) == "lock");
    BOOST_TEST(locked() == "create(1.0) create(1.1) list(1)");
    BOOST_TEST(created(1, 0, 7) == "");
    BOOST_TEST(created(1, 1, 8) == "");
    BOOST_TEST(listed(1, {child(5), child(7), child(8)}) == "unlock done");
    auto leases = m.take_leases();
    BOOST_TEST(leases.size() == 2u);
    BOOST_TEST(leases[1].node == node(8));
    BOOST_TEST(leases[1].czxid == 8);
    BOOST_TEST(m.finished());
}

BOOST_FIXTURE_TEST_CASE(the_first_run_looks_at_the_path_before_it_makes_anything, fixture)
{
    BOOST_TEST(start(1, 2, false, false) == "check_schema");
    // A mutex's nodes there: refused before the internal lock would make PATH/locks.
    BOOST_TEST(show(m.on_schema({}, {"_c_a-lock-0000000001"})) == "done(schema_mismatch)");
    BOOST_TEST(m.finished());
    BOOST_TEST(show(m.abandon()) == "");
}

BOOST_FIXTURE_TEST_CASE(a_semaphores_path_or_a_missing_one_is_fine, fixture)
{
    start(1, 2, false, false);
    BOOST_TEST(show(m.on_schema({}, {"locks", "leases"})) == "schema_ok lock");
    start(1, 2, true, false);
    BOOST_TEST(show(m.on_schema(no_node, {})) == "schema_ok lock(once)");
    start(1, 2, false, false);
    BOOST_TEST(show(m.on_schema(lost_connection, {})) == "done(connection_loss)");  // retried by the queue
}

BOOST_FIXTURE_TEST_CASE(over_the_count_it_waits_for_a_change_and_lists_again, fixture)
{
    start(1, 2);
    locked();
    created(1, 0, 9);
    BOOST_TEST(listed(1, {child(5), child(6), child(9)}) == "wait(1)");
    BOOST_TEST(show(m.on_leases_changed(1)) == "list(2)");
    BOOST_TEST(show(m.on_leases_changed(1)) == "");  // a stale watch
    BOOST_TEST(listed(1, {child(9)}) == "");           // a stale listing
    BOOST_TEST(listed(2, {child(6), child(9)}) == "unlock done");
}

BOOST_FIXTURE_TEST_CASE(a_one_look_over_the_count_gives_up_and_deletes_its_node, fixture)
{
    BOOST_TEST(start(1, 1, true) == "lock(once)");
    locked();
    created(1, 0, 9);
    BOOST_TEST(listed(1, {child(5), child(9)}) == "unlock delete(1000000009) done(timeout)");
}

BOOST_FIXTURE_TEST_CASE(a_missing_leases_directory_is_made_and_the_leases_again, fixture)
{
    start(2, 3);
    locked();
    BOOST_TEST(created(1, 0, 0, no_node) == "make_dir");
    BOOST_TEST(created(1, 1, 4) == "delete(1000000004)");  // a round that was: its node goes
    BOOST_TEST(show(m.on_dir_made(zklock::zk_errc::node_exists)) == "create(3.0) create(3.1) list(3)");
    BOOST_TEST(listed(1, {}, no_node) == "");  // the first round's listing: stale
}

BOOST_FIXTURE_TEST_CASE(a_lease_node_deleted_by_someone_is_made_again, fixture)
{
    start(1, 2);
    locked();
    created(1, 0, 9);
    BOOST_TEST(listed(1, {child(5)}) == "delete(1000000009) create(3.0) list(3)");
}

BOOST_FIXTURE_TEST_CASE(abandoned_while_waiting_for_the_internal_lock_it_stops_waiting, fixture)
{
    start(1, 2);
    BOOST_TEST(show(m.abandon()) == "unlock");
    BOOST_TEST(locked() == "");  // a grant after that: the shell lets it go
    BOOST_TEST(show(m.abandon()) == "");
}

BOOST_FIXTURE_TEST_CASE(abandoned_with_leases_made_it_deletes_them_now_or_when_answered, fixture)
{
    start(2, 2);
    locked();
    created(1, 0, 7);
    BOOST_TEST(show(m.abandon()) == "unlock delete(1000000007)");
    BOOST_TEST(created(1, 1, 8) == "delete(1000000008)");
    BOOST_TEST(listed(1, {child(7), child(8)}) == "");
}

BOOST_FIXTURE_TEST_CASE(a_create_whose_answer_was_lost_is_looked_for_by_its_name, fixture)
{
    start(2, 2);
    locked();
    created(1, 0, 7);
    BOOST_TEST(created(1, 1, 0, lost_connection) == "unlock delete(1000000007) find_orphans done(connection_loss)");
    // After a failed run, a late lost answer is looked for too; after a run that holds its leases, never
    // (they share its name).
    BOOST_TEST(created(1, 1, 0, lost_connection) == "find_orphans");
    start(1, 2);
    locked();
    created(1, 0, 7);
    listed(1, {child(7)});
    BOOST_TEST(created(1, 0, 0, lost_connection) == "");
}

BOOST_FIXTURE_TEST_CASE(no_create_permission_is_said_as_such, fixture)
{
    start(1, 2);
    locked();
    auto out = m.on_created(1, 0, zklock::zk_errc::no_auth, "", 0);
    BOOST_TEST(show(out) == "unlock done(no_create_permission)");
}

BOOST_FIXTURE_TEST_CASE(the_internal_lock_refused_ends_the_run_with_its_error, fixture)
{
    start(1, 2, true);
    auto out = m.on_locked(zklock::error::timeout);
    BOOST_TEST(show(out) == "unlock done(timeout)");
}

// Speculating: the internal lock goes right behind the creates and the listing, which ZooKeeper answers
// before it performs that delete, so the count is the one Curator takes under the lock.
BOOST_FIXTURE_TEST_CASE(a_speculating_run_lets_the_lock_go_with_its_first_requests, fixture)
{
    BOOST_TEST(start(2, 3, false, true, true) == "lock");
    BOOST_TEST(locked() == "create(1.0) create(1.1) list(1) unlock");
    created(1, 0, 7);
    created(1, 1, 8);
    BOOST_TEST(listed(1, {child(7), child(8)}) == "done");  // no second unlock
    BOOST_TEST(m.take_leases().size() == 2u);
    BOOST_TEST(m.held_at_first_count());  // held at its first count: the next run speculates too
    // One that had to wait does not, though it holds in the end.
    start(1, 1);
    locked();
    created(1, 0, 7);
    listed(1, {child(5), child(7)});
    m.on_leases_changed(1);
    BOOST_TEST(listed(2, {child(7)}) == "unlock done");
    BOOST_TEST(!m.held_at_first_count());
}

BOOST_FIXTURE_TEST_CASE(a_speculation_over_the_count_deletes_its_leases_and_waits_under_the_lock, fixture)
{
    start(1, 2, false, true, true);
    locked();
    created(1, 0, 9);
    // Never a wait without the lock: its lease goes, the lock is taken again, and kept this time.
    BOOST_TEST(listed(1, {child(5), child(6), child(9)}) == "delete(1000000009) lock");
    BOOST_TEST(!m.held_at_first_count());
    BOOST_TEST(locked() == "create(3.0) list(3)");
    created(3, 0, 10);
    BOOST_TEST(listed(3, {child(5), child(6), child(10)}) == "wait(3)");
    BOOST_TEST(show(m.on_leases_changed(3)) == "list(4)");
    BOOST_TEST(listed(4, {child(6), child(10)}) == "unlock done");
    BOOST_TEST(m.take_leases().front().node == node(10));
}

BOOST_FIXTURE_TEST_CASE(a_speculating_one_look_over_the_count_only_deletes_its_node, fixture)
{
    start(1, 1, true, true, true);
    BOOST_TEST(locked() == "create(1.0) list(1) unlock");
    created(1, 0, 9);
    BOOST_TEST(listed(1, {child(5), child(9)}) == "delete(1000000009) done(timeout)");
}

BOOST_FIXTURE_TEST_CASE(after_a_speculation_a_missing_directory_or_lease_takes_the_lock_again, fixture)
{
    start(1, 2, false, true, true);
    locked();
    BOOST_TEST(created(1, 0, 0, no_node) == "make_dir");
    BOOST_TEST(show(m.on_dir_made({})) == "lock");  // the lock went with the failed round
    BOOST_TEST(locked() == "create(3.0) list(3)");

    start(1, 2, false, true, true);
    locked();
    created(1, 0, 9);
    BOOST_TEST(listed(1, {child(5)}) == "delete(1000000009) lock");  // our node deleted by someone
    BOOST_TEST(locked() == "create(3.0) list(3)");
}

BOOST_FIXTURE_TEST_CASE(abandoned_after_a_speculation_it_only_deletes_its_leases, fixture)
{
    start(1, 2, false, true, true);
    locked();
    created(1, 0, 7);
    BOOST_TEST(show(m.abandon()) == "delete(1000000007)");  // the lock is gone already
    BOOST_TEST(listed(1, {child(7)}) == "");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_lease_run_machine
