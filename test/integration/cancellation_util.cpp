// The cancellation tables' shared coroutines (cancellation_util.hpp), compiled once.
#include "cancellation_util.hpp"

namespace test::cancel {

asio::awaitable<void> settle()
{
    for (int i = 0; i < 16; ++i) co_await yield();
}

asio::awaitable<void> check_at_once(const row& r, const outcome& o)
{
    co_await settle();
    switch (r.outcome) {
    case expect::aborted:
        BOOST_TEST(o.done, r << ": not completed at once");
        BOOST_TEST(o.ec == asio::error::operation_aborted, r << ": " << o.ec.message());
        break;
    case expect::ignored: BOOST_TEST(!o.done, r << ": completed at once (" << o.ec.message() << ")"); break;
    case expect::nothing:
        BOOST_TEST(o.done, r);
        BOOST_TEST(!o.ec, r << ": " << o.ec.message());
        break;
    }
}

asio::awaitable<void> check_real_result(const row& r, const outcome& o)
{
    BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return o.done; }), r << ": never completed");
    BOOST_TEST(!o.ec, r << ": " << o.ec.message());
}

asio::awaitable<void> disconnect(zklock::session& s, zklock::testing::server& srv)
{
    srv.freeze();
    zklock::testing::drop_connection(s);
    if (s.state() == zklock::session_state::connected)
        co_await s.async_wait_state(zklock::session_state::connected, use_awaitable);
    BOOST_REQUIRE(s.state() == zklock::session_state::connecting);
}

asio::awaitable<void> reconnect(zklock::session& s, zklock::testing::server& srv)
{
    srv.thaw();
    BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return s.state() == zklock::session_state::connected; }, 20s));
}

asio::awaitable<bool> works(zklock::session& s)
{
    auto [ec] = co_await s.async_sync("/", tuple_awaitable);
    BOOST_TEST(!ec, "the session does not work: " << ec.message());
    co_return !ec;
}

asio::awaitable<void> check_or_timer(const char* verb, std::function<asio::awaitable<void>()> op)
{
    using clock = std::chrono::steady_clock;
    struct race {
        bool done = false;
        std::size_t winner = 0;
        clock::time_point at;
    };
    auto st = std::make_shared<race>();
    auto ex = co_await asio::this_coro::executor;
    auto timer = std::make_shared<asio::steady_timer>(ex, 100ms);
    const auto start = clock::now();
    asio::co_spawn(
        ex,
        [st, timer, op]() -> asio::awaitable<void> {
            using namespace asio::experimental::awaitable_operators;
            auto r = co_await (op() || timer->async_wait(use_awaitable));
            st->winner = r.index();
            st->at = clock::now();
            st->done = true;
        },
        asio::detached);
    BOOST_REQUIRE_MESSAGE(co_await eventually([&]() -> asio::awaitable<bool> { co_return st->done; }, 5s),
                          verb << " || timer did not return");
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(st->at - start);
    BOOST_TEST(st->winner == 1u, verb);
    BOOST_TEST(took < 600ms, verb << " || timer returned after " << took.count() << " ms, not at the timer (100 ms)");
    BOOST_TEST_MESSAGE("measured: " << verb << " || timer (100 ms): returned after " << took.count() << " ms");
}

asio::awaitable<void> emit_at_stage(const row& r, zklock::session& s, zklock::testing::server& srv, probe& p,
                                    std::function<void()> start, std::function<asio::awaitable<void>()> until)
{
    if (r.at == stage::in_flight) srv.freeze();
    if (r.at == stage::disconnected) co_await disconnect(s, srv);
    if (r.at == stage::before_send) {
        asio::post(p.ioc, [&] {  // outside the session's strand: the operation's hop onto it is still queued
            start();
            p.emit(r.type);
        });
    } else {
        start();
        if (until) co_await until();
        if (r.at == stage::completed)
            BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return p.result->done; }));
        if (r.at == stage::queued) {
            co_await settle();
            BOOST_REQUIRE_MESSAGE(!p.result->done, r << ": not queued");
        }
        p.emit(r.type);
    }
    co_await check_at_once(r, *p.result);
    if (r.at == stage::in_flight) srv.thaw();
    if (r.at == stage::disconnected) co_await reconnect(s, srv);
    if (r.outcome == expect::ignored) co_await check_real_result(r, *p.result);
}

asio::awaitable<std::vector<std::size_t>> counts(zklock::session& s, const std::vector<std::string>& dirs)
{
    std::vector<std::size_t> out;
    for (const auto& d : dirs) out.push_back((co_await children(s, d)).size());
    co_return out;
}

}  // namespace test::cancel
