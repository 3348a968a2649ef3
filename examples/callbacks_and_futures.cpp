// The same acquire without coroutines: with plain callbacks, and with std::future (asio::use_future).
//
//   callbacks_and_futures [--hosts HOSTS]
//
// Every zklock operation takes an Asio completion token, so code that is not coroutine-based uses it
// as it is. Without --hosts the program starts its own ZooKeeper.
#include <zklock/mutex.hpp>
#include <zklock/session.hpp>
#include <zklock/testing/server.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>

#include <chrono>
#include <future>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;

namespace {

// --- 1. Callbacks: each step starts the next from its completion handler. -----------------------
// The io_context runs on this thread; every handler runs inside ioc.run().
bool with_callbacks(const std::string& hosts)
{
    asio::io_context ioc;
    zklock::session_config cfg;
    cfg.hosts = hosts;
    zklock::session s(ioc, cfg);
    zklock::mutex m(s, "/zklock-demo/callbacks");
    bool ok = false;

    s.async_connect([&](error_code ec) {
        if (ec) {
            std::cerr << "connect: " << ec.message() << "\n";
            return s.close();
        }
        m.acquire(5s, [&](error_code aec, zklock::guard g) {
            if (aec) {
                std::cerr << "acquire: " << aec.message() << "\n";
                return s.close();
            }
            std::cout << "callbacks: holding " << g.node() << " (token " << g.token().to_string() << ")\n";
            // ... the critical section ...
            g.release([&](error_code rec) {
                ok = !rec;
                std::cout << "callbacks: released" << (rec ? ": " + rec.message() : std::string()) << "\n";
                s.async_close([](error_code) {});
            });
        });
    });
    ioc.run();  // returns once the session is closed and nothing is left to do
    return ok;
}

// --- 2. Futures: the io_context runs on its own thread; this thread blocks on futures. -----------
// A session belongs to its executor: connect it, close it and make its mutexes there (asio::post with
// use_future runs a lambda on the io thread and hands back what it returns). Acquiring, releasing and
// waiting for a loss may be started from any thread: they hop onto the session's executor themselves.
// The result (or the error, as a thrown system_error) comes from the future's get().
bool with_futures(const std::string& hosts)
{
    asio::io_context ioc;
    auto work = asio::make_work_guard(ioc);
    std::thread io_thread([&] { ioc.run(); });

    zklock::session_config cfg;
    cfg.hosts = hosts;
    std::optional<zklock::session> s(std::in_place, ioc, cfg);
    std::optional<zklock::mutex> m;
    auto on_io = [&](auto fn) { return asio::post(ioc, asio::use_future(std::move(fn))).get(); };

    bool ok = false;
    try {
        on_io([&] { return s->async_connect(asio::use_future); }).get();
        on_io([&] { m.emplace(*s, "/zklock-demo/futures"); });
        std::future<zklock::guard> f = m->acquire(5s, asio::use_future);  // from this thread
        zklock::guard g = f.get();  // blocks this thread, not the io thread
        std::cout << "futures: holding " << g.node() << " (token " << g.token().to_string() << ")\n";
        // ... the critical section ...
        g.release(asio::use_future).get();
        std::cout << "futures: released\n";
        ok = true;
    } catch (const boost::system::system_error& e) {
        std::cerr << "futures: " << e.what() << "\n";
    }
    // Close on the io thread, then let it finish; the session object is destroyed after the io thread.
    on_io([&] {
        m.reset();
        return s->async_close(asio::use_future);
    }).get();
    work.reset();
    io_thread.join();
    s.reset();
    return ok;
}

}  // namespace

int main(int argc, char** argv)
{
    std::string hosts;
    if (argc == 3 && std::string(argv[1]) == "--hosts") hosts = argv[2];
    else if (argc != 1) {
        std::cerr << "usage: callbacks_and_futures [--hosts HOSTS]\n";
        return 64;
    }
    try {
        std::unique_ptr<zklock::testing::server> local;
        if (hosts.empty()) {
            local = std::make_unique<zklock::testing::server>();
            hosts = local->connect_string();
        }
        const bool a = with_callbacks(hosts);
        const bool b = with_futures(hosts);
        std::cout << "callbacks_and_futures: " << (a && b ? "all done" : "FAILED") << "\n";
        return a && b ? 0 : 1;
    } catch (const std::exception& e) {
        std::cerr << "callbacks_and_futures: " << e.what() << "\n";
        return 1;
    }
}
