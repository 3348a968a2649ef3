// Which of a semaphore's lease nodes hold and which wait, as a table: what the server shows of each lease
// and of the internal lock's head in, holds/waits out, no server.
#include "recipes/core/lease_waiters.hpp"

#include <boost/test/unit_test.hpp>

#include <optional>
#include <vector>

namespace unit_lease_waiters {  // a namespace of its own: the unit tests compile as one translation unit

using namespace zklock::detail;

namespace {

struct row {
    const char* what;
    std::vector<node_origin> leases;  // {czxid, session}, in sequence order
    std::optional<node_origin> head;
    std::vector<bool> holding;
};

constexpr std::int64_t a = 0xa, b = 0xb, c = 0xc;

const row rows[] = {
    {"no lease", {}, node_origin{50, b}, {}},
    {"nobody holds the internal lock: every lease holds", {{10, a}, {20, b}, {30, b}}, std::nullopt,
     {true, true, true}},
    {"a single waiter: its lease, made after its lock node", {{10, a}, {60, b}}, node_origin{50, b}, {true, false}},
    {"an acquire_many waiter: every lease of its run waits", {{10, a}, {60, b}, {61, b}, {62, b}},
     node_origin{50, b}, {true, false, false, false}},
    {"the run's session holds older leases (earlier runs, made before this run's lock node)",
     {{10, b}, {20, a}, {30, b}, {60, b}, {61, b}}, node_origin{50, b}, {true, true, true, false, false}},
    {"another session's leases made while the run's lock node queued (the previous run's) hold",
     {{10, a}, {55, c}, {56, c}, {60, b}}, node_origin{50, b}, {true, true, true, false}},
    {"the run has taken the lock but made no lease yet", {{10, a}, {20, c}}, node_origin{50, b}, {true, true}},
    {"a lease of another session after the head node cannot be the run's", {{10, a}, {70, c}}, node_origin{50, b},
     {true, true}},
};

}  // namespace

BOOST_AUTO_TEST_SUITE(lease_waiters)

BOOST_AUTO_TEST_CASE(the_run_at_the_head_of_the_internal_lock_owns_the_waiting_leases)
{
    for (const auto& r : rows)
        BOOST_TEST_CONTEXT(r.what)
        {
            const auto got = leases_holding(r.leases, r.head);
            BOOST_TEST(got == r.holding, boost::test_tools::per_element());
        }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_lease_waiters
