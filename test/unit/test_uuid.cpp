// The protected names' uuids (recipes/uuid.cpp): Curator's shape, and fresh each time.
#include "recipes/uuid.hpp"

#include <boost/test/unit_test.hpp>

#include <regex>
#include <set>

namespace unit_uuid {  // a namespace of its own: the unit tests compile as one translation unit

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

// Curator's protected prefix, and kazoo Lock's: 32 hex digits right before the marker, as kazoo's
// uuid4().hex + "__lock__" (kazoo's Election counts only names with its marker).
BOOST_AUTO_TEST_CASE(protected_prefixes_of_curator_and_kazoo)
{
    using zklock::detail::protected_prefix;
    const auto curator = protected_prefix("latch-", false);
    BOOST_TEST(std::regex_match(curator, std::regex("_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-latch-")),
               curator);
    const auto kazoo = protected_prefix("__lock__", true);
    BOOST_TEST(std::regex_match(kazoo, std::regex("[0-9a-f]{32}__lock__")), kazoo);
    BOOST_TEST(protected_prefix("__lock__", true) != kazoo);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_uuid
