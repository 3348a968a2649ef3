// Leader election on a real ZooKeeper: one leader at a time among five candidates (from their own logs,
// with their terms' tokens), resign hands over at once (and ignores total cancellation, which it cannot
// honour), a timeout or a cancellation leaves no node, a
// deposed leader is told and cannot proclaim, observers follow every change in order and name the same
// leader as the candidates, and bad ids and mixed directories are refused.
#include "test_util.hpp"

#include <zklock/election.hpp>
#include <zklock/participants.hpp>
#include <zklock/testing/faults.hpp>
#include <zklock/testing/server.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>

BOOST_AUTO_TEST_SUITE(election_tests)

using namespace test;
using zklock::election;
using zklock::leader_info;
using zklock::leadership;
using namespace boost::asio::experimental::awaitable_operators;

namespace {

std::string show(const leader_info& l)
{
    if (!l) return "nobody";
    return l.id + " (" + l.token.to_string() + ")" + (l.value ? " value " + *l.value : "");
}

asio::awaitable<leader_info> leader_of(zklock::session& s, const std::string& path)
{
    auto [ec, l] = co_await zklock::async_leader(s, path, tuple_awaitable);
    BOOST_TEST_REQUIRE(!ec, ec.message());
    co_return l;
}

}  // namespace

// Five candidates, three terms each. Each leader checks from its own log that nobody else leads (a count
// of leaders on this one thread), that its term's token is greater than every earlier term's, and that
// an observer in another session names it, with its token.
BOOST_AUTO_TEST_CASE(one_leader_at_a_time_among_five_candidates)
{
    asio::io_context ioc;
    sessions ss(ioc, 6);
    const auto path = unique_path("election");
    int leading = 0, most = 0, terms = 0;
    zklock::fencing_token last{};
    std::vector<std::string> log;
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        auto candidate = [&](std::size_t i) -> asio::awaitable<void> {
            election e(ss[i], path, "node-" + std::to_string(i));
            for (int t = 0; t < 3; ++t) {
                auto l = co_await e.campaign(30s, use_awaitable);
                most = std::max(most, ++leading);
                BOOST_TEST((l.token() > last), "term " << l.token().to_string() << " after " << last.to_string());
                last = l.token();
                log.push_back(e.id() + " " + l.token().to_string());
                const auto seen = co_await leader_of(ss[5], path);
                BOOST_TEST(seen.id == e.id());
                BOOST_TEST((seen.token == l.token()), show(seen) << " while " << e.id() << " leads in " << l.token().to_string());
                BOOST_TEST(seen.node == l.node());
                co_await l.async_proclaim("term " + std::to_string(t), use_awaitable);
                co_await pause(5ms);
                BOOST_TEST(!l.lost(), l.lost().message());
                --leading;
                ++terms;
                co_await l.resign(use_awaitable);
            }
        };
        using op = decltype(asio::co_spawn(ioc, candidate(0), asio::deferred));
        std::vector<op> all;
        for (std::size_t i = 0; i < 5; ++i) all.push_back(asio::co_spawn(ioc, candidate(i), asio::deferred));
        auto [order, e0, e1, e2, e3, e4] =
            co_await asio::experimental::make_parallel_group(std::move(all[0]), std::move(all[1]), std::move(all[2]),
                                                             std::move(all[3]), std::move(all[4]))
                .async_wait(asio::experimental::wait_for_all(), use_awaitable);
        for (auto* e : {&e0, &e1, &e2, &e3, &e4})
            if (*e) std::rethrow_exception(*e);
        BOOST_TEST((co_await children(ss[5], path)).empty(), "every candidate's node is gone");
        BOOST_TEST(!(co_await leader_of(ss[5], path)));
    });
    BOOST_TEST(terms == 15);
    BOOST_TEST(most == 1, "leaders at once: " << most);
    BOOST_TEST_MESSAGE("measured: 15 terms of 5 candidates, at most " << most << " leader at once");
}

// Resign hands over at once: the next candidate leads one round trip later, and an observer that knew
// the first leader is told of the second.
BOOST_AUTO_TEST_CASE(resign_hands_over_at_once)
{
    asio::io_context ioc;
    sessions ss(ioc, 3);
    const auto path = unique_path("election-resign");
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        election a(ss[0], path, "a"), b(ss[1], path, "b");
        auto la = co_await a.campaign(5s, use_awaitable);
        std::optional<leadership> lb;
        std::chrono::steady_clock::time_point led_at;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            lb = co_await b.campaign(30s, use_awaitable);
            led_at = std::chrono::steady_clock::now();
        }, asio::detached);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return (co_await children(ss[2], path)).size() == 2u; }));
        const auto known = co_await leader_of(ss[2], path);
        BOOST_TEST(known.id == "a");
        leader_info next;
        bool observed = false;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            next = co_await zklock::async_wait_leader_change(ss[2], path, known, use_awaitable);
            observed = true;
        }, asio::detached);
        co_await pause(50ms);  // (only so that the observer's watch is set: it must not change what it reports)
        const auto resigned_at = std::chrono::steady_clock::now();
        co_await la.resign(use_awaitable);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return lb.has_value() && observed; }));
        const auto handover = std::chrono::duration_cast<std::chrono::microseconds>(led_at - resigned_at);
        BOOST_TEST(next.id == "b", show(next));
        BOOST_TEST((next.token == lb->token()));
        BOOST_TEST((next.token > known.token));
        BOOST_TEST_MESSAGE("measured: hand-over after resign " << static_cast<double>(handover.count()) / 1000.0 << " ms");
        co_await lb->resign(use_awaitable);
    });
}

// An observer waits a lost connection out, as async_leader's documentation says: the answer to its first
// read (the sync) is lost with the connection, and it reports the leader once the session is connected
// again, not connection_loss.
BOOST_AUTO_TEST_CASE(an_observer_waits_out_a_lost_connection)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    const auto path = unique_path("election-observer-loss");
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        election a(ss[0], path, "a");
        auto la = co_await a.campaign(5s, use_awaitable);
        const auto lost_before = ss[1].stats().requests_by_kind["sync"].errors["connection_loss"];
        zklock::testing::lose_next_answer(ss[1], "sync");
        auto [ec, l] = co_await zklock::async_leader(ss[1], path, tuple_awaitable);
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST(l.id == "a", show(l));
        BOOST_TEST((l.token == la.token()));
        BOOST_TEST(ss[1].stats().requests_by_kind["sync"].errors["connection_loss"] == lost_before + 1);  // it was lost
        BOOST_TEST(ss[1].stats().connections >= 2u);
        co_await la.resign(use_awaitable);
    });
}

// A campaign that times out or is cancelled (each type) completes with its error and leaves no node.
BOOST_AUTO_TEST_CASE(a_timeout_or_a_cancellation_leaves_no_node)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    const auto path = unique_path("election-giveup");
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        election a(ss[0], path, "a"), b(ss[1], path, "b");
        auto la = co_await a.campaign(5s, use_awaitable);
        auto [ec, lb] = co_await b.campaign(300ms, tuple_awaitable);
        BOOST_TEST(ec == zklock::error::timeout, ec.message());
        BOOST_TEST(!lb);
        for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial, asio::cancellation_type::total}) {
            asio::cancellation_signal sig;
            std::optional<boost::system::error_code> got;
            b.campaign(30s, asio::bind_cancellation_slot(sig.slot(), [&](boost::system::error_code e, leadership) { got = e; }));
            BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return (co_await children(ss[0], path)).size() == 2u; }));
            sig.emit(type);
            BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return got.has_value(); }));
            BOOST_TEST(*got == asio::error::operation_aborted, got->message());
            BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return (co_await children(ss[0], path)).size() == 1u; }),
                       "the cancelled candidate's node is deleted");
        }
        BOOST_TEST((co_await leader_of(ss[1], path)).id == "a");
        co_await la.resign(use_awaitable);
        BOOST_TEST((co_await children(ss[0], path)).empty());
    });
}

// A resignation's cancellation: terminal and partial complete it at once with operation_aborted, total is
// ignored (it cannot be undone) and it completes with its real result; the term ends either way, and the
// next candidate leads.
BOOST_AUTO_TEST_CASE(a_resignation_honours_terminal_and_partial_and_ignores_total)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    const auto path = unique_path("election-resign-cancel");
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        election a(ss[0], path, "a"), b(ss[1], path, "b");
        for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial, asio::cancellation_type::total}) {
            auto la = co_await a.campaign(5s, use_awaitable);
            std::optional<boost::system::error_code> next_led;
            b.campaign(5s, [&](boost::system::error_code e, leadership l) {
                next_led = e;
                if (!e) l.resign(asio::detached);
            });
            BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return (co_await children(ss[0], path)).size() == 2u; }));
            asio::cancellation_signal sig;
            std::optional<boost::system::error_code> got;
            // On the session's executor the delete is sent at once; its answer cannot come before the signal.
            la.resign(asio::bind_cancellation_slot(sig.slot(), [&](boost::system::error_code e) { got = e; }));
            sig.emit(type);
            BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return got.has_value(); }));
            if (type == asio::cancellation_type::total) BOOST_TEST(!*got, "total ignored: " << got->message());
            else BOOST_TEST(*got == asio::error::operation_aborted, got->message());
            BOOST_TEST(!la, "the leadership is empty once the resignation is initiated");
            BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return next_led.has_value(); }));
            BOOST_TEST(!*next_led, "the next candidate leads: " << next_led->message());
            BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return (co_await children(ss[0], path)).empty(); }),
                       "no node is left behind");
        }
    });
}

// The observers' cancellation: any type completes at once with operation_aborted, whatever they wait for.
BOOST_AUTO_TEST_CASE(an_observer_is_cancelled_by_any_type)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    const auto path = unique_path("election-observe-cancel");
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial, asio::cancellation_type::total}) {
            asio::cancellation_signal sig;
            std::optional<boost::system::error_code> got;
            // Nobody leads, as it knows: it waits for the directory's creation.
            zklock::async_wait_leader_change(ss[0], path, leader_info{},
                asio::bind_cancellation_slot(sig.slot(), [&](boost::system::error_code e, leader_info) { got = e; }));
            co_await pause(50ms);
            BOOST_TEST(!got.has_value(), "it waits");
            sig.emit(type);
            BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return got.has_value(); }));
            BOOST_TEST(*got == asio::error::operation_aborted, got->message());
            // And a read cancelled at once.
            asio::cancellation_signal sig2;
            std::optional<boost::system::error_code> got2;
            zklock::async_leader(ss[0], path, asio::bind_cancellation_slot(sig2.slot(), [&](boost::system::error_code e, leader_info) { got2 = e; }));
            sig2.emit(type);
            BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return got2.has_value(); }));
            BOOST_TEST(*got2 == asio::error::operation_aborted, got2->message());
        }
        // `op || timer` returns at the timer.
        asio::steady_timer t(ioc, 100ms);
        const leader_info nobody;  // named: GCC 12 destroys a temporary inside a co_await expression twice
        auto r = co_await (zklock::async_wait_leader_change(ss[0], path, nobody, use_awaitable) || t.async_wait(use_awaitable));
        BOOST_TEST(r.index() == 1u);
    });
}

// An observer follows every change in order: a leader, its proclaimed value, the next leader, nobody.
BOOST_AUTO_TEST_CASE(an_observer_follows_every_change_in_order)
{
    asio::io_context ioc;
    sessions ss(ioc, 3);
    const auto path = unique_path("election-follow");
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        std::vector<leader_info> seen;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            leader_info l;
            for (;;) {
                auto [ec, next] = co_await zklock::async_wait_leader_change(ss[2], path, l, tuple_awaitable);
                if (ec) co_return;
                BOOST_TEST((next != l));
                seen.push_back(l = next);
            }
        }, asio::detached);
        auto seen_n = [&](std::size_t n) {
            return eventually([&, n]() -> asio::awaitable<bool> { co_return seen.size() >= n; });
        };
        election a(ss[0], path, "a"), b(ss[1], path, "b");
        auto la = co_await a.campaign(5s, use_awaitable);
        BOOST_REQUIRE(co_await seen_n(1));
        co_await la.async_proclaim("v1", use_awaitable);
        BOOST_REQUIRE(co_await seen_n(2));
        std::optional<leadership> lb;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { lb = co_await b.campaign(30s, use_awaitable); }, asio::detached);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return (co_await children(ss[2], path)).size() == 2u; }));
        co_await pause(50ms);
        BOOST_TEST(seen.size() == 2u, "a candidate queuing behind the leader is no change");
        co_await la.resign(use_awaitable);
        BOOST_REQUIRE(co_await seen_n(3));
        // The observer may hear of b's term before b's own campaign completes.
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return lb.has_value(); }));
        co_await lb->resign(use_awaitable);
        BOOST_REQUIRE(co_await seen_n(4));
        BOOST_REQUIRE(seen.size() == 4u);
        BOOST_TEST(seen[0].id == "a");
        BOOST_TEST(!seen[0].value);
        BOOST_TEST(seen[1].id == "a");
        BOOST_TEST((seen[1].token == seen[0].token));
        BOOST_TEST(seen[1].value.value_or("<none>") == "v1");
        BOOST_TEST(seen[2].id == "b", show(seen[2]));
        BOOST_TEST(!seen[2].value, "a's value is not b's");
        BOOST_TEST((seen[2].token > seen[1].token));
        BOOST_TEST(!seen[3], show(seen[3]));
        ss[2].close();
    });
}

// Terms that end as fast as they begin: an observer that follows them reports terms in order and ends
// on "nobody" once the last candidate resigned. (A watch may fire between its read's answer and the
// observer's wait; the observer waits on every watch its round set, fired or not. This churn does not
// force that moment: CI met it once, in an_observer_follows_every_change_in_order, as a hang.)
BOOST_AUTO_TEST_CASE(an_observer_keeps_up_with_terms_that_end_at_once)
{
    asio::io_context ioc;
    sessions ss(ioc, 3);
    const auto path = unique_path("election-churn");
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        std::vector<leader_info> seen;
        bool following = true;
        error_code observer_failed;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            leader_info l;
            while (following) {
                auto [ec, next] = co_await zklock::async_wait_leader_change(ss[2], path, l, tuple_awaitable);
                if (ec) {
                    observer_failed = ec;
                    co_return;
                }
                if (next && l) BOOST_TEST((next.token > l.token), show(next) << " after " << show(l));
                seen.push_back(l = next);
            }
        }, asio::detached);
        election a(ss[0], path, "a"), b(ss[1], path, "b");
        constexpr int terms = 60;
        auto candidate = [&](election& e) -> asio::awaitable<void> {
            for (int t = 0; t < terms / 2; ++t) {
                auto l = co_await e.campaign(30s, use_awaitable);
                co_await l.resign(use_awaitable);
            }
        };
        auto [order, ea, eb] = co_await asio::experimental::make_parallel_group(
                                   asio::co_spawn(ioc, candidate(a), asio::deferred),
                                   asio::co_spawn(ioc, candidate(b), asio::deferred))
                                   .async_wait(asio::experimental::wait_for_all(), use_awaitable);
        if (ea) std::rethrow_exception(ea);
        if (eb) std::rethrow_exception(eb);
        BOOST_TEST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return !seen.empty() && !seen.back(); }),
                           "the observer never saw that nobody leads, after " << seen.size() << " reports"
                                                                              << " (its wait failed with: "
                                                                              << observer_failed.message() << ")");
        BOOST_TEST(!observer_failed, "the observer's wait failed: " << observer_failed.message());
        following = false;
        BOOST_TEST_MESSAGE("measured: the observer reported " << seen.size() << " changes over " << terms << " terms");
        ss[2].close();
    });
}

// A leader whose node is deleted (an operator, or its session's expiry) is told, the next candidate
// leads, and the deposed leader's proclamation is refused.
BOOST_AUTO_TEST_CASE(a_deposed_leader_is_told_and_cannot_proclaim)
{
    asio::io_context ioc;
    sessions ss(ioc, 3);
    const auto path = unique_path("election-deposed");
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        election a(ss[0], path, "a"), b(ss[1], path, "b");
        auto la = co_await a.campaign(5s, use_awaitable);
        std::optional<leadership> lb;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { lb = co_await b.campaign(30s, use_awaitable); }, asio::detached);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return (co_await children(ss[2], path)).size() == 2u; }));
        co_await ss[2].async_remove(la.node(), -1, use_awaitable);
        auto [ec, why] = co_await la.async_wait_lost(tuple_awaitable);
        BOOST_TEST(!ec);
        BOOST_TEST(why == zklock::error::lock_node_deleted, why.message());
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return lb.has_value(); }));
        auto [pec] = co_await la.async_proclaim("stale", tuple_awaitable);
        BOOST_TEST(pec == zklock::error::lock_node_deleted, pec.message());
        const auto now = co_await leader_of(ss[2], path);
        BOOST_TEST(now.id == "b");
        BOOST_TEST(!now.value, show(now));
        co_await lb->resign(use_awaitable);
    });
}

// Participants list the candidates' ids in order, the leader first; Curator's LeaderLatch nodes are
// observed, and campaigned among only by a candidate of the latch style; a second id in one session, a
// bad id and a mixed directory are refused.
BOOST_AUTO_TEST_CASE(ids_participants_and_refusals)
{
    asio::io_context ioc;
    sessions ss(ioc, 3);
    const auto path = unique_path("election-ids");
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        election a(ss[0], path, "alpha"), b(ss[1], path, "beta");
        auto la = co_await a.campaign(5s, use_awaitable);
        std::optional<leadership> lb;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [ec, l] = co_await b.campaign(30s, tuple_awaitable);
            if (!ec) lb = std::move(l);
        }, asio::detached);
        std::vector<zklock::participant> list;
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> {
            list = co_await zklock::async_participants(ss[2], path, use_awaitable);
            co_return list.size() == 2u;
        }));
        BOOST_TEST(list[0].owner == "alpha");
        BOOST_TEST(list[0].holds);
        BOOST_TEST(list[1].owner == "beta");
        BOOST_TEST(!list[1].holds);

        // Another id in the same session on the same path; ids that are not one line.
        election other(ss[0], path, "gamma");
        auto [cec, cl] = co_await other.campaign(1s, tuple_awaitable);
        BOOST_TEST(cec == zklock::error::conflicting_options, cec.message());
        for (std::string bad : {"two\nlines", "cr\r", "__REVOKE__"}) {
            election e(ss[2], path, bad);
            auto [bec, bl] = co_await e.campaign(1s, tuple_awaitable);
            BOOST_TEST(bec == zklock::error::invalid_participant_id, bec.message());
            auto [oec, ol] = co_await e.async_leader(tuple_awaitable);
            BOOST_TEST(oec == zklock::error::invalid_participant_id, oec.message());
        }
        BOOST_TEST((co_await children(ss[2], path)).size() == 2u, "nothing was created for them");

        // A LeaderLatch's node on a selector path: nobody can say who leads.
        const auto latch = std::get<0>(co_await ss[2].async_create(path + "/_c_0b7f3c1e-5a2d-4f8e-9c61-2d4e8a1b7f90-latch-",
                                                                   "curator", zklock::create_mode::ephemeral_sequential, use_awaitable));
        auto [mec, ml] = co_await zklock::async_leader(ss[2], path, tuple_awaitable);
        BOOST_TEST(mec == zklock::error::schema_mismatch, mec.message());
        co_await ss[2].async_remove(latch, -1, use_awaitable);  // before b looks again (at a's resignation)
        co_await la.resign(use_awaitable);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return lb.has_value(); }));
        co_await lb->resign(use_awaitable);

        // A latch path alone: observed (its first node leads), campaigned on in the latch style only.
        const auto latch_path = unique_path("election-latch");
        co_await ss[2].async_create(latch_path, "", zklock::create_mode::persistent, use_awaitable);
        const auto first = std::get<0>(co_await ss[2].async_create(latch_path + "/_c_2d5d8f0e-3b1a-4c4e-9f57-1f3e0f9a7c21-latch-",
                                                                   "latch-1", zklock::create_mode::ephemeral_sequential, use_awaitable));
        co_await ss[2].async_create(latch_path + "/_c_2d5d8f0e-3b1a-4c4e-9f57-1f3e0f9a7c22-latch-", "latch-2",
                                    zklock::create_mode::ephemeral_sequential, use_awaitable);
        const auto l = co_await leader_of(ss[1], latch_path);
        BOOST_TEST(l.id == "latch-1");
        BOOST_TEST(l.node == first);
        election on_latch(ss[1], latch_path, "beta");
        auto [lec, ll] = co_await on_latch.campaign(2s, tuple_awaitable);
        BOOST_TEST(lec == zklock::error::schema_mismatch, lec.message());
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return (co_await children(ss[2], latch_path)).size() == 2u; }),
                   "no node of ours left among the latch's");
        election latch_style(ss[0], latch_path, "gamma", {.style = zklock::election_style::latch});
        auto [qec, ql] = co_await latch_style.campaign(300ms, tuple_awaitable);
        BOOST_TEST(qec == zklock::error::timeout, "behind two latch nodes: " << qec.message());
        co_await ss[2].async_remove(first, -1, use_awaitable);
        BOOST_TEST((co_await leader_of(ss[1], latch_path)).id == "latch-2");
        const auto parts = co_await zklock::async_participants(ss[1], latch_path, use_awaitable);
        BOOST_TEST_REQUIRE(parts.size() == 1u, "the timed-out candidate left no node");
        BOOST_TEST(parts[0].owner == "latch-2");
        BOOST_TEST(parts[0].role == "latch");
    });
}

// Two campaigns of one session with one id: each term is a node of its own (observers see both terms).
BOOST_AUTO_TEST_CASE(each_term_of_one_session_is_a_node_of_its_own)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    const auto path = unique_path("election-local");
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        election e1(ss[0], path, "same"), e2(ss[0], path, "same");
        auto l1 = co_await e1.campaign(5s, use_awaitable);
        std::optional<leadership> l2;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { l2 = co_await e2.campaign(30s, use_awaitable); }, asio::detached);
        co_await pause(50ms);
        BOOST_TEST(!l2.has_value(), "one leader at a time within a session too");
        const auto first = l1.token();
        const auto first_node = l1.node();
        co_await l1.resign(use_awaitable);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return l2.has_value(); }));
        BOOST_TEST(l2->token().zxid > first.zxid, l2->token().to_string() << " after " << first.to_string());
        BOOST_TEST(l2->node() != first_node);
        co_await l2->resign(use_awaitable);
    });
}

BOOST_AUTO_TEST_SUITE_END()  // election_tests
