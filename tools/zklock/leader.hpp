// zklock leader [--watch] PATH: who leads an election, once or at every change.
#pragma once

#include "options.hpp"

#include <zklock/session.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/signal_set.hpp>

namespace zklock_cli {

// Prints the leader of o.path over the connected session `s` ("ID TOKEN"), or with o.watch a line at
// every change until one of `interrupts` arrives: zklock's exit code.
boost::asio::awaitable<int> print_leader(const options& o, zklock::session& s, boost::asio::signal_set& interrupts);

}  // namespace zklock_cli
