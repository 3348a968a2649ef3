// /zookeeper/config texts in, the client addresses a session follows out: no server.
#include "session/core/ensemble_config.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

namespace unit_ensemble_config {  // a namespace of its own: the unit tests compile as one translation unit

using zklock::detail::client_addresses;

namespace {

struct row {
    const char* what;
    const char* config;
    std::vector<std::string> addresses;
};

const row rows[] = {
    {"three members with client addresses",
     "server.1=10.0.0.1:2888:3888:participant;10.0.0.1:2181\n"
     "server.2=10.0.0.2:2888:3888:participant;10.0.0.2:2181\n"
     "server.3=10.0.0.3:2888:3888:participant;10.0.0.3:2182\n"
     "version=100000000",
     {"10.0.0.1:2181", "10.0.0.2:2181", "10.0.0.3:2182"}},
    {"a wildcard or missing client address means the server's host",
     "server.1=zk-0.zk:2888:3888:participant;0.0.0.0:2181\nserver.2=zk-1.zk:2888:3888;2181\n",
     {"zk-0.zk:2181", "zk-1.zk:2181"}},
    {"observers are members a client may use", "server.4=10.0.0.4:2888:3888:observer;10.0.0.4:2181\n",
     {"10.0.0.4:2181"}},
    {"IPv6 in brackets, on either side",
     "server.1=[fd00::1]:2888:3888:participant;[fd00::1]:2181\nserver.2=[fd00::2]:2888:3888;[::]:2181\n",
     {"[fd00::1]:2181", "[fd00::2]:2181"}},
    {"a static configuration of before 3.5 has no client part: nothing to follow",
     "server.1=10.0.0.1:2888:3888\nserver.2=10.0.0.2:2888:3888\nversion=0\n", {}},
    {"lines that are not members, CRLF, and an address listed twice",
     "version=1\r\nserver.1=10.0.0.1:2888:3888;10.0.0.1:2181\r\nserver.9=10.0.0.1:2889:3889;10.0.0.1:2181\r\n",
     {"10.0.0.1:2181"}},
    {"a malformed client part is skipped",
     "server.1=10.0.0.1:2888:3888;10.0.0.1:port\nserver.2=10.0.0.2:2888:3888;\nserver.3=10.0.0.3:2888:3888;10.0.0.3:2181\n",
     {"10.0.0.3:2181"}},
    {"empty", "", {}},
};

}  // namespace

BOOST_AUTO_TEST_SUITE(ensemble_config)

BOOST_AUTO_TEST_CASE(members_client_addresses)
{
    for (const auto& r : rows)
        BOOST_TEST_CONTEXT(r.what)
        {
            const auto got = client_addresses(r.config);
            BOOST_TEST(got == r.addresses, boost::test_tools::per_element());
        }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_ensemble_config
