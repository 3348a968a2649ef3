#include "revocation.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace zklock_cli {

namespace asio = boost::asio;

asio::awaitable<void> revocation(zklock::guard& g, bool wanted)
{
    if (wanted) {
        auto [ec] = co_await g.async_wait_revoked(asio::as_tuple(asio::use_awaitable));
        if (!ec) co_return;
    }
    asio::steady_timer never(co_await asio::this_coro::executor, asio::steady_timer::time_point::max());
    co_await never.async_wait(asio::as_tuple(asio::use_awaitable));
}

}  // namespace zklock_cli
