#define BOOST_TEST_MODULE zklock simulation
#include <boost/test/unit_test.hpp>
