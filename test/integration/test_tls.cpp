// TLS to ZooKeeper the sidecar way: Debian's C client has no TLS (no zookeeper_init_ssl), so a server that
// opens only its secureClientPort is reached through stunnel beside the client. The sessions take locks
// through it, and survive a restart of the sidecar as they survive any lost connection.
#include "process_util.hpp"
#include "test_util.hpp"

#include <fstream>
#include <optional>

BOOST_AUTO_TEST_SUITE(tls_tests)

using namespace test;
using tools_test::listening;
using tools_test::process;
using zklock::mutex;
using zklock::session;
using zklock::session_state;

namespace {

/// stunnel in client mode: plain ZooKeeper on 127.0.0.1:`accept`, TLS to the server, whose certificate
/// must be `ca` and name 127.0.0.1.
struct sidecar {
    tools_test::temp_dir dir;
    std::uint16_t accept = tools_test::free_port();
    std::optional<process> running;

    sidecar(std::uint16_t server_port, const std::filesystem::path& ca)
    {
        std::ofstream(dir / "stunnel.conf") << "foreground = yes\n"
                                            << "[zookeeper]\nclient = yes\n"
                                            << "accept = 127.0.0.1:" << accept << '\n'
                                            << "connect = 127.0.0.1:" << server_port << '\n'
                                            << "CAfile = " << ca.string() << '\n'
                                            << "verifyChain = yes\ncheckIP = 127.0.0.1\n";
        start();
    }
    void start()
    {
        running.emplace(std::vector<std::string>{"stunnel4", dir / "stunnel.conf"}, dir / "stunnel.out", dir / "stunnel.err");
        BOOST_REQUIRE_MESSAGE(tools_test::eventually([&] { return listening(accept); }, 10s),
                              "stunnel did not listen: " << tools_test::read_file(dir / "stunnel.err"));
    }
    void kill() { running.reset(); }  // SIGKILL, as a crashed sidecar
    std::string hosts() const { return "127.0.0.1:" + std::to_string(accept); }
};

}  // namespace

BOOST_AUTO_TEST_CASE(locks_through_a_tls_sidecar_to_a_tls_only_server)
{
    zklock::testing::server_options opts;
    opts.tls_only = true;
    zklock::testing::server srv(opts);
    BOOST_TEST(srv.four_letter("srvr").find("Mode: standalone") != std::string::npos);
    sidecar tunnel(srv.port(), srv.tls_certificate());

    asio::io_context ioc;
    auto through = config_for(tunnel.hosts());
    through.session_timeout = 10s;  // outlives the sidecar's restart
    session a(ioc, through), b(ioc, through);
    auto plain = config_for(srv.connect_string());  // plain ZooKeeper straight to the TLS port
    plain.connect_timeout = 3s;
    session direct(ioc, plain);
    run(ioc, [&]() -> asio::awaitable<void> {
        auto [refused] = co_await direct.async_connect(tuple_awaitable);
        BOOST_TEST(refused == zklock::error::connect_timeout, refused.message());  // the port speaks TLS alone

        co_await a.async_connect(use_awaitable);
        co_await b.async_connect(use_awaitable);
        const auto id = a.id();
        const auto path = unique_path("tls");
        mutex ma(a, path), mb(b, path);
        auto ga = co_await ma.acquire(5s, use_awaitable);
        const auto a_node = ga.node();
        bool a_holds = true, b_saw_a = false, b_done = false;
        zklock::error_code b_ec;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [ec, gb] = co_await mb.acquire(30s, tuple_awaitable);
            b_ec = ec;
            if (!ec) {
                b_saw_a = a_holds;
                for (const auto& kid : co_await children(b, path)) b_saw_a = b_saw_a || path + "/" + kid == a_node;
                co_await gb.release(use_awaitable);
            }
            b_done = true;
        }, asio::detached);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return (co_await children(a, path)).size() == 2; }));

        tunnel.kill();
        auto [ec1, st1] = co_await a.async_wait_state(session_state::connected, tuple_awaitable);
        BOOST_TEST(st1 == session_state::connecting);
        tunnel.start();
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return a.state() == session_state::connected && b.state() == session_state::connected;
        }, 15s));
        BOOST_TEST(a.id() == id);  // the same session, through the new sidecar
        BOOST_TEST(!ga.lost(), ga.lost().message());
        BOOST_TEST(!b_done);  // still waiting behind A

        a_holds = false;
        co_await ga.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return b_done; }, 10s));
        BOOST_TEST(!b_ec, b_ec.message());
        BOOST_TEST(!b_saw_a);  // mutual exclusion
        BOOST_TEST((co_await children(a, path)).empty());
        co_await a.async_close(use_awaitable);
        co_await b.async_close(use_awaitable);
    }, 90s);
}

BOOST_AUTO_TEST_SUITE_END()  // tls_tests
