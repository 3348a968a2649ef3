// The tools tests' helpers that use Asio (process_util.hpp), compiled once.
#include "process_util.hpp"

namespace tools_test {

std::uint16_t free_port()
{
    asio::io_context ioc;
    asio::ip::tcp::acceptor a(ioc, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    return a.local_endpoint().port();
}

bool listening(std::uint16_t port)
{
    asio::io_context ioc;
    asio::ip::tcp::socket s(ioc);
    error_code ec;
    s.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
    return !ec;
}

std::vector<std::string> children(const std::string& hosts, const std::string& path)
{
    return with_session<std::vector<std::string>>(hosts, [path](zklock::session& s) -> asio::awaitable<std::vector<std::string>> {
        auto [ec, names, st] = co_await s.async_get_children(path, asio::as_tuple(asio::use_awaitable));
        if (ec == zklock::zk_errc::no_node) co_return std::vector<std::string>{};
        if (ec) throw boost::system::system_error(ec, "get_children " + path);
        co_return names;
    });
}

std::optional<std::string> get_data(const std::string& hosts, const std::string& path)
{
    return with_session<std::optional<std::string>>(hosts, [path](zklock::session& s) -> asio::awaitable<std::optional<std::string>> {
        auto [ec, data, st] = co_await s.async_get_data(path, asio::as_tuple(asio::use_awaitable));
        if (ec == zklock::zk_errc::no_node) co_return std::nullopt;
        if (ec) throw boost::system::system_error(ec, "get_data " + path);
        co_return data;
    });
}

void remove_node(const std::string& hosts, const std::string& path)
{
    with_session<bool>(hosts, [path](zklock::session& s) -> asio::awaitable<bool> {
        auto [ec] = co_await s.async_remove(path, -1, asio::as_tuple(asio::use_awaitable));
        if (ec) throw boost::system::system_error(ec, "remove " + path);
        co_return true;
    });
}

}  // namespace tools_test
