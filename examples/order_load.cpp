// A load client for order_server: N connections spread over a list of servers, each sending
// "BUY <item>" requests one after another, and a summary at the end.
//
//   order_load --ports P1,P2,... [--host 127.0.0.1] [--connections 8] [--requests 50 (per connection)]
//              [--item item42]
//
// It also checks the servers' answers against each other: every "OK <remaining>" names the stock left
// after one sale, so two sales answering the same number mean a ticket was sold twice ("oversold").
// Exit status 0 unless a request failed or something was oversold.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

struct totals {
    int ok = 0, soldout = 0, busy = 0, errors = 0;
    std::map<int, int> remaining_seen;  // "OK n" answers per n
};

asio::awaitable<void> connection(tcp::endpoint server, std::string item, int requests, totals& t)
{
    tcp::socket sock(co_await asio::this_coro::executor);
    auto [cec] = co_await sock.async_connect(server, use_tuple);
    if (cec) {
        std::cerr << "order_load: cannot connect to " << server << ": " << cec.message() << "\n";
        t.errors += requests;
        co_return;
    }
    const std::string request = "BUY " + item + "\n";
    std::string buf;
    for (int i = 0; i < requests; ++i) {
        auto [wec, wn] = co_await asio::async_write(sock, asio::buffer(request), use_tuple);
        auto [rec, n] = co_await asio::async_read_until(sock, asio::dynamic_buffer(buf), '\n', use_tuple);
        if (wec || rec) {
            t.errors += requests - i;
            co_return;
        }
        const std::string reply = buf.substr(0, n - 1);
        buf.erase(0, n);
        if (reply.rfind("OK ", 0) == 0) {
            ++t.ok;
            ++t.remaining_seen[std::atoi(reply.c_str() + 3)];
        } else if (reply == "SOLDOUT") {
            ++t.soldout;
        } else if (reply == "BUSY") {
            ++t.busy;
        } else {
            ++t.errors;
            std::cerr << "order_load: " << server << " answered '" << reply << "'\n";
        }
    }
}

[[noreturn]] void usage(int code)
{
    std::cerr << "usage: order_load --ports P1,P2,... [--host ADDR] [--connections N] [--requests N] [--item ITEM]\n";
    std::exit(code);
}

}  // namespace

int main(int argc, char** argv)
{
    std::vector<unsigned short> ports;
    std::string host = "127.0.0.1", item = "item42";
    int connections = 8, requests = 50;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) usage(64);
            return argv[++i];
        };
        if (a == "--ports") {
            std::stringstream ss(next());
            for (std::string p; std::getline(ss, p, ',');) ports.push_back(static_cast<unsigned short>(std::atoi(p.c_str())));
        } else if (a == "--host") host = next();
        else if (a == "--connections") connections = std::atoi(next().c_str());
        else if (a == "--requests") requests = std::atoi(next().c_str());
        else if (a == "--item") item = next();
        else if (a == "-h" || a == "--help") usage(0);
        else usage(64);
    }
    if (ports.empty() || connections < 1 || requests < 1) usage(64);

    asio::io_context ioc;
    totals t;
    const auto addr = asio::ip::make_address(host);
    for (int c = 0; c < connections; ++c)  // connection c talks to server c mod |ports|
        asio::co_spawn(ioc, connection(tcp::endpoint(addr, ports[static_cast<std::size_t>(c) % ports.size()]), item,
                                       requests, t),
                       [&](std::exception_ptr e) {
                           if (e) ++t.errors;
                       });
    const auto start = std::chrono::steady_clock::now();
    ioc.run();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    int oversold = 0;
    for (const auto& [n, count] : t.remaining_seen) oversold += count - 1;
    const int total = t.ok + t.soldout + t.busy + t.errors;
    std::printf("order_load: %d connections over %zu servers, %d requests for %s\n", connections, ports.size(),
                total, item.c_str());
    std::printf("ok %d\nsoldout %d\nbusy %d\nerrors %d\noversold %d\nrequests/s %.0f\n", t.ok, t.soldout, t.busy,
                t.errors, oversold, static_cast<double>(total) / secs);
    if (!t.remaining_seen.empty()) std::printf("lowest remaining %d\n", t.remaining_seen.begin()->first);
    return t.errors == 0 && oversold == 0 ? 0 : 1;
}
