// The session tests' shared helpers (session_util.hpp), compiled once.
#include "session_util.hpp"

namespace test {

asio::awaitable<void> connect(zklock::session& s)
{
    auto [ec] = co_await s.async_connect(tuple_awaitable);
    BOOST_REQUIRE_MESSAGE(!ec, "connect: " << ec.message());
}

asio::awaitable<void> make_parent(zklock::session& s, const std::string& path)
{
    auto [ec, p, st] = co_await s.async_create(path, "", zklock::create_mode::persistent, tuple_awaitable);
    if (ec == zklock::zk_errc::no_node) {
        co_await make_parent(s, path.substr(0, path.rfind('/')));
        std::tie(ec, p, st) = co_await s.async_create(path, "", zklock::create_mode::persistent, tuple_awaitable);
    }
    BOOST_REQUIRE(!ec || ec == zklock::zk_errc::node_exists);
}

}  // namespace test
