// Seeded schedules of the real mutex on the model ZooKeeper (issue 50): three sessions on three servers
// contend for two paths through lagging followers and dropped connections, each schedule drawn from a
// seed, and the promises are checked at every grant and at the end. A failure names its seed and the
// command that replays it. ZKLOCK_SIM_SEED=S runs seed S alone (ZKLOCK_SIM_TRACE=1: and prints its
// schedule), ZKLOCK_SIM_FIRST=F ZKLOCK_SIM_SEEDS=N runs seeds F to F+N-1 (scripts/simulate.sh drives them).
#include "sim_util.hpp"


#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

BOOST_AUTO_TEST_SUITE(simulation_seed_tests)

using namespace sim_test;

namespace simulation_seed_test {

/// What one seed's run broke, if anything ("" when every promise held), and how long its schedule was.
struct outcome {
    std::string violation;
    std::string trace;  // the model's events and the grants, a line each
    std::size_t grants = 0;
    std::size_t failures = 0;  // acquires that failed (a timeout, a lost connection): allowed, counted
};

constexpr auto session_timeout = 2s;
constexpr auto acquire_timeout = 2s;
constexpr int workers = 3, rounds = 6;

outcome run_seed(std::uint64_t seed)
{
    virtual_time vt;
    asio::io_context io;
    zklock::testing::simulation::model_options o;
    o.servers = 3;
    o.seed = seed;
    o.drop_one_in = 40;
    o.cut_off_one_in = 150;  // up to 3 s: longer than the 2 s session timeout about a third of the time
    outcome out;
    o.trace = [&out](const std::string& line) { out.trace += line + '\n'; };
    model zk(io, o);
    std::mt19937_64 choices(seed ^ 0x9e3779b97f4a7c15ull);  // the workload's own draws
    const std::vector<std::string> paths = {"/sim/a", "/sim/b"};
    std::vector<zklock::session> ss;
    for (int i = 0; i < workers; ++i) {
        zklock::session_config cfg;
        cfg.session_timeout = session_timeout;
        ss.push_back(zk.make_session(cfg));
    }
    std::map<std::string, std::vector<const zklock::guard*>> holders;
    std::map<std::string, zklock::fencing_token> last_token;
    int finished = 0;
    auto violate = [&](const std::string& what) {
        if (out.violation.empty()) out.violation = what;
    };
    for (int i = 0; i < workers; ++i) {
        std::vector<std::pair<std::size_t, int>> plan;  // per round: the path, the hold in ms
        for (int r = 0; r < rounds; ++r) {  // mostly short holds; one in four up to 3 s, that a cut-off may hit
            const auto longest = choices() % 4 == 0 ? 3000u : 30u;
            plan.emplace_back(choices() % paths.size(), static_cast<int>(choices() % longest));
        }
        asio::co_spawn(io, [&, i, plan]() -> asio::awaitable<void> {
            auto [cec] = co_await ss[i].async_connect(asio::as_tuple(use_awaitable));
            if (cec) violate("session " + std::to_string(i) + " did not connect: " + cec.message());
            for (auto [p, hold_ms] : plan) {
                const auto& path = paths[p];
                zklock::mutex mu(ss[i], path);
                const auto asked = vt.now();
                auto [ec, g] = co_await mu.acquire(acquire_timeout, tuple_awaitable);
                if (vt.now() - asked > acquire_timeout + session_timeout)
                    violate("an acquire on " + path + " completed " +
                            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(vt.now() - asked).count()) +
                            " ms after it began, past its deadline and a session timeout");
                if (ec) {
                    ++out.failures;
                    continue;
                }
                if (g.lost()) violate("a guard on " + path + " was handed out already lost: " + g.lost().message());
                // Exclusion in the model's order: every other holder of the path has been told of its loss.
                for (const auto* other : holders[path])
                    if (!other->lost()) violate("two holders of " + path + " at once, neither told of a loss");
                if (auto it = last_token.find(path); it != last_token.end() && !(it->second < g.token()))
                    violate("the token on " + path + " did not increase");
                last_token[path] = g.token();
                ++out.grants;
                out.trace += "grant " + path + " to " + std::to_string(i) + "\n";
                holders[path].push_back(&g);
                co_await pause_on_clock(std::chrono::milliseconds(hold_ms));
                std::erase(holders[path], &g);
                co_await g.release(asio::as_tuple(use_awaitable));
            }
            ++finished;
        }, asio::detached);
    }
    // Until every worker is done (a second of virtual time at a time), or two minutes: idle sessions only
    // ping and wait for the leader's ticks, which costs the run without testing anything.
    for (auto limit = vt.now() + 120s; finished != workers && vt.now() < limit;) vt.run_for(io, 1s);
    if (finished != workers) violate(std::to_string(workers - finished) + " workers never finished");
    for (auto& s : ss) s.close();
    vt.run_for(io, 5s);
    for (const auto& p : paths)
        if (!zk.children(p).empty()) violate(std::to_string(zk.children(p).size()) + " nodes left under " + p);
    if (zk.live_sessions() != 0) violate(std::to_string(zk.live_sessions()) + " sessions left alive");
    return out;
}

std::uint64_t env_number(const char* name, std::uint64_t otherwise)
{
    const char* v = std::getenv(name);
    return v && *v ? std::strtoull(v, nullptr, 10) : otherwise;
}

}  // namespace simulation_seed_test

using namespace simulation_seed_test;

BOOST_AUTO_TEST_CASE(a_seed_gives_the_same_run_every_time)
{
    const auto a = run_seed(7), b = run_seed(7);
    BOOST_TEST(a.trace.size() > 1000u);  // a schedule, not an empty run
    BOOST_TEST(a.trace == b.trace);      // byte for byte
    BOOST_TEST(a.violation == b.violation);
    BOOST_TEST(a.grants == b.grants);
    BOOST_TEST(a.failures == b.failures);
}

BOOST_AUTO_TEST_CASE(the_mutex_keeps_its_promises_on_every_seed)
{
    if (const auto one = env_number("ZKLOCK_SIM_SEED", 0)) {
        const auto r = run_seed(one);
        if (std::getenv("ZKLOCK_SIM_TRACE")) std::cout << r.trace;
        BOOST_TEST(r.violation.empty(), "seed " << one << ": " << r.violation);
        BOOST_TEST_MESSAGE("seed " << one << ": " << r.grants << " grants, " << r.failures << " failed acquires");
        return;
    }
    const auto first = env_number("ZKLOCK_SIM_FIRST", 1), seeds = env_number("ZKLOCK_SIM_SEEDS", 200);
    std::size_t failed = 0, grants = 0, failures = 0;
    for (std::uint64_t seed = first; seed < first + seeds; ++seed) {
        const auto r = run_seed(seed);
        grants += r.grants;
        failures += r.failures;
        if (!r.violation.empty()) {
            ++failed;
            const auto steps = std::count(r.trace.begin(), r.trace.end(), '\n');
            BOOST_TEST(r.violation.empty(), "seed " << seed << ": " << r.violation << "; schedule of " << steps
                                                     << " steps; replay: scripts/simulate.sh --seed " << seed
                                                     << " --trace");
        }
    }
    BOOST_TEST(grants > seeds * workers);  // the runs did contend: not a pass by doing nothing
    BOOST_TEST_MESSAGE(seeds << " seeds ran, " << failed << " failed; " << grants << " grants, " << failures
                             << " failed acquires");
}

BOOST_AUTO_TEST_SUITE_END()
