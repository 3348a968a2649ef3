// Seeded schedules of the composed recipes on the model ZooKeeper (issue 50): while_held and multi_lock
// over two paths while a third party deletes lock nodes (as `zklock break` does) and connections drop or
// are cut off; and drains of sessions that may be cut off from every server. The promises checked, at each
// step where they are made: no guard handed out lost (a multi_lock's included), while_held runs no step of
// its work with a guard whose loss is known, exclusion and tokens per path, and a drain that says success
// leaves nothing of its session on the leader. Seeds and replay as test_simulation_seeds.cpp says.
#include "sim_util.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <random>

BOOST_AUTO_TEST_SUITE(simulation_seed_tests)

using namespace sim_test;

namespace simulation_composed_test {

constexpr auto session_timeout = 2s;
constexpr auto acquire_timeout = 2s;
constexpr int workers = 3, rounds = 6;

std::string directory_of(const zklock::guard& g) { return g.node().substr(0, g.node().rfind('/')); }

/// while_held and multi_lock, with a third party deleting lock nodes.
seed_outcome run_composed(std::uint64_t seed, const fault_set& skip = {})
{
    virtual_time vt;
    asio::io_context io;
    seed_outcome out;
    auto o = seeded(seed, skip, out);
    o.drop_one_in = 60;
    o.cut_off_one_in = 300;
    holder_book book(out);
    book.watch_expiries(o);
    model zk(io, o);
    std::mt19937_64 choices(seed ^ 0x2545f4914f6cdd1dull);  // the workload's own draws
    const std::vector<std::string> paths = {"/sim/a", "/sim/b"};
    auto ss = sessions_on(zk, workers + 1, session_timeout);  // the last one is the third party's
    int finished = 0;
    struct round {
        bool both;        // a multi_lock over both paths, else a mutex and while_held
        std::size_t path;
        int hold_ms;
    };
    for (int i = 0; i < workers; ++i) {
        std::vector<round> plan;
        for (int r = 0; r < rounds; ++r) {
            const auto longest = choices() % 4 == 0 ? 1500u : 40u;
            plan.push_back({choices() % 3 == 0, choices() % paths.size(), static_cast<int>(choices() % longest)});
        }
        asio::co_spawn(io, [&, i, plan]() -> asio::awaitable<void> {
            const auto who = std::to_string(i);
            co_await ss[i].async_connect(tuple_awaitable);
            for (const auto& r : plan) {
                if (r.both) {
                    zklock::multi_lock both(zklock::mutex(ss[i], paths[0]), zklock::mutex(ss[i], paths[1]));
                    const auto asked = zklock::clock::now();
                    auto [ec, mg] = co_await both.acquire(acquire_timeout, tuple_awaitable);
                    check_deadline(out, asked, acquire_timeout, "a multi_lock's acquire");
                    if (ec) {
                        ++out.failures;
                        continue;
                    }
                    if (auto why = mg.lost()) out.violate("a multi_lock was handed out with a lock already lost: " + why.message());
                    for (const auto& g : mg.guards()) book.granted(directory_of(g), g, who + " (multi)", ss[i].id());
                    co_await pause_on_clock(std::chrono::milliseconds(r.hold_ms));
                    for (const auto& g : mg.guards()) book.released(directory_of(g), g);
                    co_await mg.release(tuple_awaitable);
                    continue;
                }
                const auto& path = paths[r.path];
                zklock::mutex mu(ss[i], path);
                const auto asked = zklock::clock::now();
                auto [ec, g] = co_await mu.acquire(acquire_timeout, tuple_awaitable);
                check_deadline(out, asked, acquire_timeout, "an acquire on " + path);
                if (ec) {
                    ++out.failures;
                    continue;
                }
                book.granted(path, g, who, ss[i].id());
                co_await pause_on_clock(std::chrono::milliseconds(r.hold_ms));
                // The work's first step, before any suspension, is where a service writes: it must not run
                // when the guard's loss is already known.
                const auto lost_at_call = g.lost();
                bool started = false;
                auto work = [&started]() -> asio::awaitable<void> {
                    started = true;
                    co_await pause_on_clock(5ms);
                };
                try {
                    co_await zklock::while_held(g, work());
                } catch (const boost::system::system_error&) {  // the loss: allowed, and said
                }
                if (lost_at_call && started)
                    out.violate("while_held ran its work with a guard already lost (" + lost_at_call.message() + ")");
                book.released(path, g);
                co_await g.release(tuple_awaitable);
            }
            ++finished;
        }, asio::detached);
    }
    // The third party: now and then, one node of a drawn path deleted, whoever holds or waits.
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        auto& s = ss.back();
        co_await s.async_connect(tuple_awaitable);
        while (finished != workers) {
            co_await pause_on_clock(std::chrono::milliseconds(choices() % 300));
            const auto& path = paths[choices() % paths.size()];
            auto [ec, names, st] = co_await s.async_get_children(path, tuple_awaitable);
            if (ec || names.empty() || finished == workers) continue;
            // In sequence order: a name's random part (its protected prefix) differs from run to run, and
            // the pick may not, or the seed would not replay.
            std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
                return a.substr(a.size() - 10) < b.substr(b.size() - 10);
            });
            const auto node = path + "/" + names[choices() % names.size()];
            book.deleting(node);
            out.note("third party deletes " + path + " " + node.substr(node.size() - 10));
            co_await s.async_remove(node, -1, tuple_awaitable);
        }
    }, asio::detached);
    finish_run(vt, io, zk, ss, finished, workers, paths, out);
    return out;
}

/// Sessions that drain holding a lock, some cut off from every server just before.
seed_outcome run_drain(std::uint64_t seed, const fault_set& skip = {})
{
    using namespace boost::asio::experimental::awaitable_operators;
    virtual_time vt;
    asio::io_context io;
    seed_outcome out;
    auto o = seeded(seed, skip, out);
    o.drop_one_in = 80;
    holder_book book(out);
    book.watch_expiries(o);
    model zk(io, o);
    std::mt19937_64 choices(seed ^ 0x9e3779b97f4a7c15ull);
    const std::vector<std::string> paths = {"/sim/a", "/sim/b"};
    auto ss = sessions_on(zk, workers, session_timeout);
    int finished = 0;
    for (int i = 0; i < workers; ++i) {
        const auto path = paths[choices() % paths.size()];
        const int before = static_cast<int>(choices() % 3);          // rounds before the drain
        const auto cut = std::chrono::milliseconds(choices() % 2 == 0 ? 1 + choices() % 1500 : 0);
        const auto grace = std::chrono::milliseconds(choices() % 800);
        asio::co_spawn(io, [&, i, path, before, cut, grace]() -> asio::awaitable<void> {
            const auto who = std::to_string(i);
            co_await ss[i].async_connect(tuple_awaitable);
            zklock::mutex mu(ss[i], path);
            for (int r = 0; r <= before; ++r) {
                const auto asked = zklock::clock::now();
                auto [ec, g] = co_await mu.acquire(acquire_timeout, tuple_awaitable);
                check_deadline(out, asked, acquire_timeout, "an acquire on " + path);
                if (ec) {
                    ++out.failures;
                    continue;
                }
                book.granted(path, g, who, ss[i].id());
                co_await pause_on_clock(std::chrono::milliseconds(choices() % 30));
                if (r < before) {
                    book.released(path, g);
                    co_await g.release(tuple_awaitable);
                    continue;
                }
                // The last one is held into the drain, and let go when the drain asks (or lost).
                const auto id = ss[i].id();
                if (cut.count() != 0) {
                    out.note("cut off " + who + " before its drain");
                    zk.cut_off(ss[i], cut);
                }
                auto holder = [&book, &path](zklock::guard& held) -> asio::awaitable<void> {
                    co_await (held.async_wait_revoked(tuple_awaitable) || held.async_wait_lost(tuple_awaitable));
                    book.released(path, held);
                    co_await held.release(tuple_awaitable);
                };
                auto [dec] = co_await (holder(g) && ss[i].async_drain(grace, tuple_awaitable));
                out.note("drain of " + who + ": " + (dec ? dec.message() : "success"));
                if (!dec && zk.ephemerals_of(id) != 0)
                    out.violate("a drain said success with " + std::to_string(zk.ephemerals_of(id)) +
                                " nodes of its session left on the leader");
            }
            ++finished;
        }, asio::detached);
    }
    finish_run(vt, io, zk, ss, finished, workers, paths, out);
    return out;
}

}  // namespace simulation_composed_test

BOOST_AUTO_TEST_CASE(the_composed_and_drain_workloads_replay_their_seeds)
{
    check_replays("composed", simulation_composed_test::run_composed);
    check_replays("drain", simulation_composed_test::run_drain);
}

BOOST_AUTO_TEST_CASE(while_held_and_multi_lock_keep_their_promises_on_every_seed)
{
    // Kept: with its fix reverted, seed 1 found while_held's work run with a lost guard (252b2ac), seeds 5
    // and 11 a multi_lock handed out with a lost lock (345ec87); seed 8, a waiter granted after a reconnect
    // on a node a third party had deleted (contender_machine_tests' reconnect rows).
    run_seeds("composed", simulation_composed_test::run_composed, simulation_composed_test::workers, {1, 5, 8, 11});
}

BOOST_AUTO_TEST_CASE(a_drain_says_success_only_when_nothing_is_left_on_every_seed)
{
    // Kept: seed 1 found a drain's unconfirmed success with its fix reverted (6278aef).
    run_seeds("drain", simulation_composed_test::run_drain, simulation_composed_test::workers, {1});
}

BOOST_AUTO_TEST_SUITE_END()
