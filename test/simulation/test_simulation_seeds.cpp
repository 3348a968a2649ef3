// Seeded schedules of the real mutex on the model ZooKeeper (issue 50): three sessions on three servers
// contend for two paths through lagging followers and dropped connections, each schedule drawn from a
// seed, and the promises are checked at every grant and at the end. A failure names its seed and the
// command that replays it. ZKLOCK_SIM_SEED=S runs seed S alone (ZKLOCK_SIM_TRACE=1: and prints its
// schedule), ZKLOCK_SIM_FIRST=F ZKLOCK_SIM_SEEDS=N runs seeds F to F+N-1 (scripts/simulate.sh drives them).
#include "sim_util.hpp"


#include <random>

BOOST_AUTO_TEST_SUITE(simulation_seed_tests)

using namespace sim_test;

namespace simulation_seed_test {

constexpr auto session_timeout = 2s;
constexpr auto acquire_timeout = 2s;
constexpr int workers = 3, rounds = 6;

seed_outcome run_seed(std::uint64_t seed, const fault_set& skip = {})
{
    virtual_time vt;
    asio::io_context io;
    seed_outcome out;
    auto o = seeded(seed, skip, out);
    o.drop_one_in = 40;
    o.cut_off_one_in = 150;  // up to 3 s: longer than the 2 s session timeout about a third of the time
    holder_book book(out);
    book.watch_expiries(o);
    model zk(io, o);
    std::mt19937_64 choices(seed ^ 0x9e3779b97f4a7c15ull);  // the workload's own draws
    const std::vector<std::string> paths = {"/sim/a", "/sim/b"};
    auto ss = sessions_on(zk, workers, session_timeout);
    int finished = 0;
    for (int i = 0; i < workers; ++i) {
        std::vector<std::pair<std::size_t, int>> plan;  // per round: the path, the hold in ms
        for (int r = 0; r < rounds; ++r) {  // mostly short holds; one in four up to 3 s, that a cut-off may hit
            const auto longest = choices() % 4 == 0 ? 3000u : 30u;
            plan.emplace_back(choices() % paths.size(), static_cast<int>(choices() % longest));
        }
        asio::co_spawn(io, [&, i, plan]() -> asio::awaitable<void> {
            auto [cec] = co_await ss[i].async_connect(asio::as_tuple(use_awaitable));
            if (cec) out.violate("session " + std::to_string(i) + " did not connect: " + cec.message());
            for (auto [p, hold_ms] : plan) {
                const auto& path = paths[p];
                zklock::mutex mu(ss[i], path);
                const auto asked = zklock::clock::now();
                auto [ec, g] = co_await mu.acquire(acquire_timeout, tuple_awaitable);
                check_deadline(out, asked, acquire_timeout, "an acquire on " + path);
                if (ec) {
                    ++out.failures;
                    continue;
                }
                book.granted(path, g, std::to_string(i), ss[i].id());
                co_await pause_on_clock(std::chrono::milliseconds(hold_ms));
                book.released(path, g);
                co_await g.release(asio::as_tuple(use_awaitable));
            }
            ++finished;
        }, asio::detached);
    }
    finish_run(vt, io, zk, ss, finished, workers, paths, out);
    return out;
}

}  // namespace simulation_seed_test

using namespace simulation_seed_test;

BOOST_AUTO_TEST_CASE(a_seed_gives_the_same_run_every_time)
{
    BOOST_TEST(run_seed(7).trace.size() > 1000u);  // a schedule, not an empty run
    check_replays("mutex", run_seed);              // seeds 1-20 (7 among them) twice: trace byte for byte, outcome
}

BOOST_AUTO_TEST_CASE(the_mutex_keeps_its_promises_on_every_seed)
{
    run_seeds("mutex", run_seed, workers);  // the runs did contend: more grants than one a worker
}

BOOST_AUTO_TEST_SUITE_END()
