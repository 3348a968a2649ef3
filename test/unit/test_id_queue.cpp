// The waiters' queue in id order (recipes/core/id_queue.hpp): each case is a script of operations, checked
// after every step against a std::map, the container it replaced.
#include "recipes/core/id_queue.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace unit_id_queue {  // a namespace of its own: the unit tests compile as one translation unit

using zklock::detail::id_queue;

namespace {

struct op {
    enum kind { add, pop, cancel, find, clear } what;
    std::uint64_t id = 0;
};

// Runs `script` on an id_queue and on a std::map side by side; the two must agree after each step.
void run(const std::vector<op>& script)
{
    id_queue<std::unique_ptr<int>> q;  // move-only, as a waiter's handler is
    std::map<std::uint64_t, int> model;
    std::size_t step = 0;
    for (const auto& o : script) {
        BOOST_TEST_CONTEXT("step " << step++) {
            switch (o.what) {
            case op::add:
                q.emplace(o.id, std::make_unique<int>(static_cast<int>(o.id)));
                model.emplace(o.id, static_cast<int>(o.id));
                break;
            case op::pop:
                BOOST_TEST_REQUIRE(!q.empty());
                BOOST_TEST(q.front_id() == model.begin()->first);
                BOOST_TEST(*q.front() == model.begin()->second);
                q.pop_front();
                model.erase(model.begin());
                break;
            case op::cancel: {
                auto taken = q.take(o.id);
                BOOST_TEST(taken.has_value() == (model.erase(o.id) == 1));
                if (taken) BOOST_TEST(**taken == static_cast<int>(o.id));
                break;
            }
            case op::find: {
                const auto* found = q.find(o.id);
                BOOST_TEST((found != nullptr) == model.contains(o.id));
                if (found) BOOST_TEST(**found == static_cast<int>(o.id));
                break;
            }
            case op::clear:
                q.clear();
                model.clear();
                break;
            }
            BOOST_TEST(q.size() == model.size());
            BOOST_TEST(q.empty() == model.empty());
            std::vector<std::uint64_t> ids, expected;
            q.for_each([&](std::uint64_t id, const std::unique_ptr<int>& v) {
                BOOST_TEST(*v == static_cast<int>(id));
                ids.push_back(id);
            });
            for (const auto& [id, v] : model) expected.push_back(id);
            BOOST_TEST(ids == expected, boost::test_tools::per_element());
        }
    }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(id_queue_tests)

BOOST_AUTO_TEST_CASE(grants_in_id_order)
{
    run({{op::add, 1}, {op::add, 2}, {op::add, 3}, {op::pop}, {op::add, 4}, {op::pop}, {op::pop}, {op::pop}});
}

BOOST_AUTO_TEST_CASE(a_cancelled_waiter_is_skipped_wherever_it_stood)
{
    run({{op::add, 1}, {op::add, 2}, {op::add, 3}, {op::add, 4}, {op::cancel, 2}, {op::find, 2}, {op::find, 3},
         {op::pop}, {op::pop}, {op::cancel, 4}, {op::find, 4}, {op::add, 5}, {op::pop}});
    run({{op::add, 1}, {op::add, 2}, {op::cancel, 1}, {op::pop}});   // the front
    run({{op::add, 1}, {op::add, 2}, {op::cancel, 2}, {op::add, 3}, {op::pop}, {op::pop}});  // the back
}

BOOST_AUTO_TEST_CASE(unknown_or_gone_ids_are_refused)
{
    run({{op::cancel, 7}, {op::find, 7}, {op::add, 7}, {op::cancel, 7}, {op::cancel, 7}, {op::find, 7},
         {op::add, 8}, {op::find, 6}, {op::find, 9}, {op::cancel, 9}, {op::pop}, {op::cancel, 8}});
}

BOOST_AUTO_TEST_CASE(an_id_that_arrives_late_takes_its_place)
{
    // A caller on another thread took its id first and hopped onto the executor second.
    run({{op::add, 5}, {op::add, 7}, {op::add, 6}, {op::add, 2}, {op::find, 6}, {op::pop}, {op::pop}, {op::cancel, 7},
         {op::add, 3}, {op::pop}, {op::pop}});
}

BOOST_AUTO_TEST_CASE(emptied_and_cleared_queues_start_over)
{
    run({{op::add, 1}, {op::pop}, {op::add, 2}, {op::add, 3}, {op::clear}, {op::find, 2}, {op::add, 4}, {op::pop}});
}

BOOST_AUTO_TEST_CASE(long_runs_with_holes_keep_every_waiter)
{
    // Enough waiters and holes that the buffer is compacted many times, from the front and for holes.
    std::vector<op> script;
    std::uint64_t next = 1;
    for (int round = 0; round < 40; ++round) {
        for (int i = 0; i < 25; ++i) script.push_back({op::add, next++});
        for (std::uint64_t id = next - 25; id < next; id += 3) script.push_back({op::cancel, id});
        for (int i = 0; i < 10; ++i) script.push_back({op::pop});
        script.push_back({op::find, next - 2});
    }
    while (script.size() < 4000) script.push_back({op::cancel, next - 1 - script.size() % 500});
    run(script);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_id_queue
