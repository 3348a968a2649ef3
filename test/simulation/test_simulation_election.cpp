// Seeded schedules of the election on the model ZooKeeper (issue 50): three candidates campaign, proclaim a
// value and resign, round after round, on three servers with drops; a third party joins the path now and
// then as a Curator LeaderLatch would (an ephemeral sequential "_c_<uuid>-latch-" node) and asks the sitting
// leader to let go (a revocation request on its node); an observer follows the election throughout. The
// promises checked: one leader at a time, tokens that increase, no campaign granted beside a latch that
// joined while it waited (a latch would lead beside it), and an observer that reports no state that never
// existed (an id no participant has, a value its term never proclaimed, no value once its term proclaimed
// one). Seeds and replay as test_simulation_seeds.cpp says.
#include "sim_util.hpp"

#include <random>

BOOST_AUTO_TEST_SUITE(simulation_seed_tests)

using namespace sim_test;

namespace simulation_election_test {

constexpr auto session_timeout = 2s;
constexpr auto campaign_timeout = 2s;
constexpr int candidates = 3, rounds = 5;

std::string tail_of(const std::string& node) { return node.size() > 10 ? node.substr(node.size() - 10) : node; }

seed_outcome run_election(std::uint64_t seed, const fault_set& skip = {})
{
    virtual_time vt;
    asio::io_context io;
    seed_outcome out;
    auto o = seeded(seed, skip, out);
    o.drop_one_in = 60;
    holder_book book(out);
    book.watch_expiries(o);
    model zk(io, o);
    std::mt19937_64 choices(seed ^ 0xd1b54a32d192ed03ull);  // the workload's own draws
    const std::string path = "/sim/election";
    auto ss = sessions_on(zk, candidates + 2, session_timeout);  // the candidates', the third party's, the observer's
    auto& third = ss[candidates];
    auto& watcher = ss[candidates + 1];
    const std::set<std::string> ids = {"c0", "c1", "c2", "latch"};
    int finished = 0;
    const zklock::leadership* leader = nullptr;  // the sitting leader, as the candidates know it
    // A latch node that joined while the sitting leader's node existed: every campaign granted while it
    // stays was waiting behind that leader (or started later), and must see the latch.
    bool latch_armed = false;
    // Per term (its node): the values proclaimed (sent), and the workload event after which one was
    // confirmed; the observer's waits are numbered on the same count.
    struct term {
        std::set<std::string> sent;
        std::optional<std::uint64_t> confirmed;
    };
    std::map<std::string, term> terms;
    std::uint64_t events = 0;
    zklock::leader_info observed;  // what the observer reported last

    for (int i = 0; i < candidates; ++i) {
        asio::co_spawn(io, [&, i]() -> asio::awaitable<void> {
            const auto who = "c" + std::to_string(i);
            co_await ss[i].async_connect(tuple_awaitable);
            zklock::election e(ss[i], path, who);
            for (int r = 0, attempts = 0; r < rounds && attempts < 8 * rounds; ++attempts) {
                const auto asked = zklock::clock::now();
                auto [ec, l] = co_await e.campaign(campaign_timeout, tuple_awaitable);
                check_deadline(out, asked, campaign_timeout, "a campaign");
                if (ec) {
                    ++out.failures;
                    // Refused beside a latch: again once it may have left (not a round of its own).
                    if (ec == zklock::error::schema_mismatch) co_await pause_on_clock(std::chrono::milliseconds(20 + choices() % 80));
                    else ++r;
                    continue;
                }
                ++r;
                if (latch_armed)
                    out.violate("campaign of " + who + " granted beside a Curator LeaderLatch that joined while it waited: two leaders");
                book.granted(path, l, who, ss[i].id());
                leader = &l;
                const auto value = who + "." + std::to_string(r);
                auto& t = terms[l.node()];
                t.sent.insert(value);
                auto [pec] = co_await l.async_proclaim(value, tuple_awaitable);
                if (!pec && !t.confirmed) t.confirmed = ++events;
                co_await pause_on_clock(std::chrono::milliseconds(choices() % 4 == 0 ? choices() % 600 : choices() % 30));
                if (leader == &l) leader = nullptr;
                book.released(path, l);
                co_await l.resign(tuple_awaitable);
            }
            ++finished;
        }, asio::detached);
    }
    // The third party: joins as a LeaderLatch while a leader sits (and leaves after a while), or asks the
    // sitting leader, once the observer has reported it, to let go.
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        co_await third.async_connect(tuple_awaitable);
        while (finished != candidates) {
            co_await pause_on_clock(std::chrono::milliseconds(choices() % 400));
            if (!leader || leader->lost() || finished == candidates) continue;
            if (choices() % 3 == 0) {
                if (observed.node != leader->node()) continue;
                out.note("third party asks " + tail_of(leader->node()) + " to let go");
                co_await zklock::async_request_revoke(third, leader->node(), tuple_awaitable);
                continue;
            }
            const auto sitting = leader->node();
            auto [ec, node, st] = co_await third.async_create(path + "/_c_5d5b3ba5-7a3b-4b6e-a0c4-4e0f3f6a8f3e-latch-",
                                                          "latch", zklock::create_mode::ephemeral_sequential,
                                                          tuple_awaitable);
            if (ec) continue;  // its answer lost: the session's end, or the next one, takes it away
            latch_armed = zk.exists(sitting);
            out.note("a latch joins " + tail_of(node) + (latch_armed ? " beside the sitting leader" : " (the leader had gone)"));
            if (latch_armed) co_await pause_on_clock(std::chrono::milliseconds(choices() % 600));
            latch_armed = false;
            out.note("the latch leaves " + tail_of(node));
            co_await third.async_remove(node, -1, tuple_awaitable);
        }
    }, asio::detached);
    // The observer: every change it reports must be a state the election was in.
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        co_await watcher.async_connect(tuple_awaitable);
        while (finished != candidates) {
            const auto started = ++events;
            auto [ec, info] = co_await zklock::async_wait_leader_change(watcher, path, observed, tuple_awaitable);
            if (ec == zklock::error::session_closed || ec == zklock::error::session_expired) break;
            if (ec) {
                co_await pause_on_clock(10ms);
                continue;
            }
            out.note("observer: " + (info ? info.id + " at " + tail_of(info.node) + " value " + info.value.value_or("(none)") : "nobody"));
            if (info) {
                if (!ids.contains(info.id))
                    out.violate("the observer reported a leader with the id '" + info.id + "', which no participant has");
                const auto& t = terms[info.node];
                if (info.value && !t.sent.contains(*info.value))
                    out.violate("the observer reported the value '" + *info.value + "', which its term never proclaimed");
                if (!info.value && t.confirmed && *t.confirmed < started)
                    out.violate("the observer reported " + info.id + " with no value after its term had proclaimed one");
            }
            observed = info;
        }
    }, asio::detached);

    finish_run(vt, io, zk, ss, finished, candidates, {path}, out);
    return out;
}

}  // namespace simulation_election_test

BOOST_AUTO_TEST_CASE(the_election_workload_replays_its_seeds)
{
    check_replays("election", simulation_election_test::run_election);
}

BOOST_AUTO_TEST_CASE(the_election_keeps_its_promises_on_every_seed)
{
    // Kept: with its fix reverted, seed 1 found a campaign granted beside a latch (720a961), seed 3 a
    // revocation request reported as a leader with no id, seed 362 a leader reported with no value after
    // its term proclaimed one (e16b441).
    run_seeds("election", simulation_election_test::run_election, 2, {1, 3, 362});
}

BOOST_AUTO_TEST_SUITE_END()
