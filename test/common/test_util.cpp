// The integration tests' shared helpers (test_util.hpp), compiled once for every test executable.
#include "test_util.hpp"

#include <unistd.h>

#include <cstdio>

namespace test {

zklock::testing::server& shared_server()
{
    static zklock::testing::server s;
    return s;
}

zklock::session_config config_for(const std::string& hosts)
{
    zklock::session_config c;
    c.hosts = hosts;
    c.session_timeout = 4s;
    c.connect_timeout = 10s;
    if (const char* level = std::getenv("ZKLOCK_TEST_LOG")) {  // e.g. ZKLOCK_TEST_LOG=4 for the C client's debug
        c.log = zklock::stderr_log_sink();
        c.log_threshold = static_cast<zklock::log_level>(std::atoi(level));
    }
    return c;
}

asio::awaitable<void> yield() { co_await asio::post(co_await asio::this_coro::executor, use_awaitable); }

sessions::sessions(asio::io_context& io, std::size_t n) : ioc(io)
{
    for (std::size_t i = 0; i < n; ++i)
        all.push_back(std::make_unique<zklock::session>(ioc, config_for(shared_server().connect_string())));
}

asio::awaitable<void> sessions::connect()
{
    for (auto& s : all) co_await s->async_connect(use_awaitable);
}

threaded_sessions::threaded_sessions(std::size_t n)
{
    for (int i = 0; i < 4; ++i) threads.emplace_back([this] { ioc.run(); });
    for (std::size_t i = 0; i < n; ++i) {
        strands.push_back(asio::make_strand(ioc));
        all.push_back(std::make_unique<zklock::session>(strands.back(), config_for(shared_server().connect_string())));
        on(strands.back(), [&]() -> asio::awaitable<void> { co_await all.back()->async_connect(use_awaitable); });
    }
}

threaded_sessions::~threaded_sessions()
{
    work.reset();
    for (auto& s : all)
        if (s) ioc.stop();  // a test that failed half-way: do not wait for its sessions
    for (auto& t : threads) t.join();
}

std::string unique_path(const std::string& what)
{
    static std::atomic<int> n{0};
    return "/test/" + what + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

void run(asio::io_context& ioc, std::function<asio::awaitable<void>()> fn, std::chrono::seconds limit)
{
    bool done = false;
    std::exception_ptr failure;
    asio::co_spawn(ioc, fn(), [&](std::exception_ptr e) {
        failure = e;
        done = true;
    });
    ioc.restart();
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done && std::chrono::steady_clock::now() < deadline) ioc.run_one_for(100ms);
    BOOST_REQUIRE_MESSAGE(done, "the test coroutine did not finish within " << limit.count() << " s");
    if (failure) std::rethrow_exception(failure);
}

asio::awaitable<bool> eventually(std::function<asio::awaitable<bool>()> pred, std::chrono::milliseconds limit)
{
    asio::steady_timer t(co_await asio::this_coro::executor);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        if (co_await pred()) co_return true;
        if (std::chrono::steady_clock::now() >= deadline) co_return false;
        t.expires_after(20ms);
        co_await t.async_wait(use_awaitable);
    }
}

asio::awaitable<void> pause(std::chrono::milliseconds d)
{
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(use_awaitable);
}

asio::awaitable<std::vector<std::string>> children(zklock::session& s, const std::string& path)
{
    auto [ec, names, st] = co_await s.async_get_children(path, tuple_awaitable);
    if (ec && ec != zklock::zk_errc::no_node) BOOST_FAIL("get_children " << path << ": " << ec.message());
    co_return names;
}

bool none_out(const zklock::session& s, const std::string& kind)
{
    const auto st = s.stats();
    const auto it = st.requests_by_kind.find(kind);
    return it == st.requests_by_kind.end() || it->second.sent == it->second.round_trip.count + it->second.unanswered;
}

int thread_count()
{
    std::ifstream f("/proc/self/status");
    std::string key;
    while (f >> key) {
        if (key == "Threads:") {
            int n = 0;
            f >> n;
            return n;
        }
    }
    return -1;
}

std::string hex_id(std::int64_t id)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(id));
    return buf;
}

std::vector<std::string> watched_paths(const std::string& wchc, std::int64_t session_id)
{
    std::vector<std::string> out;
    std::istringstream in(wchc);
    std::string line;
    bool mine = false;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        if (line[0] != '\t') {
            mine = line == hex_id(session_id);
            continue;
        }
        // Every session following the ensemble (session_config::follow_ensemble) watches its configuration.
        if (mine && line != "\t/zookeeper/config") out.push_back(line.substr(1));
    }
    return out;
}

}  // namespace test
