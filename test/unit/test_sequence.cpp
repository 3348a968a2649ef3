// Ordering of contenders by sequence number: no server needed.
#include <zklock/detail/sequence.hpp>

#include <boost/test/unit_test.hpp>

#include <regex>
#include <set>

using zklock::detail::locate;
using zklock::detail::parse_sequence;

BOOST_AUTO_TEST_SUITE(sequence)

BOOST_AUTO_TEST_CASE(parses_every_client_naming)
{
    BOOST_TEST(*parse_sequence("_c_8088ec7b-e828-4085-84cf-3a83703ae629-lock-0000000042") == 42);  // Curator, zklock
    BOOST_TEST(*parse_sequence("5c1bdcb0d0e946a4bb0e8d31ad4b2f1a__lock__0000000007") == 7);        // kazoo
    BOOST_TEST(*parse_sequence("5c1bdcb0d0e946a4bb0e8d31ad4b2f1a__rlock__0000000008") == 8);       // kazoo read lock
    BOOST_TEST(*parse_sequence("x-72057594037927936-0000000003") == 3);                            // ZooKeeper's recipe
    BOOST_TEST(*parse_sequence("_c_x-lock-2147483647") == 2147483647);
    BOOST_TEST(*parse_sequence("_c_x-lock--2147483648") == INT32_MIN);  // "%010d" of INT32_MIN has 11 characters
    BOOST_TEST(*parse_sequence("_c_x-lock--000000005") == -5);
    BOOST_TEST(*parse_sequence("0000000000") == 0);
}

BOOST_AUTO_TEST_CASE(ignores_children_that_are_not_contenders)
{
    BOOST_TEST(!parse_sequence("leases"));
    BOOST_TEST(!parse_sequence("config"));
    BOOST_TEST(!parse_sequence("lock-12345"));
    BOOST_TEST(!parse_sequence("_c_x-lock-2147483648"));  // out of range without the minus sign
    BOOST_TEST(!parse_sequence("_c_x-lock-00000a0001"));
}

BOOST_AUTO_TEST_CASE(lowest_holds_and_each_watches_the_one_just_ahead)
{
    std::vector<std::string> kids{"_c_a-lock-0000000003", "_c_b-lock-0000000001", "_c_c-lock-0000000002", "config"};
    auto head = locate(kids, "_c_b-lock-0000000001");
    BOOST_TEST(head.found);
    BOOST_TEST(head.ahead == 0u);

    auto third = locate(kids, "_c_a-lock-0000000003");
    BOOST_TEST(third.ahead == 2u);
    BOOST_TEST(third.predecessor == "_c_c-lock-0000000002");
    BOOST_TEST(!third.predecessor_is_head);

    auto second = locate(kids, "_c_c-lock-0000000002");
    BOOST_TEST(second.predecessor == "_c_b-lock-0000000001");
    BOOST_TEST(second.predecessor_is_head);
}

BOOST_AUTO_TEST_CASE(orders_by_number_not_by_name_across_foreign_prefixes)
{
    // A string sort would put kazoo's "0a..." before Curator's "_c_" whatever their numbers.
    std::vector<std::string> kids{"_c_zz-lock-0000000010", "0aaa__lock__0000000011", "x-99-0000000009"};
    auto kazoo = locate(kids, "0aaa__lock__0000000011");
    BOOST_TEST(kazoo.ahead == 2u);
    BOOST_TEST(kazoo.predecessor == "_c_zz-lock-0000000010");
    BOOST_TEST(locate(kids, "x-99-0000000009").ahead == 0u);
}

BOOST_AUTO_TEST_CASE(orders_correctly_across_the_signed_32_bit_wrap)
{
    // After 2147483647 the parent's counter wraps to -2147483648: those nodes were created later.
    std::vector<std::string> kids{"_c_a-lock-2147483646", "_c_b-lock-2147483647", "_c_c-lock--2147483648",
                                  "_c_d-lock--2147483647"};
    BOOST_TEST(locate(kids, "_c_a-lock-2147483646").ahead == 0u);
    auto c = locate(kids, "_c_c-lock--2147483648");
    BOOST_TEST(c.ahead == 2u);
    BOOST_TEST(c.predecessor == "_c_b-lock-2147483647");
    auto d = locate(kids, "_c_d-lock--2147483647");
    BOOST_TEST(d.ahead == 3u);
    BOOST_TEST(d.predecessor == "_c_c-lock--2147483648");
}

BOOST_AUTO_TEST_CASE(reports_a_missing_own_node)
{
    BOOST_TEST(!locate({"_c_a-lock-0000000001"}, "_c_b-lock-0000000002").found);
    BOOST_TEST(!locate({"_c_a-lock-0000000001"}, "not-a-lock").found);
}

BOOST_AUTO_TEST_CASE(several_holders_watch_the_one_max_holders_ahead)
{
    std::vector<std::string> kids{"n-0000000001", "n-0000000002", "n-0000000003", "n-0000000004"};
    BOOST_TEST(locate(kids, "n-0000000003", 3).ahead == 2u);  // a holder among three
    auto fourth = locate(kids, "n-0000000004", 3);
    BOOST_TEST(fourth.ahead == 3u);
    BOOST_TEST(fourth.predecessor == "n-0000000001");
}

BOOST_AUTO_TEST_CASE(uuids_are_curator_shaped_and_distinct)
{
    std::regex shape("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
    std::set<std::string> seen;
    for (int i = 0; i < 1000; ++i) {
        auto u = zklock::detail::make_uuid();
        BOOST_TEST(std::regex_match(u, shape), u);
        seen.insert(u);
    }
    BOOST_TEST(seen.size() == 1000u);
}

BOOST_AUTO_TEST_SUITE_END()
