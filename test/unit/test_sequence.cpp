// Ordering of contenders by sequence number: no server needed.
#include <zklock/detail/sequence.hpp>

#include <boost/test/unit_test.hpp>

namespace unit_sequence {  // a namespace of its own: the unit tests compile as one translation unit


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

// Ordering and holding: test_schema.cpp.

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_sequence
