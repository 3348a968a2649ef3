#define BOOST_TEST_MODULE zklock unit tests
#include <boost/test/unit_test.hpp>
