// What the session's tests share (test_session.cpp, test_session_completions.cpp): a checked connect, and
// a node with its missing parents.
#pragma once

#include "test_util.hpp"

namespace test {

inline asio::awaitable<void> connect(zklock::session& s)
{
    auto [ec] = co_await s.async_connect(tuple_awaitable);
    BOOST_REQUIRE_MESSAGE(!ec, "connect: " << ec.message());
}

inline asio::awaitable<void> make_parent(zklock::session& s, const std::string& path)
{
    auto [ec, p, st] = co_await s.async_create(path, "", zklock::create_mode::persistent, tuple_awaitable);
    if (ec == zklock::zk_errc::no_node) {
        co_await make_parent(s, path.substr(0, path.rfind('/')));
        std::tie(ec, p, st) = co_await s.async_create(path, "", zklock::create_mode::persistent, tuple_awaitable);
    }
    BOOST_REQUIRE(!ec || ec == zklock::zk_errc::node_exists);
}

}  // namespace test
