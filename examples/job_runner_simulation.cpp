// A service's own test in simulation: a leader-elected job runner, written as it runs in production on
// zklock::session, tested on zklock's model ZooKeeper (testing::simulation::model) in virtual time, through
// dropped connections, partitions and session expiries, over many seeded schedules, in seconds. No server,
// no real time, and a failing seed replays the same way every time.
//
//   job_runner_simulation [--seeds N] [--first F] [--jobs N] [--seed S [--trace]]
//
// The service (job_runner below): each instance campaigns in /jobs/leader; the leader reads the next job
// number K from /jobs/next, runs job K, and records it with one guarded multi (set /jobs/next to K+1 at the
// version it read, create /jobs/done/job-K): a deposed leader's multi is refused by the server, its node
// being gone. A plain read that fails with a retryable error is read again while the term lasts
// (zklock::is_retryable); a lost term, or an expired session (renewed: expiry_policy::renew_requeue), means
// campaigning again. The test: three instances on a model of three servers, connections dropped and clients
// cut off (up to 3 s, past their 2 s session timeout: expiries), and at the end every job recorded exactly
// once, none missing, none beyond the last, and every instance done. Exit status 0 if every seed held.
#include <zklock/testing/simulation.hpp>
#include <zklock/testing/virtual_time.hpp>
#include <zklock/zklock.hpp>

#include <boost/asio.hpp>

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

// --- The service, as it runs in production ------------------------------------------------------------

/// One instance of the job runner, on a connected session: runs until the last job is recorded (by anyone).
class job_runner {
public:
    job_runner(zklock::session& s, std::string id, int jobs) : s_(s), id_(std::move(id)), jobs_(jobs) {}

    /// The jobs this instance recorded (its multi succeeded).
    int recorded() const { return recorded_; }

    asio::awaitable<void> run()
    {
        zklock::election e(s_, "/jobs/leader", id_);
        while (!all_done_) {
            auto [ec, l] = co_await e.campaign(2s, tuple_awaitable);
            if (ec == zklock::error::session_closed || ec == zklock::error::auth_failed) co_return;  // for good
            if (ec) continue;  // a timeout, a lost connection, an expiry: campaign again
            co_await lead(l);
            co_await l.resign(tuple_awaitable);
        }
    }

private:
    asio::awaitable<void> lead(zklock::leadership& l)
    {
        while (!l.lost()) {
            auto [rec, next, st] = co_await s_.async_get_data("/jobs/next", tuple_awaitable);
            if (rec) {
                if (zklock::is_retryable(rec)) continue;  // a connection loss: the term may well be intact
                co_return;
            }
            const int k = std::stoi(next);
            if (k >= jobs_) {
                all_done_ = true;
                co_return;
            }
            // Job k runs here. Then it is recorded, only if this term still holds, at the version read.
            std::vector<zklock::multi_op> record = {
                zklock::op::set_data{"/jobs/next", std::to_string(k + 1), st.version},
                zklock::op::create{"/jobs/done/job-" + std::to_string(k), id_}};  // named: see leader_info.hpp
            auto [wec, results] = co_await l.async_guarded_multi(std::move(record), tuple_awaitable);
            if (!wec) ++recorded_;
            // Else: refused (the term is over: lost() says so), or unknown (read /jobs/next again).
        }
    }

    zklock::session& s_;
    std::string id_;
    int jobs_;
    int recorded_ = 0;
    bool all_done_ = false;
};

// --- Its test, on the model ZooKeeper -------------------------------------------------------------------

/// One seed: "" when every promise held, else what broke. `trace`: print the schedule.
std::string run_seed(std::uint64_t seed, int jobs, bool trace)
{
    zklock::testing::simulation::virtual_time vt;  // first: the sessions below run on its clock
    asio::io_context io;
    zklock::testing::simulation::model_options o;
    o.servers = 3;
    o.seed = seed;
    o.drop_one_in = 50;
    o.cut_off_one_in = 200;  // up to max_cut_off (3 s): past the 2 s session timeout, an expiry
    if (trace) o.trace = [](const std::string& line) { std::cout << line << '\n'; };
    zklock::testing::simulation::model zk(io, o);

    zklock::session_config cfg;
    cfg.session_timeout = 2s;
    cfg.on_expiry = zklock::expiry_policy::renew_requeue;  // as a restarted process would come back
    std::vector<zklock::session> ss;
    std::vector<job_runner> runners;
    ss.reserve(3);
    runners.reserve(3);  // each runner refers to its session: no reallocation
    for (int i = 0; i < 3; ++i) {
        ss.push_back(zk.make_session(cfg));
        runners.emplace_back(ss.back(), "runner-" + std::to_string(i), jobs);
    }
    int finished = 0;
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {  // the jobs' directory, made once
        co_await ss[0].async_connect(tuple_awaitable);
        for (const std::string p : {"/jobs", "/jobs/done", "/jobs/next"})
            for (;;) {  // through lost connections: a create whose answer was lost may have been applied
                auto [ec, made, st] = co_await ss[0].async_create(p, p == "/jobs/next" ? "0" : "",
                                                                  zklock::create_mode::persistent, tuple_awaitable);
                if (!ec || ec == zklock::zk_errc::node_exists) break;
            }
        for (int i = 0; i < 3; ++i)
            asio::co_spawn(io, [&, i]() -> asio::awaitable<void> {
                co_await ss[i].async_connect(tuple_awaitable);
                co_await runners[i].run();
                ++finished;
            }, asio::detached);
    }, asio::detached);
    for (auto limit = vt.now() + 600s; finished != 3 && vt.now() < limit;) vt.run_for(io, 1s);

    std::string broken;
    if (finished != 3) broken = std::to_string(3 - finished) + " runners never finished";
    const auto done = zk.children("/jobs/done");
    std::set<std::string> expected;
    for (int k = 0; k < jobs; ++k) expected.insert("job-" + std::to_string(k));
    if (std::set<std::string>(done.begin(), done.end()) != expected)
        broken += (broken.empty() ? "" : "; ") + std::to_string(done.size()) + " jobs recorded, not jobs 0 to " +
                  std::to_string(jobs - 1);
    int recorded = 0;
    for (const auto& r : runners) recorded += r.recorded();
    if (recorded > jobs)  // a lost answer may hide a record (fewer), never invent one
        broken += (broken.empty() ? "" : "; ") + std::to_string(recorded) + " records said done for " +
                  std::to_string(jobs) + " jobs";
    for (auto& s : ss) s.close();
    vt.run_for(io, 5s);
    return broken;
}

int main(int argc, char** argv)
{
    std::uint64_t first = 1, seeds = 200, one = 0;
    int jobs = 20;
    bool trace = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        auto number = [&] { return i + 1 < argc ? std::stoull(argv[++i]) : 0ull; };
        if (a == "--seeds") seeds = number();
        else if (a == "--first") first = number();
        else if (a == "--jobs") jobs = static_cast<int>(number());
        else if (a == "--seed") one = number();
        else if (a == "--trace") trace = true;
        else {
            std::cerr << "usage: job_runner_simulation [--seeds N] [--first F] [--jobs N] [--seed S [--trace]]\n";
            return 2;
        }
    }
    if (one != 0) {
        const auto broken = run_seed(one, jobs, trace);
        std::cout << "seed " << one << ": " << (broken.empty() ? "every job recorded once" : broken) << '\n';
        return broken.empty() ? 0 : 1;
    }
    std::uint64_t failed = 0;
    for (auto seed = first; seed < first + seeds; ++seed)
        if (const auto broken = run_seed(seed, jobs, false); !broken.empty()) {
            ++failed;
            std::cout << "seed " << seed << ": " << broken << " (replay: job_runner_simulation --seed " << seed
                      << " --trace)\n";
        }
    std::cout << seeds << " seeds ran, " << failed << " failed\n";
    return failed == 0 ? 0 : 1;
}
