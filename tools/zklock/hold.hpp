// Without COMMAND (zklock [OPTIONS] PATH): hold the lock until stdin ends, a signal comes, or it is lost.
#pragma once

#include "options.hpp"

#include <zklock/guard.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/system/error_code.hpp>

namespace zklock_cli {

struct hold_result {
    int status = 0;                  // zklock's exit code, unless the lock was lost
    boost::system::error_code lost;  // why the lock was lost while held, if it was
};

// Prints g's fencing token and a newline on stdout, then holds until the first of: the end of stdin, one of
// `interrupts` (SIGINT, SIGTERM, SIGHUP), the loss of the lock, a revocation under --on-revoke release (exit
// 70). Says why on stderr if lost or revoked. The caller
// releases the lock afterwards.
boost::asio::awaitable<hold_result> hold(const options& o, zklock::guard& g, boost::asio::signal_set& interrupts);

}  // namespace zklock_cli
