// The election's order and the leader observer, as tables: listings and answers in, actions out, no server.
#include "recipes/core/leader_observer.hpp"

#include <zklock/error.hpp>

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

namespace unit_leader_observer {  // a namespace of its own: the unit tests compile as one translation unit

using namespace zklock::detail;
using zklock::leader_info;
using step = leader_observer::step;

namespace {

using names = std::vector<std::string>;
const std::string dir = "/e";
const std::string a = "_c_aaaa-lock-0000000002", b = "_c_bbbb-lock-0000000001";
const error_code lost = zklock::zk_errc::connection_loss;
const error_code no_node = zklock::zk_errc::no_node;

struct order_row {
    const char* what;
    names children;
    names in_order;
    bool mixed;
};

const std::vector<order_row> order_rows{
    {"nobody", {}, {}, false},
    {"by sequence, not by name", {a, b}, {b, a}, false},
    {"data children are no candidates", {"config", a}, {a}, false},
    {"kazoo's Election", {"0f__lock__0000000007", "aa__lock__0000000003"}, {"aa__lock__0000000003", "0f__lock__0000000007"}, false},
    {"Curator's LeaderLatch", {"_c_x-latch-0000000004", "_c_y-latch-0000000001"}, {"_c_y-latch-0000000001", "_c_x-latch-0000000004"}, false},
    {"across the 32-bit wrap", {"_c_x-lock--2147483648", "_c_y-lock-2147483647"}, {"_c_y-lock-2147483647", "_c_x-lock--2147483648"}, false},
    {"a latch among selectors", {a, "_c_x-latch-0000000004"}, {}, true},
    {"a read/write lock's node", {a, "_c_x-__READ__0000000004"}, {}, true},
    {"a semaphore's directory", {"locks", "leases"}, {}, true},
    {"kazoo's node among selectors (kazoo ignores -lock-)", {a, "0f__lock__0000000007"}, {}, true},
    {"kazoo's read lock node", {"0f__lock__0000000007", "0f__rlock__0000000008"}, {}, true},
};

}  // namespace

BOOST_AUTO_TEST_SUITE(election_order_table)

BOOST_AUTO_TEST_CASE(rows)
{
    for (const auto& r : order_rows) {
        const auto got = election_order(r.children);
        BOOST_TEST(got.in_order == r.in_order, r.what);
        BOOST_TEST(got.mixed == r.mixed, r.what);
    }
}

BOOST_AUTO_TEST_CASE(proclaimed_values_belong_to_one_term)
{
    BOOST_TEST(proclaimed_by(encode_proclaimed(b, "v1"), b).value_or("<none>") == "v1");
    BOOST_TEST(proclaimed_by(encode_proclaimed(b, ""), b).value_or("<none>") == "");
    BOOST_TEST(proclaimed_by(encode_proclaimed(b, "two\nlines"), b).value_or("<none>") == "two\nlines");
    BOOST_TEST(!proclaimed_by(encode_proclaimed(a, "v1"), b), "another term's value");
    BOOST_TEST(!proclaimed_by("", b));
    BOOST_TEST(!proclaimed_by(b, b), "no newline: not a proclaimed value");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(observer)

namespace {
leader_info leader_b(std::optional<std::string> value = std::nullopt)
{
    return {"node-7", dir + "/" + b, {42, 0}, std::move(value)};
}

/// Runs a round that reads leader b (with `value` in the directory) from the start.
leader_observer::action read_b(leader_observer& m, std::string value_data = {})
{
    BOOST_TEST((m.start() == leader_observer::action{step::sync, dir}));
    BOOST_TEST((m.on_synced({}) == leader_observer::action{step::list, dir}));
    BOOST_TEST((m.on_listed({}, {a, b}) == leader_observer::action{step::read_leader, dir + "/" + b}));
    BOOST_TEST((m.on_leader_read({}, "node-7", 42) == leader_observer::action{step::read_value, dir}));
    return value_data.empty() ? m.on_value_read(no_node, "") : m.on_value_read({}, value_data);
}
}  // namespace

BOOST_AUTO_TEST_CASE(a_read_reports_the_first_candidate_and_its_value)
{
    leader_observer m(dir, std::nullopt);
    BOOST_TEST((read_b(m, encode_proclaimed(b, "hello")).what == step::report));
    BOOST_TEST((m.leader() == leader_b("hello")));
}

BOOST_AUTO_TEST_CASE(a_value_of_an_earlier_term_is_not_reported)
{
    leader_observer m(dir, std::nullopt);
    const std::string earlier = "_c_zzzz-lock-0000000000";  // a term before b's (b is 1)
    BOOST_TEST((read_b(m, encode_proclaimed(earlier, "old")).what == step::report));
    BOOST_TEST((m.leader() == leader_b()));
}

BOOST_AUTO_TEST_CASE(the_known_leader_is_watched_and_any_event_starts_a_round)
{
    leader_observer m(dir, leader_b());
    BOOST_TEST((read_b(m).what == step::await_watch));
    BOOST_TEST((m.on_watch_fired() == leader_observer::action{step::sync, dir}));
    // The leader's node went: the next candidate is news.
    BOOST_TEST((m.on_synced({}) == leader_observer::action{step::list, dir}));
    BOOST_TEST((m.on_listed({}, {a}) == leader_observer::action{step::read_leader, dir + "/" + a}));
    BOOST_TEST((m.on_leader_read({}, "node-8", 50) == leader_observer::action{step::read_value, dir}));
    BOOST_TEST((m.on_value_read(no_node, "").what == step::report));
    BOOST_TEST((m.leader() == leader_info{"node-8", dir + "/" + a, {50, 0}, std::nullopt}));
}

BOOST_AUTO_TEST_CASE(a_new_value_of_the_same_term_is_news)
{
    leader_observer m(dir, leader_b("v1"));
    BOOST_TEST((read_b(m, encode_proclaimed(b, "v1")).what == step::await_watch));
    BOOST_TEST((read_b(m, encode_proclaimed(b, "v2")).what == step::report));
    BOOST_TEST((m.leader() == leader_b("v2")));
}

// Issue 48.8: a new term that proclaims between the observer's two reads (the leader's node, then the
// directory's value) made it report the old leader with no value, a state that never existed. A value
// of a later term than the leader read means the round is stale: it starts again.
BOOST_AUTO_TEST_CASE(a_later_terms_value_read_after_the_leader_starts_the_round_again)
{
    leader_observer m(dir, leader_b("v1"));
    BOOST_TEST((read_b(m, encode_proclaimed(a, "v9")) == leader_observer::action{step::sync, dir}));
    // The new round reads the new term.
    BOOST_TEST((m.on_synced({}) == leader_observer::action{step::list, dir}));
    BOOST_TEST((m.on_listed({}, {a}) == leader_observer::action{step::read_leader, dir + "/" + a}));
    BOOST_TEST((m.on_leader_read({}, "node-8", 50) == leader_observer::action{step::read_value, dir}));
    BOOST_TEST((m.on_value_read({}, encode_proclaimed(a, "v9")).what == step::report));
    BOOST_TEST((m.leader() == leader_info{"node-8", dir + "/" + a, {50, 0}, std::string("v9")}));
}

// Issue 48.8: a revocation request written on the leader's node (Curator's Revoker, zklock revoke) read as
// a leader change with an empty id. The node is the same term: its id is the one known.
BOOST_AUTO_TEST_CASE(a_revocation_request_on_the_leaders_node_is_no_leader_change)
{
    leader_observer m(dir, leader_b("v1"));
    BOOST_TEST((m.start() == leader_observer::action{step::sync, dir}));
    BOOST_TEST((m.on_synced({}) == leader_observer::action{step::list, dir}));
    BOOST_TEST((m.on_listed({}, {a, b}) == leader_observer::action{step::read_leader, dir + "/" + b}));
    BOOST_TEST((m.on_leader_read({}, "__REVOKE__", 42) == leader_observer::action{step::read_value, dir}));
    BOOST_TEST((m.on_value_read({}, encode_proclaimed(b, "v1")).what == step::await_watch));
    BOOST_TEST((m.leader() == leader_b("v1")));
}

BOOST_AUTO_TEST_CASE(a_leader_gone_since_the_listing_is_listed_again)
{
    leader_observer m(dir, leader_b());
    m.start();
    m.on_synced({});
    m.on_listed({}, {b});
    BOOST_TEST((m.on_leader_read(no_node, "", 0) == leader_observer::action{step::list, dir}));
    BOOST_TEST((m.on_listed({}, {}).what == step::report), "nobody leads now: news");
    BOOST_TEST(!m.leader());
}

BOOST_AUTO_TEST_CASE(nobody_leading_as_known_watches_the_listing_once)
{
    leader_observer m(dir, leader_info{});
    m.start();
    m.on_synced({});
    BOOST_TEST((m.on_listed({}, {"config"}) == leader_observer::action{step::list_watched, dir}));
    BOOST_TEST((m.on_listed({}, {"config"}).what == step::await_watch));
    BOOST_TEST((m.on_watch_fired().what == step::sync));
    m.on_synced({});
    BOOST_TEST((m.on_listed({}, {b}).what == step::read_leader));
    m.on_leader_read({}, "node-7", 42);
    BOOST_TEST((m.on_value_read(no_node, "").what == step::report));
    BOOST_TEST((m.leader() == leader_b()));
}

BOOST_AUTO_TEST_CASE(a_candidate_between_the_two_listings_is_read)
{
    leader_observer m(dir, leader_info{});
    m.start();
    m.on_synced({});
    BOOST_TEST((m.on_listed({}, {}).what == step::list_watched));
    BOOST_TEST((m.on_listed({}, {b}) == leader_observer::action{step::read_leader, dir + "/" + b}));
}

BOOST_AUTO_TEST_CASE(no_directory_watches_for_its_creation)
{
    leader_observer m(dir, leader_info{});
    m.start();
    BOOST_TEST((m.on_synced(no_node).what == step::list), "a sync of a missing path is no failure");
    BOOST_TEST((m.on_listed(no_node, {}) == leader_observer::action{step::watch_creation, dir}));
    BOOST_TEST((m.on_checked({}, false).what == step::await_watch));
    BOOST_TEST((m.on_watch_fired().what == step::sync));
    m.on_synced({});
    BOOST_TEST((m.on_listed(no_node, {}).what == step::watch_creation));
    BOOST_TEST((m.on_checked({}, true).what == step::sync), "made since the listing: another round");
}

BOOST_AUTO_TEST_CASE(no_directory_is_news_to_a_caller_who_knew_a_leader)
{
    leader_observer m(dir, leader_b());
    m.start();
    m.on_synced({});
    BOOST_TEST((m.on_listed(no_node, {}).what == step::report));
    BOOST_TEST(!m.leader());
}

BOOST_AUTO_TEST_CASE(a_lost_connection_starts_the_round_again_once_connected)
{
    for (int at = 0; at < 4; ++at) {
        leader_observer m(dir, std::nullopt);
        m.start();
        leader_observer::action got{step::sync};
        if (at == 0) got = m.on_synced(lost);
        else {
            m.on_synced({});
            if (at == 1) got = m.on_listed(lost, {});
            else {
                m.on_listed({}, {b});
                if (at == 2) got = m.on_leader_read(lost, "", 0);
                else {
                    m.on_leader_read({}, "node-7", 42);
                    got = m.on_value_read(lost, "");
                }
            }
        }
        BOOST_TEST((got.what == step::await_connected), "at step " << at);
        BOOST_TEST((read_b(m).what == step::report), "at step " << at);
        BOOST_TEST((m.leader() == leader_b()), "at step " << at << ": nothing of the failed round is kept");
    }
}

BOOST_AUTO_TEST_CASE(a_final_error_fails)
{
    leader_observer m(dir, std::nullopt);
    m.start();
    m.on_synced({});
    BOOST_TEST((m.on_listed(zklock::error::session_expired, {}).what == step::fail));
    BOOST_TEST((m.error() == zklock::error::session_expired));
}

BOOST_AUTO_TEST_CASE(a_mixed_directory_is_refused)
{
    leader_observer m(dir, std::nullopt);
    m.start();
    m.on_synced({});
    BOOST_TEST((m.on_listed({}, {a, "_c_x-latch-0000000004"}).what == step::fail));
    BOOST_TEST((m.error() == zklock::error::schema_mismatch));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_leader_observer
