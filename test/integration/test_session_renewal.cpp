// Session renewal (session_config::on_expiry): the server expires a session (testing::kill_session), and
// a new one is opened under the same zklock::session. The holder is told session_expired and never holds
// again; waiters re-queue on the new session (renew_requeue) or fail (renew_fail_pending); fencing tokens
// keep growing; the state goes expired, then connected under a new id; nothing of the old session is left.
#include "test_util.hpp"

#include <zklock/semaphore.hpp>

BOOST_AUTO_TEST_SUITE(session_renewal_tests)

using namespace test;
using namespace boost::asio::experimental::awaitable_operators;
using zklock::expiry_policy;
using zklock::mutex;
using zklock::session;
using zklock::session_state;

namespace {

zklock::session_config renewing(expiry_policy p)
{
    auto cfg = config_for(shared_server().connect_string());
    cfg.on_expiry = p;
    return cfg;
}

/// Every state a session reports through async_wait_state, with its id at that moment.
struct state_log {
    std::vector<std::pair<session_state, std::int64_t>> seen;
    bool has(session_state st) const
    {
        return std::any_of(seen.begin(), seen.end(), [&](const auto& p) { return p.first == st; });
    }
};

asio::awaitable<void> record_states(session& s, state_log& log)
{
    auto st = s.state();
    for (;;) {
        auto [ec, next] = co_await s.async_wait_state(st, tuple_awaitable);
        if (ec) co_return;
        log.seen.emplace_back(next, s.id());
        if (is_final(next) && next != session_state::expired) co_return;
        st = next;
    }
}

/// Waits for `g`'s loss, at most `limit`: the reason, or operation_aborted-like empty on timeout.
asio::awaitable<zklock::error_code> loss_of(zklock::guard& g, std::chrono::seconds limit = 20s)
{
    asio::steady_timer t(co_await asio::this_coro::executor, limit);
    auto r = co_await (g.async_wait_lost(tuple_awaitable) || t.async_wait(tuple_awaitable));
    if (r.index() != 0) co_return zklock::error_code{};
    co_return std::get<1>(std::get<0>(r));
}

}  // namespace

// A holds the lock with a local waiter A2 behind it; B (another session) queues. A's session is expired.
// The holder hears session_expired; B gets the lock; A2 waits on, with a node of the new session, and
// gets it after B. At no time do two live holders overlap, and each grant's token is larger.
BOOST_AUTO_TEST_CASE(renew_requeue_tells_the_holder_and_keeps_the_waiters)
{
    asio::io_context ioc;
    session a(ioc, renewing(expiry_policy::renew_requeue));
    session b(ioc, config_for(shared_server().connect_string()));
    state_log states;
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await a.async_connect(use_awaitable);
        co_await b.async_connect(use_awaitable);
        asio::co_spawn(ioc, record_states(a, states), asio::detached);
        const auto path = unique_path("renew-requeue");
        mutex ma(a, path), mb(b, path);
        auto g1 = co_await ma.acquire(5s, use_awaitable);
        const auto old_node = g1.node();
        int inside = 1;  // live holders (a lost one stops counting when it is told)
        std::vector<std::string> order;
        std::vector<zklock::fencing_token> tokens{g1.token()};

        zklock::guard g2, gb;
        zklock::error_code ec2, ecb;
        bool a2_done = false, b_done = false;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            std::tie(ec2, g2) = co_await ma.acquire(60s, tuple_awaitable);
            a2_done = true;
            if (ec2) co_return;
            BOOST_TEST(++inside == 1);
            order.push_back("A2");
            tokens.push_back(g2.token());
        }, asio::detached);
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            std::tie(ecb, gb) = co_await mb.acquire(60s, tuple_awaitable);
            b_done = true;
            if (ecb) co_return;
            BOOST_TEST(++inside == 1);
            order.push_back("B");
            tokens.push_back(gb.token());
        }, asio::detached);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(b, path)).size() == 2u;  // A's node and B's
        }));
        BOOST_TEST(!a2_done);

        const auto old_id = a.id();
        // The server ends A's session at once (no partition first, so no warning could come before):
        // from here its holder holds nothing, and B may be granted before A hears of it.
        zklock::testing::kill_session(a);
        --inside;
        BOOST_TEST(co_await loss_of(g1) == zklock::error::session_expired);
        BOOST_TEST(g1.lost() == zklock::error::session_expired);

        // B gets the lock; A2 still waits, on a node of the new session behind B's.
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return b_done; }, 20s));
        BOOST_TEST(!ecb);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return a.state() == session_state::connected && (co_await children(b, path)).size() == 2u;
        }, 20s));
        BOOST_TEST(!a2_done);
        BOOST_TEST(a.id() != 0);
        BOOST_TEST(a.id() != old_id);
        BOOST_TEST(a.stats().renewals == 1u);
        const auto names = co_await children(b, path);
        BOOST_TEST((std::find(names.begin(), names.end(), old_node.substr(old_node.rfind('/') + 1)) == names.end()));

        // The old guard stays lost: a second hold on it is refused, its release reports the loss.
        auto [rec] = co_await g1.release(tuple_awaitable);
        BOOST_TEST(rec == zklock::error::session_expired);

        --inside;
        co_await gb.release(use_awaitable);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return a2_done; }, 20s));
        BOOST_TEST(!ec2);
        BOOST_TEST(g2.lost() == zklock::error_code{});
        --inside;
        co_await g2.release(use_awaitable);

        BOOST_TEST(order == (std::vector<std::string>{"B", "A2"}));
        BOOST_REQUIRE(tokens.size() == 3u);
        BOOST_TEST((tokens[0] < tokens[1]));
        BOOST_TEST((tokens[1] < tokens[2]));
        BOOST_TEST((co_await children(b, path)).empty());

        // The state went expired, then connected under the new id.
        auto expired_at = std::find_if(states.seen.begin(), states.seen.end(),
                                       [](const auto& p) { return p.first == session_state::expired; });
        BOOST_REQUIRE(expired_at != states.seen.end());
        auto connected_at = std::find_if(expired_at, states.seen.end(),
                                         [](const auto& p) { return p.first == session_state::connected; });
        BOOST_REQUIRE(connected_at != states.seen.end());
        BOOST_TEST(connected_at->second == a.id());

        // The same lock object goes on working on the new session.
        auto g3 = co_await ma.acquire(5s, use_awaitable);
        BOOST_TEST((tokens[2] < g3.token()));
        co_await g3.release(use_awaitable);
        co_await a.async_close(use_awaitable);
        co_await b.async_close(use_awaitable);
    }, 90s);
}

// renew_fail_pending: the holder is told, the waiter fails with session_expired, and a new acquire on
// the same lock object works on the new session.
BOOST_AUTO_TEST_CASE(renew_fail_pending_fails_the_waiters)
{
    asio::io_context ioc;
    session a(ioc, renewing(expiry_policy::renew_fail_pending));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await a.async_connect(use_awaitable);
        const auto path = unique_path("renew-fail");
        mutex m(a, path);
        auto g1 = co_await m.acquire(5s, use_awaitable);
        zklock::error_code ec2;
        bool done = false;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [ec, g] = co_await m.acquire(60s, tuple_awaitable);
            ec2 = ec;
            done = true;
        }, asio::detached);
        co_await yield();
        const auto old_id = a.id();
        zklock::testing::kill_session(a);
        BOOST_TEST(co_await loss_of(g1) == zklock::error::session_expired);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return done; }, 20s));
        BOOST_TEST(ec2 == zklock::error::session_expired);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return a.state() == session_state::connected;
        }, 20s));
        BOOST_TEST(a.id() != old_id);
        BOOST_TEST((co_await children(a, path)).empty());  // the old node went with the old session
        auto g3 = co_await m.acquire(5s, use_awaitable);
        BOOST_TEST((g1.token() < g3.token()));
        co_await g3.release(use_awaitable);
        auto [rec] = co_await g1.release(tuple_awaitable);
        BOOST_TEST(rec == zklock::error::session_expired);
        co_await a.async_close(use_awaitable);
    }, 60s);
}

// The semaphore: a permit's holder is told, a local waiter re-queues and gets a permit of the new session.
BOOST_AUTO_TEST_CASE(renew_requeue_semaphore)
{
    asio::io_context ioc;
    session a(ioc, renewing(expiry_policy::renew_requeue));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await a.async_connect(use_awaitable);
        const auto path = unique_path("renew-sem");
        zklock::semaphore sem(a, path, 1);
        auto g1 = co_await sem.acquire(5s, use_awaitable);
        zklock::guard g2;
        zklock::error_code ec2;
        bool done = false;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            std::tie(ec2, g2) = co_await sem.acquire(60s, tuple_awaitable);
            done = true;
        }, asio::detached);
        co_await yield();
        std::optional<zklock::error_code> revoke_wait;
        g1.async_wait_revoked([&](zklock::error_code e) { revoke_wait = e; });
        zklock::testing::kill_session(a);
        BOOST_TEST(co_await loss_of(g1) == zklock::error::session_expired);
        // Its node went with the old session: no revocation can reach it, and the wait for one ends.
        BOOST_TEST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return revoke_wait.has_value(); }));
        BOOST_TEST(*revoke_wait == asio::error::operation_aborted);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return done; }, 20s));
        BOOST_TEST(!ec2);
        BOOST_TEST(g2.lost() == zklock::error_code{});
        BOOST_TEST(g2.node() != g1.node());
        auto [rec] = co_await g1.release(tuple_awaitable);
        BOOST_TEST(rec == zklock::error::session_expired);
        co_await g2.release(use_awaitable);
        BOOST_TEST((co_await children(a, path + "/leases")).empty());
        co_await a.async_close(use_awaitable);
    }, 60s);
}

// A draining session is not renewed: its expiry ends it, as under the default policy.
BOOST_AUTO_TEST_CASE(a_draining_session_is_not_renewed)
{
    asio::io_context ioc;
    session a(ioc, renewing(expiry_policy::renew_requeue));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await a.async_connect(use_awaitable);
        const auto path = unique_path("renew-drain");
        mutex m(a, path);
        auto g = co_await m.acquire(5s, use_awaitable);
        zklock::error_code drained;
        bool done = false;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [ec] = co_await a.async_drain(60s, tuple_awaitable);
            drained = ec;
            done = true;
        }, asio::detached);
        co_await yield();
        zklock::testing::kill_session(a);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return done; }, 20s));
        BOOST_TEST(drained == zklock::error::session_expired);
        BOOST_TEST(a.state() == session_state::expired);
        BOOST_TEST(a.stats().renewals == 0u);
        BOOST_TEST(g.lost() == zklock::error::session_expired);
    }, 60s);
}

BOOST_AUTO_TEST_SUITE_END()  // session_renewal_tests
