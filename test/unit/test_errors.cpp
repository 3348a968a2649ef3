// Error categories, path validation, fencing token order: no server needed.
#include <zklock/error.hpp>
#include <zklock/fencing_token.hpp>
#include <zklock/lock_event.hpp>
#include <zklock/watch_event.hpp>
#include <zklock/session_state.hpp>

#include "session/session_impl.hpp"

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace unit_errors {  // a namespace of its own: the unit tests compile as one translation unit

BOOST_AUTO_TEST_SUITE(errors)

BOOST_AUTO_TEST_CASE(zklock_errors_have_their_own_category_and_say_what_to_do)
{
    boost::system::error_code ec = zklock::error::timeout;
    BOOST_TEST(std::string(ec.category().name()) == "zklock");
    BOOST_TEST(ec.message() == "the lock was not obtained within the timeout");
    BOOST_TEST(boost::system::error_code(zklock::error::connect_timeout).message().find("check the host list") !=
               std::string::npos);
    BOOST_TEST(boost::system::error_code(zklock::error::session_expired).message().find("open a new session") !=
               std::string::npos);
    BOOST_TEST(ec != boost::asio::error::operation_aborted);  // a timeout is not a cancellation
}

// A semaphore's "lease" became a "permit" (zklock keeps "lease" for a hold-time limit): code written with the
// old name still compiles, with a deprecation warning, and means the same error.
BOOST_AUTO_TEST_CASE(the_old_name_of_invalid_permit_count_still_means_it)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    const boost::system::error_code old_name = zklock::error::invalid_lease_count;
#pragma GCC diagnostic pop
    BOOST_TEST((old_name == zklock::error::invalid_permit_count));
    BOOST_TEST(old_name.message().find("at least one permit") != std::string::npos, old_name.message());
    BOOST_TEST(zklock::error_name(old_name) == "invalid_permit_count");
}

BOOST_AUTO_TEST_CASE(zookeeper_codes_are_named_and_explained)
{
    boost::system::error_code ec = zklock::zk_errc::no_auth;
    BOOST_TEST(std::string(ec.category().name()) == "zklock.zookeeper");
    BOOST_TEST(ec.value() == -102);
    BOOST_TEST(ec.message().find("ACL") != std::string::npos);
    BOOST_TEST(zklock::is_retryable(zklock::zk_errc::connection_loss));
    BOOST_TEST(zklock::is_retryable(zklock::zk_errc::operation_timeout));
    BOOST_TEST(zklock::is_retryable(zklock::zk_errc::throttled_op));  // not applied: the follower's throttle
    BOOST_TEST(boost::system::error_code(zklock::zk_errc::throttled_op).message().find("retry") != std::string::npos);
    BOOST_TEST(!zklock::is_retryable(zklock::error::session_expired));
    BOOST_TEST(!zklock::is_retryable(zklock::zk_errc::no_node));
}

// Every code zklock can hand out has a message of its own, which a person can act on, and a stable name for
// metrics: none falls back to the number ("ZooKeeper error -9"), and no two share a name or a message.
BOOST_AUTO_TEST_CASE(every_code_has_a_message_and_a_name_of_its_own)
{
    std::vector<boost::system::error_code> codes;
    for (int e = static_cast<int>(zklock::error::timeout); e <= static_cast<int>(zklock::error::draining); ++e)
        codes.push_back(static_cast<zklock::error>(e));
    for (auto e : {zklock::zk_errc::runtime_inconsistency, zklock::zk_errc::connection_loss,
                   zklock::zk_errc::marshalling_error, zklock::zk_errc::operation_timeout,
                   zklock::zk_errc::bad_arguments, zklock::zk_errc::invalid_state, zklock::zk_errc::no_node,
                   zklock::zk_errc::no_auth, zklock::zk_errc::bad_version,
                   zklock::zk_errc::no_children_for_ephemerals, zklock::zk_errc::node_exists,
                   zklock::zk_errc::not_empty, zklock::zk_errc::session_expired, zklock::zk_errc::invalid_acl,
                   zklock::zk_errc::auth_failed, zklock::zk_errc::closing, zklock::zk_errc::session_moved,
                   zklock::zk_errc::not_read_only, zklock::zk_errc::no_watcher, zklock::zk_errc::throttled_op})
        codes.push_back(e);
    std::set<std::string> names, messages;
    for (const auto& ec : codes) {
        BOOST_TEST_CONTEXT(ec.category().name() << " " << ec.value())
        {
            const auto message = ec.message();
            const auto name = zklock::error_name(ec);
            BOOST_TEST(message.find(std::to_string(ec.value())) == std::string::npos, message);  // not the fallback
            BOOST_TEST(name.find(std::to_string(std::abs(ec.value()))) == std::string::npos, name);
            BOOST_TEST(names.insert(std::string(ec.category().name()) + ":" + name).second, name);
            BOOST_TEST(messages.insert(message).second, message);
        }
    }
    // Unknown values still say what they are, so that a newer server's code is not silently blank.
    BOOST_TEST(boost::system::error_code(-999, zklock::zookeeper_category()).message().find("-999") != std::string::npos);
    BOOST_TEST(zklock::error_name(boost::system::error_code(-999, zklock::zookeeper_category())) == "zookeeper_999");
    BOOST_TEST(boost::system::error_code(999, zklock::zklock_category()).message() == "zklock error 999");
    BOOST_TEST(zklock::error_name(boost::asio::error::operation_aborted) == "operation_aborted");
    BOOST_TEST(zklock::error_name(boost::system::error_code(5, boost::system::generic_category())) == "generic_5");
    BOOST_TEST(zklock::error_name({}) == "ok");
}

BOOST_AUTO_TEST_CASE(paths_are_checked_as_the_server_would)
{
    using zklock::detail::valid_path;
    BOOST_TEST(valid_path("/"));
    BOOST_TEST(valid_path("/locks/orders/42"));
    BOOST_TEST(!valid_path(""));
    BOOST_TEST(!valid_path("locks"));
    BOOST_TEST(!valid_path("/locks/"));
    BOOST_TEST(!valid_path("/locks//a"));
    BOOST_TEST(!valid_path("/locks/./a"));
    BOOST_TEST(!valid_path("/locks/../a"));
    BOOST_TEST(!valid_path(std::string_view("/a\0b", 4)));
    BOOST_TEST(valid_path("/locks/n-", true));
    BOOST_TEST(valid_path("/locks/", true));  // sequential: the server appends the number
}

BOOST_AUTO_TEST_CASE(fencing_tokens_order_by_zxid_then_local_count)
{
    zklock::fencing_token a{100, 0}, b{100, 3}, c{101, 0};
    BOOST_TEST((a < b));
    BOOST_TEST((b < c));
    BOOST_TEST(c.to_string() == "101.0");
}

BOOST_AUTO_TEST_CASE(session_states_have_names_and_finality)
{
    BOOST_TEST(zklock::to_string(zklock::session_state::expired) == "expired");
    BOOST_TEST(zklock::is_final(zklock::session_state::expired));
    BOOST_TEST(zklock::is_final(zklock::session_state::closed));
    BOOST_TEST(!zklock::is_final(zklock::session_state::connecting));
}

// What a log line or a test's message prints for the small value types: each value's own word, the same
// through to_string and operator<<, and "unknown" for a value outside the enumeration (never an empty field).
BOOST_AUTO_TEST_CASE(value_types_print_as_their_names)
{
    auto printed = [](const auto& v) {
        std::ostringstream o;
        o << v;
        return o.str();
    };
    using zklock::lock_event_type;
    using zklock::session_state;
    using zklock::watch_event_type;
    auto says = [&](const auto& words) {
        for (const auto& [v, word] : words) {
            BOOST_TEST(zklock::to_string(v) == word);
            BOOST_TEST(printed(v) == word);
        }
    };
    says(std::vector<std::pair<session_state, std::string>>{
        {session_state::idle, "idle"},           {session_state::connecting, "connecting"},
        {session_state::connected, "connected"}, {session_state::expired, "expired"},
        {session_state::auth_failed, "auth_failed"}, {session_state::closed, "closed"}});
    says(std::vector<std::pair<watch_event_type, std::string>>{{watch_event_type::created, "created"},
                                                                {watch_event_type::deleted, "deleted"},
                                                                {watch_event_type::data_changed, "data_changed"},
                                                                {watch_event_type::children_changed, "children_changed"}});
    says(std::vector<std::pair<lock_event_type, std::string>>{{lock_event_type::granted, "granted"},
                                                               {lock_event_type::released, "released"},
                                                               {lock_event_type::lost, "lost"},
                                                               {lock_event_type::lease_expired, "lease_expired"},
                                                               {lock_event_type::state_changed, "state_changed"}});
    BOOST_TEST(zklock::to_string(static_cast<session_state>(99)) == "unknown");
    BOOST_TEST(zklock::to_string(static_cast<watch_event_type>(99)) == "unknown");
    BOOST_TEST(zklock::to_string(static_cast<lock_event_type>(99)) == "unknown");
    const zklock::fencing_token t{4294967296, 7};
    BOOST_TEST(zklock::to_string(t) == "4294967296.7");
    BOOST_TEST(printed(t) == "4294967296.7");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_errors
