// The promises that set zklock apart, each forced into its worst case on a real server: a loss cuts the
// critical section short, tokens only grow, a node nobody holds is given up, one closing session never
// stalls the others.
#include "test_util.hpp"

#include <zklock/testing/faults.hpp>

#include <zklock/detail/sequence.hpp>

#include <algorithm>
#include <atomic>
#include <future>
#include <thread>
#include <optional>

BOOST_AUTO_TEST_SUITE(promise_tests)

using namespace test;
using namespace boost::asio::experimental::awaitable_operators;
using zklock::mutex;
using zklock::session;
using zklock::session_state;

namespace {

struct two_sessions {
    session a, b;
    explicit two_sessions(asio::io_context& ioc, const std::string& hosts = shared_server().connect_string())
        : a(ioc, config_for(hosts)), b(ioc, config_for(hosts))
    {
    }
    asio::awaitable<void> connect()
    {
        co_await a.async_connect(use_awaitable);
        co_await b.async_connect(use_awaitable);
    }
};

}  // namespace

// README: "Cut a critical section short with co_await (work() || g.async_wait_lost(asio::use_awaitable))".
BOOST_AUTO_TEST_CASE(the_readme_snippet_cuts_the_critical_section_short_on_loss)
{
    asio::io_context ioc;
    two_sessions ss(ioc);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("cut-short");
        mutex m(ss.a, path);
        auto g = co_await m.acquire(5s, use_awaitable);
        int steps = 0;
        bool work_cancelled = false;
        auto work = [&]() -> asio::awaitable<void> {
            try {
                for (; steps < 1000; ++steps) co_await pause(10ms);  // ten seconds of work, if not cut short
            } catch (const boost::system::system_error& e) {
                work_cancelled = e.code() == asio::error::operation_aborted;
                throw;
            }
        };
        // Someone deletes our node half a second in (an operator, or a session that took over).
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            co_await pause(500ms);
            co_await ss.b.async_remove(g.node(), -1, use_awaitable);
        }, asio::detached);
        const auto t0 = std::chrono::steady_clock::now();
        auto r = co_await (work() || g.async_wait_lost(asio::use_awaitable));
        const auto took = std::chrono::steady_clock::now() - t0;
        BOOST_REQUIRE_EQUAL(r.index(), 1u);
        BOOST_TEST(std::get<1>(r) == zklock::error::lock_node_deleted);
        BOOST_TEST(work_cancelled);
        BOOST_TEST(steps < 1000);
        BOOST_TEST((took < 5s));
        co_await g.release(tuple_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(a_cancelled_wait_for_loss_is_not_a_loss)
{
    asio::io_context ioc;
    two_sessions ss(ioc);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        mutex m(ss.a, unique_path("not-a-loss"));
        auto g = co_await m.acquire(5s, use_awaitable);
        // The work finishes first: || cancels the wait, which must not look like a loss.
        auto r = co_await (pause(50ms) || g.async_wait_lost(asio::use_awaitable));
        BOOST_TEST(r.index() == 0u);
        // Cancelled by a signal, with as_tuple: an error (operation_aborted), and no reason.
        asio::cancellation_signal sig;
        bool done = false;
        error_code ec, reason;
        g.async_wait_lost(asio::bind_cancellation_slot(sig.slot(), [&](error_code e, error_code why) {
            ec = e;
            reason = why;
            done = true;
        }));
        co_await pause(20ms);
        BOOST_TEST(!done);
        sig.emit(asio::cancellation_type::terminal);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return done; }));
        BOOST_TEST(ec == asio::error::operation_aborted);
        BOOST_TEST(!reason);
        BOOST_TEST(!g.lost());
        // Released first: the same, an error.
        auto pending = g.async_wait_lost(tuple_awaitable);
        co_await g.release(use_awaitable);
        auto [e2, why2] = co_await std::move(pending);
        BOOST_TEST(e2 == asio::error::operation_aborted);
        BOOST_TEST(!why2);
    });
}

// The node is deleted while we wait (an operator): the waiter, which watches its own node, queues again at
// once with a new node, and that create's answer is lost. The node found again by its uuid must carry its
// own creation zxid, not the deleted node's, and hold only after those ahead of it.
BOOST_AUTO_TEST_CASE(a_token_found_again_after_a_recreate_is_the_new_nodes)
{
    asio::io_context ioc;
    std::vector<std::unique_ptr<session>> ss;
    for (int i = 0; i < 4; ++i) ss.push_back(std::make_unique<session>(ioc, config_for(shared_server().connect_string())));
    run(ioc, [&]() -> asio::awaitable<void> {
        for (auto& s : ss) co_await s->async_connect(use_awaitable);
        auto& h = *ss[0];  // holds first
        auto& x = *ss[1];  // queues second, then gives up
        auto& w = *ss[2];  // queues third: the one whose node is deleted
        auto& y = *ss[3];  // queues after w's new node: holds after w
        const auto path = unique_path("recreate-token");
        mutex mh(h, path), mx(x, path), mw(w, path), my(y, path);
        auto gh = co_await mh.acquire(5s, use_awaitable);
        asio::cancellation_signal cancel_x;
        asio::co_spawn(ioc, mx.acquire(30s, asio::use_awaitable), asio::bind_cancellation_slot(cancel_x.slot(), asio::detached));
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return (co_await children(h, path)).size() == 2u; }));
        std::optional<zklock::guard> gw, gy;
        error_code w_error;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [ec, g] = co_await mw.acquire(30s, tuple_awaitable);
            if (ec) w_error = ec;
            else gw = std::move(g);
        }, asio::detached);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return (co_await children(h, path)).size() == 3u; }));
        const auto before = co_await children(h, path);
        // Delete w's node (the newest): w queues again, and the answer to its new create is lost.
        std::string w_node;
        for (const auto& n : before)
            if (w_node.empty() || zklock::detail::parse_sequence(n) > zklock::detail::parse_sequence(w_node)) w_node = n;
        const auto deleted_czxid = (co_await h.async_exists(path + "/" + w_node, use_awaitable))->czxid;
        zklock::testing::lose_next_answer(w, "create");
        co_await h.async_remove(path + "/" + w_node, -1, use_awaitable);
        std::string w_new;
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> {
            w_new.clear();
            for (const auto& n : co_await children(h, path))
                if (std::find(before.begin(), before.end(), n) == before.end()) w_new = n;
            co_return !w_new.empty() && w.state() == session_state::connected;
        }));
        const auto new_czxid = (co_await h.async_exists(path + "/" + w_new, use_awaitable))->czxid;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { gy = co_await my.acquire(30s, use_awaitable); }, asio::detached);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return (co_await children(h, path)).size() == 4u; }));
        cancel_x.emit(asio::cancellation_type::terminal);
        co_await gh.release(use_awaitable);
        const bool w_holds = co_await eventually([&]() -> asio::awaitable<bool> { co_return gw.has_value(); });
        BOOST_TEST(!w_error, w_error.message());
        BOOST_REQUIRE(w_holds);
        BOOST_TEST(!gy.has_value());  // behind w's new node
        BOOST_TEST(gw->token().zxid == new_czxid, "w's token " << gw->token().to_string() << ", its node's czxid "
                                                  << new_czxid << ", the deleted node's " << deleted_czxid);
        co_await gw->release(use_awaitable);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return gy.has_value(); }));
        BOOST_TEST((gw->token() < gy->token()));
        co_await gy->release(use_awaitable);
        BOOST_TEST((co_await children(h, path)).empty());
    });
}

// A token, a state and a watch's event print as they read in the docs (no server needed).
BOOST_AUTO_TEST_CASE(small_values_print_as_words)
{
    std::ostringstream os;
    const zklock::fencing_token t{.zxid = 4294967302, .local = 3};
    os << t << ' ' << session_state::auth_failed << ' ' << zklock::watch_event_type::children_changed;
    BOOST_TEST(os.str() == "4294967302.3 auth_failed children_changed");
    BOOST_TEST(to_string(t) == t.to_string());
    BOOST_TEST(to_string(zklock::watch_event_type::data_changed) == "data_changed");
}

BOOST_AUTO_TEST_CASE(tokens_grow_across_local_handoffs_sessions_and_reconnects)
{
    asio::io_context ioc;
    two_sessions ss(ioc);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("tokens-grow");
        std::vector<zklock::fencing_token> seen;
        int inside = 0, violations = 0, done = 0;
        auto worker = [&](session& s, int rounds, bool drop) -> asio::awaitable<void> {
            mutex m(s, path, {.local_handoff_limit = 2});
            for (int i = 0; i < rounds; ++i) {
                auto [ec, g] = co_await m.acquire(20s, tuple_awaitable);
                if (ec) continue;  // a reconnect may cost an acquire its node; tokens are what this test is about
                if (inside++ != 0) ++violations;
                seen.push_back(g.token());
                if (drop && i % 4 == 0) zklock::testing::drop_connection(s);  // a reconnect while holding
                co_await pause(1ms);
                --inside;
                co_await g.release(tuple_awaitable);
            }
            ++done;
        };
        for (int c = 0; c < 3; ++c) {
            asio::co_spawn(ioc, worker(ss.a, 12, c == 0), asio::detached);
            asio::co_spawn(ioc, worker(ss.b, 12, false), asio::detached);
        }
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return done == 6; }, 60s));
        BOOST_TEST(violations == 0);
        BOOST_TEST(seen.size() > 50u);
        int regressions = 0, local = 0;
        for (std::size_t i = 1; i < seen.size(); ++i) {
            if (!(seen[i - 1] < seen[i])) ++regressions;
            if (seen[i].local > 0) ++local;
        }
        BOOST_TEST(regressions == 0);
        BOOST_TEST(local > 0);  // local hand-offs happened, and were counted in
        BOOST_TEST((co_await children(ss.a, path)).empty());
    });
}

// The listing that makes us the head arrives together with a broken connection, so no waiter can be
// granted; the waiter then times out before the reconnect. The node must not stay, blocking everyone.
BOOST_AUTO_TEST_CASE(a_node_that_became_ours_while_disconnected_is_given_up_when_nobody_wants_it)
{
    zklock::testing::server srv;
    asio::io_context ioc;
    two_sessions ss(ioc, srv.connect_string());
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("disconnected-head");
        mutex m(ss.a, path);
        auto warm = co_await m.acquire(5s, use_awaitable);  // the parents exist now
        co_await warm.release(use_awaitable);
        bool frozen = false;
        zklock::testing::disconnect_before_next_answer(ss.a, "get_children", [&] {
            srv.freeze();  // the reconnect waits until the waiter has given up
            frozen = true;
        });
        auto [ec, g] = co_await m.acquire(300ms, tuple_awaitable);
        BOOST_TEST(ec == zklock::error::timeout);
        BOOST_REQUIRE(frozen);
        co_await pause(200ms);
        srv.thaw();
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return ss.a.state() == session_state::connected; }, 20s));
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return (co_await children(ss.b, path)).empty(); }),
                   "the node stayed, held by nobody");
        mutex theirs(ss.b, path);
        auto [ec2, g2] = co_await theirs.acquire(5s, tuple_awaitable);
        BOOST_TEST(!ec2, ec2.message());
    }, 60s);
}

// A session closing against a server that stopped answering waits up to 4.5 s in the C client; every
// other session must keep running meanwhile (their pings, answers and loss clocks depend on it).
BOOST_AUTO_TEST_CASE(closing_a_session_on_a_silent_server_stalls_no_other_session)
{
    zklock::testing::server silent;
    asio::io_context ioc;
    session closing(ioc, config_for(silent.connect_string()));
    session other(ioc, config_for(shared_server().connect_string()));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await closing.async_connect(use_awaitable);
        co_await other.async_connect(use_awaitable);
        silent.freeze();
        bool closed = false;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            co_await closing.async_close(use_awaitable);
            closed = true;
        }, asio::detached);
        // Meanwhile: requests on the other session, one after another; the longest one is the stall.
        std::chrono::steady_clock::duration longest{};
        int requests = 0;
        const auto until = std::chrono::steady_clock::now() + 2s;
        while (std::chrono::steady_clock::now() < until || !closed) {
            const auto t = std::chrono::steady_clock::now();
            co_await other.async_exists("/", use_awaitable);
            longest = std::max(longest, std::chrono::steady_clock::now() - t);
            ++requests;
            if (std::chrono::steady_clock::now() > until + 10s) break;
        }
        BOOST_TEST(closed);
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(longest).count();
        BOOST_TEST_MESSAGE("longest request of the other session while one closed: " << ms << " ms over " << requests);
        BOOST_TEST(ms < 300);  // the C client's close waits 1.5 s and more; a few ms on a quiet machine
        silent.thaw();
    }, 60s);
}

// Review 4 (issue 48.13): testing::kill_session held the C client's process-wide mutex for the whole kill,
// so every other session's pump of the process waited for it (up to its timeout against a silent
// server). Another session, on its own io_context and thread, must go on meanwhile.
BOOST_AUTO_TEST_CASE(killing_a_session_on_a_silent_server_stalls_no_other_session)
{
    zklock::testing::server silent;
    asio::io_context ioc, other_ioc;
    session victim(ioc, config_for(silent.connect_string()));
    session other(other_ioc, config_for(shared_server().connect_string()));
    run(ioc, [&]() -> asio::awaitable<void> { co_await victim.async_connect(use_awaitable); });
    std::atomic<bool> killed{false};
    std::promise<void> other_ready;
    std::chrono::steady_clock::duration longest{};
    int requests = 0;
    std::thread other_thread([&] {
        run(other_ioc, [&]() -> asio::awaitable<void> {
            co_await other.async_connect(use_awaitable);
            other_ready.set_value();
            while (!killed) {
                const auto t = std::chrono::steady_clock::now();
                co_await other.async_exists("/", use_awaitable);
                longest = std::max(longest, std::chrono::steady_clock::now() - t);
                ++requests;
            }
            co_await other.async_close(use_awaitable);
        });
    });
    other_ready.get_future().wait();
    silent.freeze();
    bool refused = false;  // the server is frozen: "no ZooKeeper server answered" after 2 s
    try {
        zklock::testing::kill_session(victim, 2s);  // on the victim's own (idle) thread, as documented
    } catch (const std::runtime_error&) {
        refused = true;
    }
    killed = true;
    other_thread.join();
    silent.thaw();
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(longest).count();
    BOOST_TEST_MESSAGE("longest request of the other session during the kill: " << ms << " ms over " << requests);
    BOOST_TEST(refused);
    BOOST_TEST(requests > 0);
    BOOST_TEST(ms < 300);  // the kill waits 2 s for the frozen server
}

BOOST_AUTO_TEST_SUITE_END()  // promise_tests
