// What the simulation's tests share: the library's real sessions on testing::simulation::model, in virtual
// time, with no server (so that they build and run in every tier, the Release one included).
#pragma once

#include <zklock/detail/timer.hpp>
#include <zklock/testing/simulation.hpp>
#include <zklock/testing/virtual_time.hpp>
#include <zklock/zklock.hpp>

#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace sim_test {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::use_awaitable;
using zklock::testing::simulation::model;
using zklock::testing::simulation::virtual_time;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

/// Waits `d` of zklock::clock's time (virtual on a thread in virtual time).
inline asio::awaitable<void> pause_on_clock(std::chrono::milliseconds d)
{
    zklock::detail::timer t(co_await asio::this_coro::executor);
    t.expires_after(d);
    co_await t.async_wait(use_awaitable);
}

/// `n` sessions on `zk`, each with `timeout` (the model's 200 ms tick allows 400 ms to 4 s).
inline std::vector<zklock::session> sessions_on(model& zk, int n, std::chrono::milliseconds timeout)
{
    std::vector<zklock::session> ss;
    for (int i = 0; i < n; ++i) {
        zklock::session_config cfg;
        cfg.session_timeout = timeout;
        ss.push_back(zk.make_session(cfg));
    }
    return ss;
}

/// The lines in a trace: the steps of a schedule so far.
inline std::size_t lines_in(const std::string& trace) { return static_cast<std::size_t>(std::count(trace.begin(), trace.end(), '\n')); }

/// What one seed's run broke, if anything ("" when every promise held), and how long its schedule was.
struct seed_outcome {
    std::string violation;  // the first promise broken
    std::string trace;      // the model's events and the workload's, a line each
    std::size_t grants = 0;
    std::size_t failures = 0;  // acquires that failed (a timeout, a lost connection): allowed, counted
    std::size_t stale_grants = 0;  // grants on a node a third party was deleting (holder_book)
    std::size_t broken_at = 0;  // the trace's line count when the first promise broke: the schedule to read
    std::size_t expiries_of_holders = 0;  // holders whose session the leader expired (holder_book::expired)
    void violate(const std::string& what)
    {
        if (!violation.empty()) return;
        violation = what;
        broken_at = lines_in(trace);
    }
    void note(const std::string& line) { trace += line + '\n'; }
};

/// The drawn faults a run skips (model_options::skip_faults).
using fault_set = std::set<std::size_t>;

/// A seeded model's options: `servers` servers, the schedule drawn from `seed` without the faults `skip`,
/// told into `out`'s trace.
inline zklock::testing::simulation::model_options seeded(std::uint64_t seed, const fault_set& skip, seed_outcome& out,
                                                         std::size_t servers = 3)
{
    zklock::testing::simulation::model_options o;
    o.servers = servers;
    o.seed = seed;
    o.skip_faults = skip;
    o.trace = [&out](const std::string& line) { out.note(line); };
    return o;
}

/// One run of a workload: a seed, and the drawn faults it skips.
using seed_run = std::function<seed_outcome(std::uint64_t, const fault_set&)>;

inline std::size_t steps_of(const seed_outcome& r) { return lines_in(r.trace); }

/// The faults a failing seed needs: each drawn fault skipped in turn, and kept skipped while the run
/// still breaks a promise no later in its schedule (greedy, one run a fault). What is left, up to the step
/// where the promise broke, is the schedule to read.
inline fault_set shrink(const seed_run& run, std::uint64_t seed, const seed_outcome& failing, seed_outcome& shrunk)
{
    fault_set skip;
    shrunk = failing;
    std::size_t drawn = 0;
    for (auto at = failing.trace.find(" fault "); at != std::string::npos; at = failing.trace.find(" fault ", at + 1)) ++drawn;
    for (std::size_t k = 0; k < drawn; ++k) {
        auto trial = skip;
        trial.insert(k);
        if (auto r = run(seed, trial); !r.violation.empty() && r.broken_at <= shrunk.broken_at) {
            skip = std::move(trial);
            shrunk = std::move(r);
        }
    }
    return skip;
}

inline std::string as_list(const fault_set& skip)
{
    std::string out;
    for (auto k : skip) out += (out.empty() ? "" : ",") + std::to_string(k);
    return out;
}

inline fault_set parse_list(const char* text)
{
    fault_set out;
    for (const char* p = text; p && *p;) {
        char* end = nullptr;
        out.insert(static_cast<std::size_t>(std::strtoull(p, &end, 10)));
        p = (end && *end == ',') ? end + 1 : nullptr;
    }
    return out;
}

inline std::uint64_t env_number(const char* name, std::uint64_t otherwise)
{
    const char* v = std::getenv(name);
    return v && *v ? std::strtoull(v, nullptr, 10) : otherwise;
}

/// Each of seeds 1 to `n` of `run` twice: the same schedule byte for byte, the same outcome (a seed that
/// does not replay cannot be shrunk or debugged: the workload drew from something that is not the seed).
inline void check_replays(const std::string& workload, const seed_run& run, std::uint64_t n = 20)
{
    for (std::uint64_t seed = 1; seed <= n; ++seed) {
        const auto a = run(seed, {}), b = run(seed, {});
        if (a.trace == b.trace && a.violation == b.violation && a.grants == b.grants && a.failures == b.failures)
            continue;
        std::size_t line = 1, at = 0;
        for (; at < std::min(a.trace.size(), b.trace.size()) && a.trace[at] == b.trace[at]; ++at)
            if (a.trace[at] == '\n') ++line;
        BOOST_TEST(false, workload << " seed " << seed << " ran differently twice; its schedules part at line " << line);
        return;
    }
}

/// Runs `workload`'s seeds as the environment asks: ZKLOCK_SIM_SEED=S alone (ZKLOCK_SIM_SKIP=a,b: without
/// those faults; ZKLOCK_SIM_TRACE=1: printing its schedule), else ZKLOCK_SIM_FIRST=F ZKLOCK_SIM_SEEDS=N
/// (seeds F to F+N-1; 1 and 200 by default). Each broken promise fails the test case with its seed, its
/// schedule's length, the schedule shrunk to the faults it needs, and the command that replays that; and
/// the runs must have granted at least `min_grants` a seed (a pass by doing nothing fails). The `kept`
/// seeds (those that found a defect) run as well, whatever the range.
inline void run_seeds(const std::string& workload, const seed_run& run, std::size_t min_grants,
                      const std::vector<std::uint64_t>& kept = {})
{
    auto check = [&](std::uint64_t seed, const seed_outcome& r, bool shrinking) {
        if (r.violation.empty() || !shrinking) {
            BOOST_TEST(r.violation.empty(), workload << " seed " << seed << ": " << r.violation << "; broken at step "
                                                     << r.broken_at << " of " << steps_of(r));
            return;
        }
        seed_outcome shrunk;
        const auto skip = shrink(run, seed, r, shrunk);
        BOOST_TEST(r.violation.empty(), workload << " seed " << seed << ": " << r.violation << "; broken at step "
                                                 << r.broken_at << " of " << steps_of(r) << "; shrunk, skipping "
                                                 << skip.size() << " of its faults: broken at step " << shrunk.broken_at
                                                 << " (" << shrunk.violation << "); replay: scripts/simulate.sh --workload "
                                                 << workload << " --seed " << seed
                                                 << (skip.empty() ? "" : " --skip-faults " + as_list(skip)) << " --trace");
    };
    if (const auto one = env_number("ZKLOCK_SIM_SEED", 0)) {
        const auto r = run(one, parse_list(std::getenv("ZKLOCK_SIM_SKIP")));
        if (std::getenv("ZKLOCK_SIM_TRACE") && *std::getenv("ZKLOCK_SIM_TRACE")) std::cout << r.trace;
        check(one, r, false);  // asserts that no promise was broken
        BOOST_TEST_MESSAGE(workload << " seed " << one << ": " << r.grants << " grants, " << r.failures << " failed acquires, "
                                    << steps_of(r) << " steps");
        return;
    }
    for (auto seed : kept) check(seed, run(seed, {}), true);
    const auto first = env_number("ZKLOCK_SIM_FIRST", 1), seeds = env_number("ZKLOCK_SIM_SEEDS", 200);
    std::size_t failed = 0, grants = 0, failures = 0, stale = 0, expiries = 0;
    for (std::uint64_t seed = first; seed < first + seeds; ++seed) {
        const auto r = run(seed, {});
        grants += r.grants;
        failures += r.failures;
        stale += r.stale_grants;
        expiries += r.expiries_of_holders;
        if (!r.violation.empty()) {
            ++failed;
            check(seed, r, true);
        }
    }
    BOOST_TEST(grants >= seeds * min_grants, workload << ": " << grants << " grants in " << seeds << " seeds");
    BOOST_TEST_MESSAGE(workload << ": " << seeds << " seeds ran, " << failed << " failed; " << grants << " grants, "
                                << failures << " failed acquires, " << stale << " on a node a third party was deleting, "
                                << expiries << " holders' sessions expired by the leader");
}

/// Who holds each path, as the workload's guards say, checked at every grant: mutual exclusion in the
/// model's order (every other holder of the path has been told of its loss, or a third party is deleting
/// one of the two nodes: then the holder and its successor learn it at the same zxid,
/// docs/loss-and-fencing.md), and tokens that increase per path, always; and at every expiry by the leader
/// (model_options::on_expiry, set by watch_expiries): each holder of that session told of its loss first.
class holder_book {
public:
    explicit holder_book(seed_outcome& out) : out_(out) {}
    /// Checks each expiry of `o`'s model (expired).
    void watch_expiries(zklock::testing::simulation::model_options& o)
    {
        o.on_expiry = [this](std::int64_t id) { expired(id); };
    }
    /// `g`, a lock of the session `session` (its id at the grant), holds `path` from now on, until
    /// released(path, g).
    void granted(const std::string& path, const zklock::guard& g, const std::string& who, std::int64_t session)
    {
        if (g.lost()) out_.violate("a guard on " + path + " was handed out already lost: " + g.lost().message());
        ++out_.grants;
        // A node a third party deletes: its holder learns it at the same zxid as its successor, or as much
        // later as its server lags; a waiter whose node it was may still be granted on it by a lagging
        // follower's listing, with its old token, and told a round trip later (docs/loss-and-fencing.md).
        // Neither exclusion nor the token's order is asked of such a grant; every other grant's token grows.
        const bool deleted = deleted_.contains(g.node());
        if (deleted) ++out_.stale_grants;
        else if (auto it = last_token_.find(path); it != last_token_.end() && !(it->second < g.token()))
            out_.violate("the token on " + path + " did not increase");
        if (!deleted) last_token_[path] = g.token();
        out_.note("grant " + path + " to " + who + " token " + g.token().to_string() + " node " + sequence_of(g) +
                  (deleted ? " (a third party is deleting it)" : ""));
        for (const auto& other : holders_[path])
            if (!deleted && !other.g->lost() && !deleted_.contains(other.g->node()))
                out_.violate("two holders of " + path + " at once, neither told of a loss");
        holders_[path].push_back({&g, session});
    }
    void released(const std::string& path, const zklock::guard& g)
    {
        std::erase_if(holders_[path], [&](const holder& h) { return h.g == &g; });
    }
    /// The leader expires the session `id` now: a holder of it not yet told of a loss breaks the promise
    /// that a session which stops hearing from ZooKeeper is told before anyone else can hold its locks.
    void expired(std::int64_t id)
    {
        for (const auto& [path, hs] : holders_)
            for (const auto& h : hs) {
                if (h.session != id) continue;
                ++out_.expiries_of_holders;
                if (!h.g->lost())
                    out_.violate("the leader expired session " + std::to_string(id) + " while its holder of " + path +
                                 " was not told of a loss");
            }
    }
    /// A third party is deleting `node` (as `zklock break` does).
    void deleting(const std::string& node) { deleted_.insert(node); }

private:
    // The node's sequence number: its name's random part differs from run to run, and the trace may not.
    static std::string sequence_of(const zklock::guard& g) { return g.node().substr(g.node().size() - 10); }
    seed_outcome& out_;
    struct holder {
        const zklock::guard* g;
        std::int64_t session;
    };
    std::map<std::string, std::vector<holder>> holders_;
    std::map<std::string, zklock::fencing_token> last_token_;
    std::set<std::string> deleted_;
};

/// Runs `io` until `finished` reaches `n` (a second of virtual time at a time, two minutes at most: idle
/// sessions only ping and wait for the leader's ticks, which costs the run without testing anything),
/// closes `ss`, and checks that nothing is left under `paths` nor alive.
inline void finish_run(virtual_time& vt, asio::io_context& io, model& zk, std::vector<zklock::session>& ss, const int& finished,
                       int n, const std::vector<std::string>& paths, seed_outcome& out)
{
    for (auto limit = vt.now() + 120s; finished != n && vt.now() < limit;) vt.run_for(io, 1s);
    if (finished != n) out.violate(std::to_string(n - finished) + " workers never finished");
    for (auto& s : ss) s.close();
    vt.run_for(io, 5s);
    for (const auto& p : paths)
        if (!zk.children(p).empty()) out.violate(std::to_string(zk.children(p).size()) + " nodes left under " + p);
    if (zk.live_sessions() != 0) out.violate(std::to_string(zk.live_sessions()) + " sessions left alive");
}

/// Virtual ms since `since`, as text.
inline std::string ms_since(zklock::clock::time_point since)
{
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(zklock::clock::now() - since).count());
}

/// An acquire (or a campaign) that began at `asked` with `timeout` completed by its deadline, whatever the
/// schedule did: the deadline covers the whole acquire (mutex.hpp), and in virtual time "by" is exact.
inline void check_deadline(seed_outcome& out, zklock::clock::time_point asked, std::chrono::milliseconds timeout,
                           const std::string& what)
{
    if (zklock::clock::now() - asked > timeout)
        out.violate(what + " completed " + ms_since(asked) + " ms after it began, past its deadline");
}

}  // namespace sim_test
