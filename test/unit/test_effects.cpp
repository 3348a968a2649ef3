// The cancellation rule and the lost-answer rule (session/core/effects.hpp), as tables.
#include "session/core/effects.hpp"

#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <vector>

namespace unit_effects {  // a namespace of its own: the unit tests compile as one translation unit

using namespace zklock::detail;
namespace asio = boost::asio;

BOOST_AUTO_TEST_SUITE(effects)

BOOST_AUTO_TEST_CASE(the_bits_are_asios)
{
    BOOST_TEST(static_cast<unsigned>(asio::cancellation_type::terminal) == unsigned{cancel_terminal});
    BOOST_TEST(static_cast<unsigned>(asio::cancellation_type::partial) == unsigned{cancel_partial});
    BOOST_TEST(static_cast<unsigned>(asio::cancellation_type::total) == unsigned{cancel_total});
}

BOOST_AUTO_TEST_CASE(each_nature_honours_the_types_its_stage_allows)
{
    constexpr auto abort = cancel_outcome::abort, ignore = cancel_outcome::ignore;
    const auto all = static_cast<unsigned>(asio::cancellation_type::all);  // what `||` emits
    struct row {
        unsigned type;
        op_nature nature;
        bool sent;
        cancel_outcome expected;
    };
    const std::vector<row> rows{
        // A wait, a read, an acquire before its grant: any type, at any stage.
        {cancel_terminal, op_nature::undoable, true, abort},
        {cancel_partial, op_nature::undoable, true, abort},
        {cancel_total, op_nature::undoable, true, abort},
        {cancel_total, op_nature::undoable, false, abort},
        {all, op_nature::undoable, true, abort},
        {0, op_nature::undoable, true, ignore},
        // A write before its request left: any type (nothing will be sent).
        {cancel_terminal, op_nature::write, false, abort},
        {cancel_partial, op_nature::write, false, abort},
        {cancel_total, op_nature::write, false, abort},
        // After: terminal and partial (it may still land), never total alone.
        {cancel_terminal, op_nature::write, true, abort},
        {cancel_partial, op_nature::write, true, abort},
        {cancel_total, op_nature::write, true, ignore},
        {cancel_total | cancel_partial, op_nature::write, true, abort},
        {all, op_nature::write, true, abort},
        {0, op_nature::write, false, ignore},
        // A connect: terminal only (the session is closed).
        {cancel_terminal, op_nature::open, true, abort},
        {cancel_partial, op_nature::open, true, ignore},
        {cancel_total, op_nature::open, true, ignore},
        {cancel_partial | cancel_total, op_nature::open, false, ignore},
        {all, op_nature::open, true, abort},
    };
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& r = rows[i];
        BOOST_TEST((on_cancellation(r.type, r.nature, r.sent) == r.expected), "row " << i);
    }
}

BOOST_AUTO_TEST_CASE(a_lost_answer_is_one_without_the_servers_verdict)
{
    using zklock::error;
    using zklock::zk_errc;
    struct row {
        boost::system::error_code ec;
        bool lost;
    };
    const std::vector<row> rows{
        {zk_errc::connection_loss, true},
        {zk_errc::operation_timeout, true},
        {zk_errc::runtime_inconsistency, true},  // the client dropped the connection over it
        {error::session_expired, true},          // ended while the request was out
        {error::session_closed, true},
        {error::auth_failed, true},
        // The server's verdicts: nothing was applied.
        {zk_errc::bad_version, false},
        {zk_errc::no_node, false},
        {zk_errc::node_exists, false},
        {zk_errc::no_auth, false},
        {error::lock_node_deleted, false},
        {asio::error::operation_aborted, false},  // a cancellation: its own documented meaning
        {{}, false},
    };
    for (std::size_t i = 0; i < rows.size(); ++i)
        BOOST_TEST(answer_lost(rows[i].ec) == rows[i].lost, "row " << i << ": " << rows[i].ec.message());
}

BOOST_AUTO_TEST_CASE(outcome_unknown_says_what_to_do)
{
    const boost::system::error_code ec = zklock::error::outcome_unknown;
    BOOST_TEST(ec.message().find("may or may not have been applied") != std::string::npos);
    BOOST_TEST(ec.message().find("read the data back") != std::string::npos);
    BOOST_TEST(!zklock::is_retryable(ec));  // a blind retry could apply it twice
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_effects
