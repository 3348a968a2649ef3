// The lock's life: connect, acquire, run COMMAND while holding it (or, without COMMAND, hold it until stdin
// ends), release.
#pragma once

#include "options.hpp"

#include <boost/asio/awaitable.hpp>

namespace zklock_cli {

// Returns zklock's exit code. Runs on one io_context, whose session it pumps the whole time (heartbeats
// go on while COMMAND runs).
boost::asio::awaitable<int> run(const options& o);

// Set when zklock gave up waiting for the session's close: main() then exits without joining the thread
// that still waits for the server (up to 4.5 s for a silent one).
extern bool close_unconfirmed;

// Set when SIGINT, SIGTERM or SIGHUP reached zklock (and was acted on, or forwarded to COMMAND): an
// `elect --again` supervisor stops then.
extern bool interrupted;

}  // namespace zklock_cli
