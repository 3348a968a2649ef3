// The protected names' uuids (recipes/uuid.cpp): Curator's shape, and fresh each time.
#include "recipes/uuid.hpp"

#include <boost/test/unit_test.hpp>

#include <regex>
#include <set>

BOOST_AUTO_TEST_SUITE(uuids)

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
