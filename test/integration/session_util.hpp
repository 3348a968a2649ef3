// What the session's tests share (test_session.cpp, test_session_completions.cpp): a checked connect, and
// a node with its missing parents. (Compiled once, in session_util.cpp.)
#pragma once

#include "test_util.hpp"

namespace test {

/// Connects `s`; an error fails the test.
asio::awaitable<void> connect(zklock::session& s);

/// Creates the persistent node `path` and its missing parents (an existing node is fine).
asio::awaitable<void> make_parent(zklock::session& s, const std::string& path);

}  // namespace test
