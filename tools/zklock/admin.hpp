// The operators' actions on someone else's lock: zklock ls, revoke and break PATH.
#pragma once

#include "options.hpp"

#include <zklock/session.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <string>

namespace zklock_cli {

// Runs o.what on o.path over the connected session `s`: zklock's exit code.
boost::asio::awaitable<int> admin(const options& o, zklock::session& s);

// Words for a loss reason in zklock's messages ("lease expired after 30 s" for a lease that ran out).
std::string loss_words(boost::system::error_code why, const options& o);

}  // namespace zklock_cli
