// The semaphore's local hand-off never starves a coroutine of the same session: coroutines of one session
// loop acquire(3s) / release on one semaphore for 8 s, as examples/connection_limit.cpp's workers do, and
// none of them may time out; single and several-lease waiters mixed. Every holder checks the limit itself.
#include "test_util.hpp"

#include <zklock/semaphore.hpp>

#include <filesystem>
#include <iostream>

BOOST_AUTO_TEST_SUITE(semaphore_fairness_tests)

using namespace test;
using zklock::guard;
using zklock::semaphore;

namespace {

/// One scenario: `wants[i]` leases for worker i, all on one session and one semaphore of `leases`.
struct scenario {
    std::string name;
    std::size_t leases;
    std::vector<std::size_t> wants;
    // Results.
    std::vector<int> grants;
    std::vector<std::string> stage;
    int timeouts = 0, errors = 0;
    std::chrono::steady_clock::duration longest{};  // the longest wait for a grant
    std::size_t inside = 0, most = 0;
    int finished = 0;
};

asio::awaitable<void> worker(zklock::session& s, std::string path, scenario& sc, std::size_t i,
                             std::chrono::steady_clock::time_point end)
{
    semaphore sem(s, path, sc.leases);
    while (std::chrono::steady_clock::now() < end) {
        const auto n = sc.wants[i];
        std::vector<guard> held;
        error_code ec;
        const auto asked = std::chrono::steady_clock::now();
        if (n == 1) {
            auto [e, g] = co_await sem.acquire(3s, tuple_awaitable);
            ec = e;
            if (!e) held.push_back(std::move(g));
        } else {
            auto [e, gs] = co_await sem.acquire_many(n, 3s, tuple_awaitable);
            ec = e;
            held = std::move(gs);
        }
        sc.longest = std::max(sc.longest, std::chrono::steady_clock::now() - asked);
        if (ec == zklock::error::timeout) {
            ++sc.timeouts;
            continue;
        }
        if (ec) {
            ++sc.errors;
            BOOST_TEST_MESSAGE(sc.name << " worker " << i << ": " << ec.message());
            break;
        }
        sc.inside += n;
        sc.most = std::max(sc.most, sc.inside);  // checked at the end: more than the semaphore has is a failure
        ++sc.grants[i];
        co_await yield();  // a short section: others get to run and queue
        sc.inside -= n;
        sc.stage[i] = "releasing";
        for (auto& g : held) {
            auto [rec] = co_await g.release(tuple_awaitable);
            if (rec) {
                ++sc.errors;
                BOOST_TEST_MESSAGE(sc.name << " worker " << i << " release: " << rec.message());
            }
        }
        sc.stage[i] = "acquiring";
    }
    sc.stage[i] = "finished";
    ++sc.finished;
}

}  // namespace

BOOST_AUTO_TEST_CASE(coroutines_of_one_session_loop_on_a_semaphore_and_none_times_out)
{
    std::vector<scenario> all = {
        {"3 on 1 lease", 1, {1, 1, 1}, {}, {}},
        {"5 on 2 leases", 2, {1, 1, 1, 1, 1}, {}, {}},
        {"singles and pairs on 3 leases", 3, {1, 2, 1, 2}, {}, {}},
    };
    // The deadlines here are about our queue, not the disk: the server keeps its log in memory, so that
    // an fsync stalled by other work on the machine cannot make a waiter miss its 3 s. And a session
    // timeout above the tests' usual 4 s, so that a slow keepalive answer is not reported as a lost lease.
    zklock::testing::server_options o;
    if (std::filesystem::is_directory("/dev/shm")) o.data_log_root = "/dev/shm";
    zklock::testing::server server(o);
    asio::io_context ioc;
    std::vector<std::unique_ptr<zklock::session>> ss;
    for (std::size_t k = 0; k < all.size(); ++k) {
        auto c = config_for(server.connect_string());
        c.session_timeout = 20s;
        ss.push_back(std::make_unique<zklock::session>(ioc, c));
    }
    run(ioc, [&]() -> asio::awaitable<void> {
        for (auto& s : ss) co_await s->async_connect(use_awaitable);
        const auto end = std::chrono::steady_clock::now() + 8s;
        std::size_t workers = 0;
        for (std::size_t k = 0; k < all.size(); ++k) {
            auto& sc = all[k];
            sc.grants.assign(sc.wants.size(), 0);
            sc.stage.assign(sc.wants.size(), "acquiring");
            const auto path = unique_path("sem-fair");
            for (std::size_t i = 0; i < sc.wants.size(); ++i, ++workers)
                asio::co_spawn(ioc, worker(*ss[k], path, sc, i, end), asio::detached);
        }
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            int f = 0;
            for (auto& sc : all) f += sc.finished;
            co_return f == static_cast<int>(workers);
        }, 30s));
    }, 60s);
    for (auto& sc : all) {
        std::cout << sc.name << ": grants";
        for (std::size_t i = 0; i < sc.grants.size(); ++i) std::cout << ' ' << sc.grants[i] << " (" << sc.stage[i] << ")";
        std::cout << ", timeouts " << sc.timeouts << ", errors " << sc.errors << ", most held " << sc.most << ", longest wait "
                  << std::chrono::duration_cast<std::chrono::milliseconds>(sc.longest).count() << " ms\n";
        BOOST_TEST_CONTEXT(sc.name)
        {
            BOOST_TEST(sc.timeouts == 0);
            BOOST_TEST(sc.errors == 0);
            BOOST_TEST(sc.most <= sc.leases);
            for (auto g : sc.grants) BOOST_TEST(g > 0);
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()  // semaphore_fairness_tests
