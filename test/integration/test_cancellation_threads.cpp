// Cancellation across threads: an io_context on four threads, a session on its strand holding a lock, and
// coroutines on strands of their own that race guarded writes, revocation requests and participants
// listings against short timers with `||`. The signals are emitted on the
// callers' strands; the cancellations must hop onto the session's before they touch it. Run under
// ThreadSanitizer by scripts/test.sh (label threads).
#include "test_util.hpp"

#include <zklock/participants.hpp>
#include <zklock/revoke.hpp>

#include <random>

BOOST_AUTO_TEST_SUITE(cancellation_thread_tests)

using namespace test;
using namespace boost::asio::experimental::awaitable_operators;

namespace {

struct counts {
    std::atomic<int> won{0}, lost_race{0}, errors{0};
};

/// One caller: `iterations` times, one of the verbs against a timer of 0 to 10 ms.
asio::awaitable<void> caller(zklock::session& s, zklock::guard& g, std::string node, std::string path, int id,
                             int iterations, counts& c)
{
    auto strand = co_await asio::this_coro::executor;
    std::mt19937 rng(static_cast<unsigned>(id));
    auto tally = [&](auto res) {
        if (res.index() == 1) ++c.lost_race;
        else if (auto ec = std::get<0>(std::get<0>(res)); !ec) ++c.won;
        else if (ec != asio::error::operation_aborted) ++c.errors;
    };
    for (int k = 0; k < iterations; ++k) {
        asio::steady_timer t(strand, std::chrono::microseconds(std::uniform_int_distribution<int>(0, 10000)(rng)));
        switch ((k + id) % 3) {
        case 0: {
            const auto data = std::to_string(id) + "." + std::to_string(k);
            tally(co_await (g.async_guarded_set_data(node, data, -1, tuple_awaitable) || t.async_wait(tuple_awaitable)));
            break;
        }
        case 1:
            tally(co_await (zklock::async_request_revoke(s, g.node(), tuple_awaitable) || t.async_wait(tuple_awaitable)));
            break;
        default: tally(co_await (zklock::async_participants(s, path, tuple_awaitable) || t.async_wait(tuple_awaitable)));
        }
    }
}

}  // namespace

BOOST_AUTO_TEST_CASE(operations_cancelled_from_other_strands)
{
    threaded_sessions ts(1);
    auto& s = *ts.all[0];
    const auto path = unique_path("cancel-threads");
    std::string node;
    std::optional<zklock::guard> g;
    on(ts.strands[0], [&]() -> asio::awaitable<void> {
        co_await s.async_create("/test", "", zklock::create_mode::persistent, tuple_awaitable);
        node = unique_path("cancel-threads-data");
        co_await s.async_create(node, "", zklock::create_mode::persistent, use_awaitable);
        zklock::mutex m(s, path);
        g = co_await m.acquire(5s, use_awaitable);
    });
    counts c;
    std::vector<std::future<void>> callers;
    for (int id = 0; id < 4; ++id)
        callers.push_back(asio::co_spawn(asio::make_strand(ts.ioc), caller(s, *g, node, path, id, 150, c), asio::use_future));
    for (auto& f : callers) f.get();
    BOOST_TEST(c.errors.load() == 0);
    BOOST_TEST_MESSAGE("completed " << c.won.load() << ", cancelled by the timer " << c.lost_race.load());
    BOOST_TEST(c.won.load() + c.lost_race.load() == 4 * 150);
    on(ts.strands[0], [&]() -> asio::awaitable<void> {
        BOOST_TEST(!g->lost());
        auto [ec] = co_await g->async_guarded_set_data(node, "last", -1, tuple_awaitable);
        BOOST_TEST(!ec, ec.message());
        co_await g->release(use_awaitable);
        g.reset();
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return (co_await children(s, path)).empty(); }));
        co_await s.async_close(use_awaitable);
    });
    ts.all.clear();
}

BOOST_AUTO_TEST_SUITE_END()  // cancellation_thread_tests
