// The holding predicates of every recipe, as tables: names in, verdicts out, no server.
#include "recipes/core/schema.hpp"

#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace unit_schema {  // a namespace of its own: the unit tests compile as one translation unit

using namespace zklock::detail;

namespace {

using names = std::vector<std::string>;
using opt_schema = std::optional<lock_schema>;

// One row of a decide() table: our node `own` of `kind` among `children`, and what must come out.
struct decide_row {
    const char* what;
    contender_kind kind;
    names children;
    std::string own;
    bool found;
    bool holds;
    std::string watch;  // empty when holding (or not found)
    bool last_obstacle;
    std::size_t ahead;
    opt_schema foreign;
};

void check(const decide_row& row)
{
    BOOST_TEST_CONTEXT(row.what)
    {
        const auto v = decide(row.kind, row.children, row.own);
        BOOST_TEST(v.found == row.found);
        BOOST_TEST(v.holds == row.holds);
        BOOST_TEST((v.obstacles.empty() ? std::string() : v.obstacles.front()) == row.watch);  // the nearest first
        BOOST_TEST((v.obstacles.size() == 1) == row.last_obstacle);
        BOOST_TEST(v.obstacles.size() == (row.found ? row.ahead : 0u));
        BOOST_TEST(v.ahead == row.ahead);
        BOOST_TEST((v.foreign == row.foreign));
    }
}

void check_all(const std::vector<decide_row>& rows)
{
    for (const auto& row : rows) check(row);
}

constexpr auto ex = contender_kind::exclusive;
constexpr auto rd = contender_kind::reader;
constexpr auto wr = contender_kind::writer;
constexpr auto la = contender_kind::latch;

}  // namespace

BOOST_AUTO_TEST_SUITE(schema)

BOOST_AUTO_TEST_CASE(classify_gives_each_name_its_role)
{
    struct row {
        const char* name;
        opt_schema schema;
        bool contender;
        bool excludes_readers;
    };
    const std::vector<row> rows{
        {"_c_8088ec7b-e828-4085-84cf-3a83703ae629-lock-0000000042", lock_schema::mutex, true, true},  // Curator, zklock
        {"lock-0000000001", lock_schema::mutex, true, true},
        {"x-lock-0000000001", lock_schema::mutex, true, true},
        {"5c1bdcb0d0e946a4bb0e8d31ad4b2f1a__lock__0000000007", lock_schema::mutex, true, true},    // kazoo Lock
        {"5c1bdcb0d0e946a4bb0e8d31ad4b2f1a__rlock__0000000008", lock_schema::mutex, true, true},   // kazoo read lock
        {"_c_x-lock--2147483648", lock_schema::mutex, true, true},                                 // after the wrap
        {"_c_u-__READ__0000000003", lock_schema::read_write, true, false},
        {"_c_u-__WRIT__0000000004", lock_schema::read_write, true, true},
        {"_c_u-__READ__-000000005", lock_schema::read_write, true, false},
        {"locks", lock_schema::semaphore, false, false},
        {"leases", lock_schema::semaphore, false, false},
        // Data children and foreign names: nothing.
        {"config", std::nullopt, false, false},
        {"report-0000000000", std::nullopt, false, false},
        {"x-72057594037927936-0000000003", std::nullopt, false, false},  // ZooKeeper's own recipe
        {"lock-12345", std::nullopt, false, false},                      // too short for "%010d"
        {"_c_u-lock-00000a0001", std::nullopt, false, false},
        {"_c_u-lock-2147483648", std::nullopt, false, false},  // out of range without the sign
        {"_c_u-__READ__", std::nullopt, false, false},
        {"lockers", std::nullopt, false, false},
    };
    for (const auto& r : rows) {
        BOOST_TEST_CONTEXT(r.name)
        {
            const auto role = classify(r.name);
            BOOST_TEST((role.schema == r.schema));
            BOOST_TEST(role.contender == r.contender);
            BOOST_TEST(role.excludes_readers == r.excludes_readers);
        }
    }
}

BOOST_AUTO_TEST_CASE(markers_and_schemas_of_each_kind)
{
    BOOST_TEST(marker(ex) == "lock-");
    BOOST_TEST(marker(wr) == "__WRIT__");
    BOOST_TEST(marker(rd) == "__READ__");
    BOOST_TEST(marker(la) == "latch-");
    BOOST_TEST((schema_of(la) == lock_schema::latch));
    BOOST_TEST((schema_of(ex) == lock_schema::mutex));
    BOOST_TEST((schema_of(wr) == lock_schema::read_write));
    BOOST_TEST((schema_of(rd) == lock_schema::read_write));
    // A contender's own name classifies as its kind's schema.
    for (auto k : {ex, wr, rd, la}) {
        const auto role = classify("_c_u-" + std::string(marker(k)) + "0000000001");
        BOOST_TEST((role.schema == schema_of(k)));
        BOOST_TEST(role.excludes_readers == (k != rd));
    }
    BOOST_TEST(describe(lock_schema::mutex) != describe(lock_schema::read_write));
    BOOST_TEST(describe(lock_schema::read_write).find("__READ__") != std::string_view::npos);
    BOOST_TEST(describe(lock_schema::semaphore).find("leases") != std::string_view::npos);
}

// Curator's LeaderLatch: the lowest latch node leads, each watches the one just ahead, and a mutex's
// node beside them makes the directory foreign (LeaderLatch orders every child by name).
BOOST_AUTO_TEST_CASE(latch_lowest_leads_among_latch_nodes_only)
{
    const names kids{"_c_a-latch-0000000003", "_c_b-latch-0000000001", "_c_c-latch-0000000002"};
    check_all({
        {"head", la, kids, "_c_b-latch-0000000001", true, true, "", false, 0, {}},
        {"second", la, kids, "_c_c-latch-0000000002", true, false, "_c_b-latch-0000000001", true, 1, {}},
        {"third", la, kids, "_c_a-latch-0000000003", true, false, "_c_c-latch-0000000002", false, 2, {}},
        {"a selector's node beside", la, {"_c_b-latch-0000000001", "_c_x-lock-0000000000"}, "_c_b-latch-0000000001",
         true, true, "", false, 0, lock_schema::mutex},
        {"a latch among mutex nodes", ex, {"_c_x-lock-0000000002", "_c_b-latch-0000000001"}, "_c_x-lock-0000000002",
         true, true, "", false, 0, lock_schema::latch},
    });
}

BOOST_AUTO_TEST_CASE(mutex_lowest_holds_and_each_watches_the_one_just_ahead)
{
    const names kids{"_c_a-lock-0000000003", "_c_b-lock-0000000001", "_c_c-lock-0000000002", "config",
                     "report-0000000000"};
    check_all({
        {"head", ex, kids, "_c_b-lock-0000000001", true, true, "", false, 0, {}},
        {"second", ex, kids, "_c_c-lock-0000000002", true, false, "_c_b-lock-0000000001", true, 1, {}},
        {"third", ex, kids, "_c_a-lock-0000000003", true, false, "_c_c-lock-0000000002", false, 2, {}},
        {"gone", ex, kids, "_c_d-lock-0000000004", false, false, "", false, 0, {}},
        {"alone", ex, {"_c_a-lock-0000000009"}, "_c_a-lock-0000000009", true, true, "", false, 0, {}},
        {"empty", ex, {}, "_c_a-lock-0000000009", false, false, "", false, 0, {}},
    });
}

BOOST_AUTO_TEST_CASE(data_children_are_ignored)
{
    // "report-0000000000" has a lower number but is no contender; "config" is no contender at all.
    const names kids{"report-0000000000", "config", "_c_a-lock-0000000005", "_c_b-lock-0000000006", "locksmith"};
    check_all({
        {"mutex head", ex, kids, "_c_a-lock-0000000005", true, true, "", false, 0, {}},
        {"mutex second", ex, kids, "_c_b-lock-0000000006", true, false, "_c_a-lock-0000000005", true, 1, {}},
        {"writer alone", wr, {"config", "report-0000000000", "_c_w-__WRIT__0000000004"}, "_c_w-__WRIT__0000000004",
         true, true, "", false, 0, {}},
    });
}

BOOST_AUTO_TEST_CASE(foreign_prefixes_of_the_same_schema_queue_together)
{
    // A string sort would put kazoo's "0a..." before "_c_" and "x-" whatever their numbers.
    const names kids{"_c_zz-lock-0000000010", "0aaa__lock__0000000011", "x-lock-0000000009",
                     "5c1b__rlock__0000000012"};
    check_all({
        {"x-lock holds", ex, kids, "x-lock-0000000009", true, true, "", false, 0, {}},
        {"curator behind x-lock", ex, kids, "_c_zz-lock-0000000010", true, false, "x-lock-0000000009", true, 1, {}},
        {"kazoo behind both", ex, kids, "0aaa__lock__0000000011", true, false, "_c_zz-lock-0000000010", false, 2, {}},
        {"kazoo read lock excludes too", ex, kids, "5c1b__rlock__0000000012", true, false, "0aaa__lock__0000000011",
         false, 3, {}},
    });
}

BOOST_AUTO_TEST_CASE(sequence_order_survives_the_signed_wrap)
{
    const names kids{"_c_d-lock--2147483647", "_c_a-lock-2147483646", "_c_c-lock--2147483648", "_c_b-lock-2147483647"};
    check_all({
        {"oldest holds", ex, kids, "_c_a-lock-2147483646", true, true, "", false, 0, {}},
        {"INT32_MAX", ex, kids, "_c_b-lock-2147483647", true, false, "_c_a-lock-2147483646", true, 1, {}},
        {"INT32_MIN after INT32_MAX", ex, kids, "_c_c-lock--2147483648", true, false, "_c_b-lock-2147483647", false, 2,
         {}},
        {"one past the wrap", ex, kids, "_c_d-lock--2147483647", true, false, "_c_c-lock--2147483648", false, 3, {}},
        {"reader after the wrap waits for the writer before it", rd,
         {"_c_w-__WRIT__2147483647", "_c_r-__READ__-2147483648"}, "_c_r-__READ__-2147483648", true, false,
         "_c_w-__WRIT__2147483647", true, 1, {}},
    });
}

BOOST_AUTO_TEST_CASE(the_obstacles_come_nearest_first_across_the_wrap)
{
    const names kids{"_c_d-lock--2147483647", "_c_a-lock-2147483646", "_c_c-lock--2147483648", "_c_b-lock-2147483647"};
    const names nearest_first{"_c_c-lock--2147483648", "_c_b-lock-2147483647", "_c_a-lock-2147483646"};
    BOOST_TEST(decide(ex, kids, "_c_d-lock--2147483647").obstacles == nearest_first, boost::test_tools::per_element());
    const names rw{"_c_w-__WRIT__0000000001", "_c_r-__READ__0000000002", "_c_v-__WRIT__0000000003",
                   "_c_s-__READ__0000000004", "_c_o-__READ__0000000005"};
    const names writers_only{"_c_v-__WRIT__0000000003", "_c_w-__WRIT__0000000001"};
    BOOST_TEST(decide(rd, rw, "_c_o-__READ__0000000005").obstacles == writers_only, boost::test_tools::per_element());
    BOOST_TEST(decide(wr, rw, "_c_v-__WRIT__0000000003").obstacles.size() == 2u);  // a writer waits for readers too
}

BOOST_AUTO_TEST_CASE(a_long_queue_ahead_names_only_the_nearest_few)
{
    names kids;
    for (int i = 1000; i >= 0; --i) kids.push_back("_c_x-lock-" + std::to_string(1000000000 + i));  // shuffled order
    std::swap(kids[3], kids[700]);
    const auto v = decide(ex, kids, "_c_x-lock-1000001000");
    BOOST_TEST(v.ahead == 1000u);
    BOOST_TEST(!v.holds);
    BOOST_REQUIRE(v.obstacles.size() == most_obstacles_listed);
    for (std::size_t i = 0; i < v.obstacles.size(); ++i)
        BOOST_TEST(v.obstacles[i] == "_c_x-lock-" + std::to_string(1000000999 - i));
}

BOOST_AUTO_TEST_CASE(readers_and_writers_in_one_queue)
{
    // R1 R2 W3 R4 W5 R6, listed out of order.
    const names kids{"_c_6-__READ__0000000006", "_c_3-__WRIT__0000000003", "_c_1-__READ__0000000001",
                     "_c_5-__WRIT__0000000005", "_c_2-__READ__0000000002", "_c_4-__READ__0000000004"};
    check_all({
        {"first reader holds", rd, kids, "_c_1-__READ__0000000001", true, true, "", false, 0, {}},
        {"reader behind a reader holds", rd, kids, "_c_2-__READ__0000000002", true, true, "", false, 0, {}},
        {"writer behind readers watches the nearest", wr, kids, "_c_3-__WRIT__0000000003", true, false,
         "_c_2-__READ__0000000002", false, 2, {}},
        {"reader behind one writer", rd, kids, "_c_4-__READ__0000000004", true, false, "_c_3-__WRIT__0000000003",
         true, 1, {}},
        {"writer behind everyone watches the reader just ahead", wr, kids, "_c_5-__WRIT__0000000005", true, false,
         "_c_4-__READ__0000000004", false, 4, {}},
        {"reader behind two writers watches the nearest writer", rd, kids, "_c_6-__READ__0000000006", true, false,
         "_c_5-__WRIT__0000000005", false, 2, {}},
    });
}

// A downgrade's read node passes over its own session's write node, and over nothing else.
BOOST_AUTO_TEST_CASE(a_downgrades_reader_passes_over_its_own_writer_only)
{
    const std::string own_w = "_c_a-__WRIT__0000000001", own_r = "_c_a2-__READ__0000000003";
    const names alone{own_w, "_c_b-__READ__0000000002", own_r};
    auto v = decide(rd, alone, own_r, own_w);
    BOOST_TEST(v.holds);
    BOOST_TEST(!decide(rd, alone, own_r).holds);  // without it, the write node is ahead
    const names writer_between{own_w, "_c_c-__WRIT__0000000002", own_r};
    v = decide(rd, writer_between, own_r, own_w);
    BOOST_TEST(!v.holds);
    BOOST_TEST(v.obstacles.front() == "_c_c-__WRIT__0000000002");  // another session's writer queued meanwhile
    BOOST_TEST(v.ahead == 1u);
}

BOOST_AUTO_TEST_CASE(writer_and_reader_pairs)
{
    check_all({
        {"writer behind a reader waits", wr, {"_c_r-__READ__0000000001", "_c_w-__WRIT__0000000002"},
         "_c_w-__WRIT__0000000002", true, false, "_c_r-__READ__0000000001", true, 1, {}},
        {"writer ahead of a reader holds", wr, {"_c_w-__WRIT__0000000001", "_c_r-__READ__0000000002"},
         "_c_w-__WRIT__0000000001", true, true, "", false, 0, {}},
        {"reader behind a writer waits", rd, {"_c_w-__WRIT__0000000001", "_c_r-__READ__0000000002"},
         "_c_r-__READ__0000000002", true, false, "_c_w-__WRIT__0000000001", true, 1, {}},
        {"reader ignores a writer behind it", rd, {"_c_r-__READ__0000000001", "_c_w-__WRIT__0000000002"},
         "_c_r-__READ__0000000001", true, true, "", false, 0, {}},
        {"writer behind a writer", wr, {"_c_a-__WRIT__0000000001", "_c_b-__WRIT__0000000002"},
         "_c_b-__WRIT__0000000002", true, false, "_c_a-__WRIT__0000000001", true, 1, {}},
        {"reader skips readers to the nearest writer", rd,
         {"_c_w-__WRIT__0000000001", "_c_a-__READ__0000000002", "_c_b-__READ__0000000003", "_c_r-__READ__0000000004"},
         "_c_r-__READ__0000000004", true, false, "_c_w-__WRIT__0000000001", true, 1, {}},
    });
}

BOOST_AUTO_TEST_CASE(foreign_schemas_are_reported)
{
    const std::string own_m = "_c_u-lock-0000000005";
    const std::string own_w = "_c_u-__WRIT__0000000005";
    const std::string own_r = "_c_u-__READ__0000000005";
    for (const auto& [what, kind, kids, own, foreign] : std::vector<std::tuple<const char*, contender_kind, names,
                                                                               std::string, lock_schema>>{
             {"mutex sees a writer", ex, {own_m, "_c_x-__WRIT__0000000001"}, own_m, lock_schema::read_write},
             {"mutex sees a reader", ex, {"_c_x-__READ__0000000009", own_m}, own_m, lock_schema::read_write},
             {"writer sees -lock-", wr, {own_w, "_c_x-lock-0000000001"}, own_w, lock_schema::mutex},
             {"reader sees -lock-", rd, {own_r, "_c_x-lock-0000000001"}, own_r, lock_schema::mutex},
             {"writer sees kazoo's __lock__", wr, {own_w, "0aaa__lock__0000000007"}, own_w, lock_schema::mutex},
             {"reader sees kazoo's __rlock__", rd, {own_r, "0aaa__rlock__0000000007"}, own_r, lock_schema::mutex},
             {"mutex sees a semaphore's locks", ex, {"locks", own_m}, own_m, lock_schema::semaphore},
             {"mutex sees a semaphore's leases", ex, {own_m, "leases"}, own_m, lock_schema::semaphore},
             {"reader sees a semaphore", rd, {"leases", "locks", own_r}, own_r, lock_schema::semaphore},
             {"reported even when our node is gone", ex, {"_c_x-__WRIT__0000000001"}, own_m, lock_schema::read_write},
         }) {
        BOOST_TEST_CONTEXT(what)
        {
            const auto v = decide(kind, kids, own);
            BOOST_TEST((v.foreign == opt_schema(foreign)));
        }
    }
    // Data children and the same schema's foreign prefixes are not foreign.
    BOOST_TEST(!decide(ex, {own_m, "config", "report-0000000000", "0aaa__lock__0000000001"}, own_m).foreign);
    BOOST_TEST(!decide(rd, {own_r, "config", "_c_x-__WRIT__0000000009"}, own_r).foreign);
}

BOOST_AUTO_TEST_CASE(an_own_name_without_a_sequence_is_never_found)
{
    check({"no sequence", ex, {"config"}, "config", false, false, "", false, 0, {}});
}

BOOST_AUTO_TEST_CASE(lease_holds_within_the_maximum)
{
    const names leases{"_c_a-lease-0000000001", "_c_b-lease-0000000002", "_c_c-lease-0000000003"};
    BOOST_TEST(*lease_holds(leases, "_c_b-lease-0000000002", 3));
    BOOST_TEST(*lease_holds(leases, "_c_c-lease-0000000003", 5));
    BOOST_TEST(!*lease_holds(leases, "_c_a-lease-0000000001", 2));  // too many leases: nobody holds yet
    BOOST_TEST(*lease_holds({"_c_a-lease-0000000001"}, "_c_a-lease-0000000001", 1));
    BOOST_TEST(!*lease_holds({"_c_a-lease-0000000001"}, "_c_a-lease-0000000001", 0));
    BOOST_TEST(!lease_holds(leases, "_c_d-lease-0000000004", 3).has_value());  // our node is gone
    BOOST_TEST(!lease_holds({}, "_c_d-lease-0000000004", 3).has_value());
}

BOOST_AUTO_TEST_CASE(a_lease_waiter_is_another_contender_for_the_internal_lock)
{
    const std::string ours = "_c_a-lock-0000000001", theirs = "_c_b-lock-0000000002";
    BOOST_TEST(!lease_waiter_present({}, ""));
    BOOST_TEST(!lease_waiter_present({ours}, ours));  // our own run
    BOOST_TEST(lease_waiter_present({ours, theirs}, ours));
    BOOST_TEST(lease_waiter_present({theirs}, ""));
    BOOST_TEST(lease_waiter_present({"_c_7f-lock-0000000009"}, ours));  // Curator's names too
    BOOST_TEST(!lease_waiter_present({"config"}, ""));                  // not a contender
}

BOOST_AUTO_TEST_CASE(a_semaphore_directory_refuses_other_schemas)
{
    BOOST_TEST(!foreign_to_semaphore({"locks", "leases"}));
    BOOST_TEST(!foreign_to_semaphore({"locks", "leases", "config", "report-0000000000"}));
    BOOST_TEST(!foreign_to_semaphore({}));
    BOOST_TEST((foreign_to_semaphore({"locks", "_c_a-lock-0000000001"}) == opt_schema(lock_schema::mutex)));
    BOOST_TEST((foreign_to_semaphore({"0aaa__lock__0000000001"}) == opt_schema(lock_schema::mutex)));
    BOOST_TEST((foreign_to_semaphore({"leases", "_c_a-__READ__0000000001"}) == opt_schema(lock_schema::read_write)));
    BOOST_TEST((foreign_to_semaphore({"_c_a-__WRIT__0000000001"}) == opt_schema(lock_schema::read_write)));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(queue_order_tests)

namespace {
std::string show(const std::vector<queued>& q)
{
    std::string s;
    for (const auto& e : q) s += (s.empty() ? "" : " ") + e.name.substr(e.name.size() - 2) + (e.holds ? "*" : "");
    return s;
}
}  // namespace

BOOST_AUTO_TEST_CASE(mutex_nodes_in_sequence_order_first_holds)
{
    BOOST_TEST(show(queue_order({"_c_b-lock-0000000012", "data", "_c_a-lock-0000000010", "x__lock__0000000011"})) ==
               "10* 11 12");
    BOOST_TEST(queue_order({"data", "locks"}).empty());
}

BOOST_AUTO_TEST_CASE(readers_ahead_of_the_first_writer_hold)
{
    BOOST_TEST(show(queue_order({"a__READ__0000000001", "b__READ__0000000002", "c__WRIT__0000000003",
                                 "d__READ__0000000004"})) == "01* 02* 03 04");
    BOOST_TEST(show(queue_order({"c__WRIT__0000000003", "d__READ__0000000004"})) == "03* 04");
}

BOOST_AUTO_TEST_CASE(order_survives_the_sequence_wrap)
{
    BOOST_TEST(show(queue_order({"a-lock--2147483647", "b-lock-2147483646"})) == "46* 47");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_schema
