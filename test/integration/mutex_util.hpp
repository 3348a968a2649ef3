// What the mutex's integration tests share (test_mutex.cpp, test_mutex_waiting.cpp): a number of sessions
// on the shared server.
#pragma once

#include "test_util.hpp"

#include <cstddef>
#include <memory>
#include <vector>

namespace mutex_test {

namespace asio = boost::asio;
using test::config_for;
using test::shared_server;
using test::use_awaitable;
using zklock::session;

using test::sessions;  // (kept here so that the mutex tests name it as before)

}  // namespace mutex_test
