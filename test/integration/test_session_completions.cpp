// How the session's operations complete, against a real ZooKeeper started by the test itself: cancelled
// (by a signal, with its answer held back so the outcome is known, and by ||), failed by a close, and ten
// thousand in flight at once without a thread.
#include "session_util.hpp"

#include <zklock/testing/faults.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <algorithm>
#include <optional>

BOOST_AUTO_TEST_SUITE(session_completion_tests)

using namespace test;
using namespace boost::asio::experimental::awaitable_operators;
using zklock::create_mode;
using zklock::session;

BOOST_AUTO_TEST_SUITE(session_completions)

BOOST_AUTO_TEST_CASE(a_cancelled_operation_completes_at_once)
{
    asio::io_context ioc;
    session s(ioc, config_for(shared_server().connect_string()));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await connect(s);
        // With a cancellation signal, emitted once the request has left. Its answer is lost on the way (the
        // connection drops), so nothing but the cancellation can complete it before the session notices.
        asio::cancellation_signal sig;
        std::optional<error_code> got;
        zklock::testing::lose_next_answer(s, "get_children");
        s.async_get_children("/", asio::bind_cancellation_slot(sig.slot(), [&](error_code ec, std::vector<std::string>, zklock::stat) {
            got = ec;
        }));
        sig.emit(asio::cancellation_type::terminal);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return got.has_value(); }));
        BOOST_TEST((got == error_code(asio::error::operation_aborted)), "completed with " << got.value_or(error_code{}).message());
        // The session reconnects by itself and goes on.
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            auto [eec, st] = co_await s.async_exists("/", tuple_awaitable);
            co_return !eec;
        }));

        // With ||: the watch wait loses to a timer, is cancelled, and the watch stays usable.
        const auto base = unique_path("cancel");
        co_await make_parent(s, base);
        zklock::watch w;
        co_await s.async_get_data(base, w, use_awaitable);
        asio::steady_timer t(co_await asio::this_coro::executor, 50ms);
        auto r = co_await (w.async_wait(use_awaitable) || t.async_wait(use_awaitable));
        BOOST_TEST(r.index() == 1u);
        BOOST_TEST(w.armed());
        co_await s.async_set_data(base, "x", -1, use_awaitable);
        auto [wec, ev] = co_await w.async_wait(tuple_awaitable);
        BOOST_TEST(!wec);
    });
}

// The fault injection keeps TCP's order: an answer lost to a broken connection takes every answer behind it
// on that connection with it (a real client never reads answers past a break), though they may have been
// read together. A recipe must never see a later request answered while an earlier one's answer was lost:
// the semaphore's lease run, which pipelines a create and a listing, would take its own lost node for
// another holder's and wait behind it for the session's life.
BOOST_AUTO_TEST_CASE(an_answer_lost_to_a_broken_connection_takes_the_answers_behind_it)
{
    asio::io_context ioc;
    session s(ioc, config_for(shared_server().connect_string()));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await connect(s);
        const auto base = unique_path("lost-behind");
        co_await make_parent(s, base);
        for (const bool applied : {true, false}) {
            BOOST_TEST_CONTEXT((applied ? "lost once applied" : "delivered once noticed"))
            {
                const auto node = base + (applied ? "/applied" : "/late");
                if (applied) zklock::testing::lose_next_applied_answer(s, "create");
                else zklock::testing::disconnect_before_next_answer(s, "create");
                std::vector<std::string> order;
                std::optional<error_code> created, listed, looked;
                // One turn: the three leave together and their answers come back together.
                s.async_create(node, "", create_mode::persistent, [&](error_code ec, std::string, zklock::stat) {
                    created = ec;
                    order.push_back("create");
                });
                s.async_get_children(base, [&](error_code ec, std::vector<std::string>, zklock::stat) {
                    listed = ec;
                    order.push_back("list");
                });
                s.async_exists(base, [&](error_code ec, std::optional<zklock::stat>) {
                    looked = ec;
                    order.push_back("exists");
                });
                BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return order.size() == 3; }));
                BOOST_TEST(order == (std::vector<std::string>{"create", "list", "exists"}), boost::test_tools::per_element());
                if (applied) BOOST_TEST(*created == zklock::zk_errc::connection_loss, created->message());
                else BOOST_TEST(!*created, created->message());  // delivered, once the break was noticed
                BOOST_TEST(*listed == zklock::zk_errc::connection_loss, listed->message());
                BOOST_TEST(*looked == zklock::zk_errc::connection_loss, looked->message());
                BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
                    co_return s.state() == zklock::session_state::connected;
                }));
                BOOST_TEST((co_await s.async_exists(node, use_awaitable)).has_value());  // the create was applied
            }
        }
    });
}

// A request made right after the connection broke meets a socket the C client has not yet seen closed: its
// send fails and the client closes the connection silently (pump.cpp, notice_silent_close). The requests out
// on it fail with connection_loss in the order they were sent, as after any other break.
BOOST_AUTO_TEST_CASE(a_silent_close_fails_the_requests_out_in_the_order_they_were_sent)
{
    asio::io_context ioc;
    session s(ioc, config_for(shared_server().connect_string()));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await connect(s);
        std::vector<int> order;
        std::vector<error_code> codes(8);
        asio::post(ioc, [&] {  // one turn: the requests leave, the connection breaks, one more is made
            for (int i = 0; i < 7; ++i)
                s.async_exists("/", [&, i](error_code ec, std::optional<zklock::stat>) {
                    codes[i] = ec;
                    order.push_back(i);
                });
            zklock::testing::drop_connection(s);
            s.async_exists("/", [&](error_code ec, std::optional<zklock::stat>) {
                codes[7] = ec;
                order.push_back(7);
            });
        });
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return order.size() == 8; }));
        std::vector<int> failed;
        for (int i : order)
            if (codes[i] == zklock::zk_errc::connection_loss) failed.push_back(i);
        BOOST_TEST(failed.size() >= 2u);  // the break took some with it
        BOOST_TEST(std::is_sorted(failed.begin(), failed.end()), "failed in the order " << [&] {
            std::string o;
            for (int i : failed) o += std::to_string(i) + " ";
            return o;
        }());
        BOOST_TEST(std::is_sorted(order.begin(), order.end()));
    });
}

BOOST_AUTO_TEST_CASE(closing_fails_every_pending_operation_clearly)
{
    asio::io_context ioc;
    session s(ioc, config_for(shared_server().connect_string()));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await connect(s);
        int closed = 0, answered = 0, other = 0;
        for (int i = 0; i < 100; ++i)
            s.async_exists("/", [&](error_code ec, std::optional<zklock::stat>) {
                if (ec == zklock::error::session_closed) ++closed;
                else if (!ec) ++answered;
                else ++other;
            });
        s.close();
        co_await s.async_close(use_awaitable);
        // Every one completes (posted, each on its own), and each with its answer or session_closed.
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return closed + answered + other == 100; }));
        BOOST_TEST(closed + answered == 100);
        BOOST_TEST(closed > 0);
        BOOST_TEST(other == 0);
        auto [ec, d, st] = co_await s.async_get_data("/", tuple_awaitable);
        BOOST_TEST(ec == zklock::error::session_closed);
        BOOST_TEST(ec.message().find("closed") != std::string::npos);
    });
}

BOOST_AUTO_TEST_CASE(ten_thousand_operations_in_flight_need_no_thread)
{
    asio::io_context ioc;
    session s(ioc, config_for(shared_server().connect_string()));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await connect(s);
        const auto base = unique_path("flood");
        co_await make_parent(s, base);
        const int threads_before = thread_count();
        int done = 0, failed = 0, max_threads = 0;
        // 100 coroutines, each with 100 requests in flight at once.
        for (int c = 0; c < 100; ++c)
            asio::co_spawn(
                ioc,
                [&, c]() -> asio::awaitable<void> {
                    for (int i = 0; i < 100; ++i)
                        s.async_create(base + "/n-" + std::to_string(c) + "-" + std::to_string(i), "",
                                       create_mode::ephemeral, [&](error_code ec, std::string, zklock::stat) {
                                           ++done;
                                           if (ec) ++failed;
                                           max_threads = std::max(max_threads, thread_count());
                                       });
                    co_return;
                },
                asio::detached);
        bool all = co_await eventually([&]() -> asio::awaitable<bool> { co_return done == 10000; }, 60s);
        BOOST_TEST(all, done << " of 10000 completed");
        BOOST_TEST(failed == 0);
        BOOST_TEST(max_threads <= threads_before, "threads grew from " << threads_before << " to " << max_threads);
        auto names = co_await children(s, base);
        BOOST_TEST(names.size() == 10000u);
    }, 120s);
}

// Deletes made one after another in one turn go as one multi (one transaction); a failed multi sends each
// again alone, so every delete still gets its own answer; and a request made after them in the same turn
// still reaches the server after them.
BOOST_AUTO_TEST_CASE(deletes_of_one_turn_are_one_request_and_each_gets_its_own_answer)
{
    asio::io_context ioc;
    session s(ioc, config_for(shared_server().connect_string()));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await connect(s);
        const auto base = unique_path("deletes");
        co_await make_parent(s, base);
        auto make = [&](int n) -> asio::awaitable<void> {
            for (int i = 0; i < n; ++i) {
                auto [ec, p, st] = co_await s.async_create(base + "/n" + std::to_string(i), "", create_mode::persistent,
                                                           tuple_awaitable);
                BOOST_TEST(!ec);
            }
        };
        std::vector<std::optional<error_code>> answers;
        // Plain callbacks: no cancellation slot, so the deletes may wait for the end of the turn.
        auto remove_all = [&](std::vector<std::string> names) {
            answers.assign(names.size(), std::nullopt);
            for (std::size_t i = 0; i < names.size(); ++i)
                s.async_remove(base + "/" + names[i], -1, [&answers, i](error_code ec) { answers[i] = ec; });
        };
        auto all_answered = [&]() -> asio::awaitable<bool> {
            co_return std::all_of(answers.begin(), answers.end(), [](const auto& a) { return a.has_value(); });
        };

        co_await make(5);
        auto before = s.stats().requests;
        remove_all({"n0", "n1", "n2", "n3", "n4"});
        BOOST_TEST(co_await eventually(all_answered, 10s));
        BOOST_TEST(s.stats().requests - before == 1u);  // one multi
        for (const auto& a : answers) BOOST_TEST(!*a);
        const auto none_left = co_await children(s, base);
        BOOST_TEST(none_left.empty());

        // One of them has nothing to delete: the multi fails as a whole, and each is sent again alone.
        co_await make(3);
        remove_all({"n0", "missing", "n2"});
        BOOST_TEST(co_await eventually(all_answered, 10s));
        BOOST_TEST(!*answers[0]);
        BOOST_TEST(*answers[1] == zklock::zk_errc::no_node);
        BOOST_TEST(!*answers[2]);
        const auto left = co_await children(s, base);  // (GCC 12: no braced temporary inside a co_await expression)
        BOOST_TEST(left.size() == 1u);
        BOOST_TEST(left.front() == "n1");

        // A create after a delete in the same turn: the delete is sent first, so the create finds no node.
        std::optional<error_code> created;
        remove_all({"n1"});
        s.async_create(base + "/n1", "again", create_mode::persistent,
                       [&](error_code ec, std::string, zklock::stat) { created = ec; });
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return created && answers[0]; }, 10s));
        BOOST_TEST(!*answers[0]);
        BOOST_TEST(!*created);
        auto [ec, data, st] = co_await s.async_get_data(base + "/n1", tuple_awaitable);
        BOOST_TEST(data == "again");
    });
}

// Deletes made in later turns while earlier ones are out wait for their answer and then go together: a
// burst of releases costs the server a transaction per round trip, not one per lock. Each still gets its
// own answer. The server is frozen meanwhile, so that the first delete is surely still out.
BOOST_AUTO_TEST_CASE(deletes_made_while_others_are_out_go_together_when_those_are_answered)
{
    asio::io_context ioc;
    session s(ioc, config_for(shared_server().connect_string()));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await connect(s);
        const auto base = unique_path("deletes-out");
        co_await make_parent(s, base);
        constexpr int n = 10;
        for (int i = 0; i < n; ++i) {
            auto [ec, p, st] = co_await s.async_create(base + "/n" + std::to_string(i), "", create_mode::persistent,
                                                       tuple_awaitable);
            BOOST_TEST(!ec);
        }
        std::vector<std::optional<error_code>> answers(n);
        const auto before = s.stats().requests;
        shared_server().freeze();
        for (int i = 0; i < n; ++i) {  // one delete per turn of the loop
            s.async_remove(base + "/n" + std::to_string(i), -1, [&answers, i](error_code ec) { answers[i] = ec; });
            co_await asio::post(ioc, asio::use_awaitable);
        }
        shared_server().thaw();
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return std::all_of(answers.begin(), answers.end(), [](const auto& a) { return a.has_value(); });
        }, 20s));
        for (const auto& a : answers) BOOST_TEST((a && !*a));
        // The first alone, the nine made while it was out in one multi.
        BOOST_TEST(s.stats().requests - before == 2u);
        const auto left = co_await children(s, base);
        BOOST_TEST(left.empty());
    });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // session_completion_tests
