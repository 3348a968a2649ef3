// An order service: a TCP server whose handlers co_await an item's distributed lock.
//
//   order_server [--hosts HOSTS] [--port PORT] [--init ITEM=N]... [--lock-timeout MS] [--metrics-port PORT]
//
// Protocol, one request per line:  "BUY item42\n"  ->  "OK <remaining>\n" | "SOLDOUT\n" | "BUSY\n" | "ERR <why>\n"
//
// The stock of each item is a znode (/zklock-demo/stock/<item>), its lock another path
// (/zklock-demo/orders/<item>). Run several servers on different ports against the same ZooKeeper: they
// sell from the same stock and never oversell, because every read-decrement-write happens under the lock.
// Inside one server all connections share one session, so the lock passes between its handlers without
// a round trip; between servers it passes through ZooKeeper.
//
// Without --hosts the server starts its own ZooKeeper (zklock::testing::server): handy for a try-out,
// but then it shares its stock with nobody. SIGINT/SIGTERM stop it cleanly (session::async_drain).
//
// With --metrics-port, it also serves GET /metrics (HTTP, Boost.Beast) for Prometheus: the session's and
// the order locks' figures (zklock::write_prometheus, the locks under the stats label "orders"), and its
// own count of orders handled under a lock (order_server_sections_total).
#include <zklock/mutex.hpp>
#include <zklock/prometheus.hpp>
#include <zklock/session.hpp>
#include <zklock/testing/server.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);  // errors as values, no exceptions

struct options {
    std::string hosts;  // empty: start a local ZooKeeper
    unsigned short port = 7000;
    std::vector<std::pair<std::string, int>> init;
    std::chrono::milliseconds lock_timeout{2000};
    std::optional<unsigned short> metrics_port;  // none: no /metrics; 0: any free port
};

/// Orders handled while holding their item's lock: one per granted acquire, so that /metrics shows
/// zklock_acquires_total{lock="orders",outcome="granted"} equal to it once the orders under way are done.
std::uint64_t sections = 0;

[[noreturn]] void usage(int code)
{
    std::cerr << "usage: order_server [--hosts HOSTS] [--port PORT] [--init ITEM=N]... [--lock-timeout MS] "
                 "[--metrics-port PORT]\n";
    std::exit(code);
}

bool valid_item(const std::string& item)
{
    if (item.empty() || item.size() > 64) return false;
    for (char c : item)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
    return true;
}

std::string stock_path(const std::string& item) { return "/zklock-demo/stock/" + item; }
std::string lock_path(const std::string& item) { return "/zklock-demo/orders/" + item; }

/// One order: the item's lock (with a timeout), then read-decrement-write of its stock.
asio::awaitable<std::string> buy(zklock::session& s, const std::string& item, std::chrono::milliseconds timeout)
{
    zklock::mutex m(s, lock_path(item), {.stats_label = "orders"});  // one label for every item's lock
    auto [ec, g] = co_await m.acquire(timeout, use_tuple);
    if (ec == zklock::error::timeout) co_return "BUSY\n";  // too many buyers ahead of us
    if (ec == zklock::error::draining) co_return "ERR stopping: try another server\n";
    if (ec) co_return "ERR " + ec.message() + "\n";
    ++sections;

    // We hold the lock: nobody else reads or writes this item's stock until we release it.
    auto [rec, data, st] = co_await s.async_get_data(stock_path(item), use_tuple);
    if (rec == zklock::zk_errc::no_node) co_return "SOLDOUT\n";  // an item nobody stocked (the guard releases)
    if (rec) co_return "ERR " + rec.message() + "\n";
    const int stock = std::atoi(data.c_str());
    if (stock <= 0) {
        co_await g.release(use_tuple);
        co_return "SOLDOUT\n";
    }
    // A lock can be lost (session expired, node deleted): the guarded write lands only while our lock
    // node exists, checked by the server in the same multi.
    auto [wec] = co_await g.async_guarded_set_data(stock_path(item), std::to_string(stock - 1), -1, use_tuple);
    if (wec == zklock::error::lock_node_deleted) co_return "ERR lock lost: " + wec.message() + "\n";
    if (wec) co_return "ERR " + wec.message() + "\n";  // (after a connection loss the write may still have happened)
    co_await g.release(use_tuple);
    co_return "OK " + std::to_string(stock - 1) + "\n";
}

asio::awaitable<void> serve_connection(tcp::socket sock, zklock::session& s, std::chrono::milliseconds timeout)
{
    std::string buf;
    for (;;) {
        auto [ec, n] = co_await asio::async_read_until(sock, asio::dynamic_buffer(buf, 1024), '\n', use_tuple);
        if (ec) co_return;  // the client left (or sent a line too long)
        std::string line = buf.substr(0, n - 1);
        buf.erase(0, n);
        if (!line.empty() && line.back() == '\r') line.pop_back();

        std::string reply;
        if (line.rfind("BUY ", 0) == 0 && valid_item(line.substr(4))) reply = co_await buy(s, line.substr(4), timeout);
        else reply = "ERR expected 'BUY <item>'\n";
        auto [wec, wn] = co_await asio::async_write(sock, asio::buffer(reply), use_tuple);
        if (wec) co_return;
    }
}

/// GET /metrics over HTTP/1.1 (Boost.Beast): the session's statistics in Prometheus' text format, then
/// the server's own counter. Read on the session's executor (this one), so session::stats() is allowed.
asio::awaitable<void> serve_metrics_connection(tcp::socket sock, zklock::session& s)
{
    boost::beast::flat_buffer buf;
    for (;;) {
        http::request<http::string_body> req;
        auto [ec, n] = co_await http::async_read(sock, buf, req, use_tuple);
        if (ec) co_return;  // the scraper left, or sent nonsense
        http::response<http::string_body> res;
        res.version(req.version());
        res.keep_alive(req.keep_alive());
        if (req.method() == http::verb::get && req.target() == "/metrics") {
            std::ostringstream body;
            zklock::write_prometheus(body, s.stats());
            body << "# HELP order_server_sections_total Orders handled while holding their item's lock.\n"
                 << "# TYPE order_server_sections_total counter\n"
                 << "order_server_sections_total " << sections << "\n";
            res.result(http::status::ok);
            res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
            res.body() = body.str();
        } else {
            res.result(http::status::not_found);
            res.set(http::field::content_type, "text/plain");
            res.body() = "try GET /metrics\n";
        }
        res.prepare_payload();
        auto [wec, wn] = co_await http::async_write(sock, res, use_tuple);
        if (wec || !res.keep_alive()) co_return;
    }
}

asio::awaitable<void> serve_metrics(tcp::acceptor& acceptor, zklock::session& s)
{
    for (;;) {
        auto [ec, sock] = co_await acceptor.async_accept(use_tuple);
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
        if (!ec) asio::co_spawn(acceptor.get_executor(), serve_metrics_connection(std::move(sock), s), asio::detached);
    }
}

/// Sets the stock of each --init item, creating /zklock-demo/stock and the item's node if needed.
asio::awaitable<void> init_stock(zklock::session& s, const options& o)
{
    for (std::string dir : {"/zklock-demo", "/zklock-demo/stock"}) {
        auto [ec, path, st] = co_await s.async_create(dir, std::string(), zklock::create_mode::persistent, use_tuple);
        if (ec && ec != zklock::zk_errc::node_exists) throw boost::system::system_error(ec, "create " + dir);
    }
    for (const auto& [item, n] : o.init) {
        auto [ec, path, st] = co_await s.async_create(stock_path(item), std::to_string(n),
                                                      zklock::create_mode::persistent, use_tuple);
        if (ec == zklock::zk_errc::node_exists) {
            auto [sec, sst] = co_await s.async_set_data(stock_path(item), std::to_string(n), -1, use_tuple);
            ec = sec;
        }
        if (ec) throw boost::system::system_error(ec, "stock " + item);
        std::cout << "stock of " << item << " set to " << n << std::endl;
    }
}

asio::awaitable<void> run(const options& o, const std::string& hosts)
{
    auto ex = co_await asio::this_coro::executor;
    zklock::session_config cfg;
    cfg.hosts = hosts;
    zklock::session s(ex, cfg);
    co_await s.async_connect(asio::use_awaitable);
    co_await init_stock(s, o);

    tcp::acceptor metrics(ex);
    if (o.metrics_port) {
        metrics = tcp::acceptor(ex, tcp::endpoint(asio::ip::make_address("127.0.0.1"), *o.metrics_port));
        std::cout << "metrics on http://127.0.0.1:" << metrics.local_endpoint().port() << "/metrics" << std::endl;
        asio::co_spawn(ex, serve_metrics(metrics, s), asio::detached);
    }
    tcp::acceptor acceptor(ex, tcp::endpoint(asio::ip::make_address("127.0.0.1"), o.port));
    std::cout << "order_server listening on 127.0.0.1:" << acceptor.local_endpoint().port() << ", ZooKeeper "
              << hosts << std::endl;

    // SIGINT/SIGTERM: stop accepting, then drain the session below: orders under way finish, waiting ones
    // are told to go elsewhere, and the locks pass to the other servers at once, not after a session timeout.
    asio::signal_set stop(ex, SIGINT, SIGTERM);
    stop.async_wait([&](error_code ec, int) {
        if (ec) return;
        acceptor.close();
        metrics.close();
    });
    for (;;) {
        auto [ec, sock] = co_await acceptor.async_accept(use_tuple);
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) break;
        if (ec) continue;
        asio::co_spawn(ex, serve_connection(std::move(sock), s, o.lock_timeout), asio::detached);
    }
    std::cout << "order_server stopping" << std::endl;
    const auto t0 = std::chrono::steady_clock::now();
    auto [dec] = co_await s.async_drain(5s, use_tuple);  // success, or timeout: closed all the same
    std::cout << "order_server drained in "
              << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count()
              << " ms"
              << (dec == zklock::error::timeout ? " (the grace was over: the close released what was still held)"
                  : dec                         ? " (" + dec.message() + ")"
                                                : std::string())
              << std::endl;
}

}  // namespace

int main(int argc, char** argv)
{
    options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) usage(64);
            return argv[++i];
        };
        if (a == "--hosts") o.hosts = next();
        else if (a == "--port") o.port = static_cast<unsigned short>(std::atoi(next().c_str()));
        else if (a == "--metrics-port") o.metrics_port = static_cast<unsigned short>(std::atoi(next().c_str()));
        else if (a == "--lock-timeout") o.lock_timeout = std::chrono::milliseconds(std::atol(next().c_str()));
        else if (a == "--init") {
            auto v = next();
            auto eq = v.find('=');
            if (eq == std::string::npos || !valid_item(v.substr(0, eq))) usage(64);
            o.init.emplace_back(v.substr(0, eq), std::atoi(v.c_str() + eq + 1));
        } else if (a == "-h" || a == "--help") usage(0);
        else usage(64);
    }
    try {
        std::unique_ptr<zklock::testing::server> local;
        std::string hosts = o.hosts;
        if (hosts.empty()) {
            local = std::make_unique<zklock::testing::server>();
            hosts = local->connect_string();
        }
        asio::io_context ioc;
        std::exception_ptr failure;
        asio::co_spawn(ioc, run(o, hosts), [&](std::exception_ptr e) {
            failure = e;
            ioc.stop();  // connections still open end with the process
        });
        ioc.run();
        if (failure) std::rethrow_exception(failure);
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "order_server: " << e.what() << "\n";
        return 1;
    }
}
