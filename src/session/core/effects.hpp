// What is known of an operation's effect on the server when it ends early: by a cancellation signal, or
// because its answer was lost. The rules every async verb follows; pure (no Asio), table-tested in
// test/unit/test_effects.cpp.
#pragma once

#include <zklock/error.hpp>

namespace zklock::detail {

/// What an operation does that abandoning it could not take back.
enum class op_nature {
    undoable,  ///< a wait, a read, an acquire before its grant: abandoning it leaves nothing behind
    write,     ///< a request that changes the server once it has left
    open,      ///< a connect: abandoning it closes the session for good
};

enum class cancel_outcome {
    ignore,  ///< the operation goes on and completes with its real result
    abort,   ///< it completes now with operation_aborted
};

/// The bits of Asio's cancellation_type (terminal = 1, partial = 2, total = 4), so that this stays Asio-free.
enum cancel_bits : unsigned { cancel_terminal = 1, cancel_partial = 2, cancel_total = 4 };

/**
 * What a cancellation of the types `type` (a bitmask, as Asio emits it) does to an operation of `nature`
 * whose request has (`sent`) or has not yet left. Asio's meanings: terminal and partial allow side
 * effects, total allows none. So (as Boost.Redis's exec_fsm does) a write honours total only before its
 * request has left, and terminal or partial always, telling the caller that the write may still land. A
 * connect honours terminal only: abandoning it closes the session, which partial and total do not allow.
 */
constexpr cancel_outcome on_cancellation(unsigned type, op_nature nature, bool sent) noexcept
{
    const bool terminal = (type & cancel_terminal) != 0;
    const bool partial = (type & cancel_partial) != 0;
    const bool total = (type & cancel_total) != 0;
    switch (nature) {
    case op_nature::undoable: return terminal || partial || total ? cancel_outcome::abort : cancel_outcome::ignore;
    case op_nature::write:
        if (!sent) return terminal || partial || total ? cancel_outcome::abort : cancel_outcome::ignore;
        return terminal || partial ? cancel_outcome::abort : cancel_outcome::ignore;
    case op_nature::open: return terminal ? cancel_outcome::abort : cancel_outcome::ignore;
    }
    return cancel_outcome::ignore;
}

/**
 * True when a write whose request had left failed with `ec` without the server's verdict: the connection
 * was lost or timed out (or the C client dropped it over an answer out of order), or the session ended,
 * before the answer came. The server may or may not have applied it: error::outcome_unknown.
 */
inline bool answer_lost(const boost::system::error_code& ec) noexcept
{
    return is_retryable(ec) || ec == zklock::error::session_expired || ec == zklock::error::session_closed ||
           ec == zklock::error::auth_failed;
}

}  // namespace zklock::detail
