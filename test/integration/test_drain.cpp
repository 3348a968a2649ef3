// session::async_drain against a real ZooKeeper: a planned stop hands every lock over at once (not after a
// session timeout), refuses new acquires of every recipe with error::draining, fails the waiters, asks the
// holders to let go, lets their releases complete, and closes the session; a holder past the grace is told
// session_closed; cancellation (each type) and the odd calls (twice, after a close, a moved-from session).
#include "test_util.hpp"

#include <zklock/testing/faults.hpp>
#include <zklock/zklock.hpp>

#include <memory>

BOOST_AUTO_TEST_SUITE(drain_tests)

using namespace test;
using zklock::guard;
using zklock::mutex;
using zklock::session;

namespace {

/// A session whose timeout is long, so that a hand-over that waited for its expiry would show.
std::unique_ptr<session> long_session(asio::io_context& ioc)
{
    auto c = config_for(shared_server().connect_string());
    c.session_timeout = 30s;
    return std::make_unique<session>(ioc, c);
}

/// An operation started now whose outcome is read later.
struct outcome {
    bool done = false;
    zklock::error_code ec;
    std::chrono::steady_clock::time_point at{};
    void set(zklock::error_code e)
    {
        ec = e;
        done = true;
        at = std::chrono::steady_clock::now();
    }
};

/// Starts `s.async_drain(grace)`; its outcome lands in `o`. `sig`, if given, can cancel it.
void start_drain(asio::io_context& ioc, session& s, std::chrono::milliseconds grace, outcome& o,
                 asio::cancellation_signal* sig = nullptr)
{
    asio::co_spawn(ioc, [&s, grace, &o, sig]() -> asio::awaitable<void> {
        asio::cancellation_signal unused;
        auto [ec] = co_await s.async_drain(grace, asio::bind_cancellation_slot((sig ? sig : &unused)->slot(), tuple_awaitable));
        o.set(ec);
    }, asio::detached);
}

asio::awaitable<bool> until_done(const outcome& o, std::chrono::milliseconds limit = 10s)
{
    co_return co_await eventually([&]() -> asio::awaitable<bool> { co_return o.done; }, limit);
}

}  // namespace

// Three holders (a mutex, a semaphore's lease, a read lock) and 50 waiters of A's own; B waits on all three.
BOOST_AUTO_TEST_CASE(a_drain_hands_every_lock_over_at_once_and_closes_the_session)
{
    asio::io_context ioc;
    auto a = long_session(ioc);
    sessions others(ioc, 1);
    auto& b = others[0];
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await a->async_connect(use_awaitable);
        co_await others.connect();
        const auto lock_path = unique_path("drain-mutex"), sem_path = unique_path("drain-sem");
        const auto rw_path = unique_path("drain-rw-held");
        mutex ma(*a, lock_path), mb(b, lock_path);
        zklock::semaphore sa(*a, sem_path, 1), sb(b, sem_path, 1);
        zklock::shared_mutex rwa(*a, rw_path), rwb(b, rw_path);
        auto g = co_await ma.acquire(5s, use_awaitable);
        auto lease = co_await sa.acquire(5s, use_awaitable);
        auto reading = co_await rwa.acquire_shared(5s, use_awaitable);

        // A's holders work until asked to let go; B's grants are checked against A's nodes on the server.
        const auto a_lock_node = g.node(), a_lease_node = lease.node(), a_read_node = reading.node();
        outcome released_lock, released_lease, released_read;
        auto holder = [&](guard& held, outcome& released) -> asio::awaitable<void> {
            auto [asked] = co_await held.async_wait_revoked(tuple_awaitable);
            BOOST_TEST(!asked);
            auto [ec] = co_await held.release(tuple_awaitable);
            released.set(ec);
        };
        // Waiters: 50 of A's own (local: 30 on the mutex, 20 on the semaphore), and B on all three paths.
        std::vector<outcome> a_waiters(50);
        for (std::size_t i = 0; i < a_waiters.size(); ++i)
            asio::co_spawn(ioc, [&, i]() -> asio::awaitable<void> {
                if (i < 30) {
                    mutex again(*a, lock_path);
                    auto [ec, g2] = co_await again.acquire(30s, tuple_awaitable);
                    a_waiters[i].set(ec);
                } else {
                    auto [ec, l2] = co_await sa.acquire(30s, tuple_awaitable);
                    a_waiters[i].set(ec);
                }
            }, asio::detached);
        outcome b_lock, b_lease, b_write;
        int b_saw_a_holding = 0;
        auto b_takes = [&](auto& lock, std::string dir, std::string a_node, outcome& got) -> asio::awaitable<void> {
            auto [ec, gb] = co_await lock.acquire(30s, tuple_awaitable);
            if (!ec)  // granted only once A's node is gone: ZooKeeper applied A's delete before telling B
                for (const auto& kid : co_await children(b, dir)) b_saw_a_holding += dir + "/" + kid == a_node;
            got.set(ec);
            if (!ec) co_await gb.release(use_awaitable);
        };
        asio::co_spawn(ioc, b_takes(mb, lock_path, a_lock_node, b_lock), asio::detached);
        asio::co_spawn(ioc, b_takes(sb, sem_path + "/leases", a_lease_node, b_lease), asio::detached);
        asio::co_spawn(ioc, b_takes(rwb, rw_path, a_read_node, b_write), asio::detached);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(b, lock_path)).size() == 2 &&  // A's node (A's waiters wait in A), B's
                      (co_await children(b, rw_path)).size() == 2;
        }));
        co_await pause(100ms);
        BOOST_TEST(!b_lock.done);
        BOOST_TEST(!b_lease.done);
        BOOST_TEST(!b_write.done);

        const auto started = std::chrono::steady_clock::now();
        outcome drained;
        start_drain(ioc, *a, 20s, drained);
        asio::co_spawn(ioc, holder(g, released_lock), asio::detached);
        asio::co_spawn(ioc, holder(lease, released_lease), asio::detached);
        asio::co_spawn(ioc, holder(reading, released_read), asio::detached);

        for (auto& w : a_waiters) {
            BOOST_TEST(co_await until_done(w));
            BOOST_TEST(w.ec == zklock::error::draining);
        }
        // New acquires of every kind are refused at once.
        mutex fresh(*a, unique_path("drain-late"));
        auto [late_ec, late] = co_await fresh.acquire(5s, tuple_awaitable);
        BOOST_TEST(late_ec == zklock::error::draining);
        zklock::shared_mutex rw(*a, unique_path("drain-rw"));
        auto [read_ec, read] = co_await rw.acquire_shared(5s, tuple_awaitable);
        BOOST_TEST(read_ec == zklock::error::draining);
        auto [sem_ec, sem_lease] = co_await sa.acquire(5s, tuple_awaitable);
        BOOST_TEST(sem_ec == zklock::error::draining);
        zklock::multi_lock both(mutex(*a, unique_path("drain-x")), mutex(*a, unique_path("drain-y")));
        auto [multi_ec, multi] = co_await both.acquire(5s, tuple_awaitable);
        BOOST_TEST(multi_ec == zklock::error::draining);

        BOOST_TEST(co_await until_done(drained, 15s));
        BOOST_TEST(!drained.ec);
        BOOST_TEST(a->state() == zklock::session_state::closed);
        // The releases were answered, not cut off by the close.
        BOOST_TEST(released_lock.done);
        BOOST_TEST(!released_lock.ec);
        BOOST_TEST(released_lease.done);
        BOOST_TEST(!released_lease.ec);
        BOOST_TEST(released_read.done);
        BOOST_TEST(!released_read.ec);
        BOOST_TEST(co_await until_done(b_lock));
        BOOST_TEST(co_await until_done(b_lease));
        BOOST_TEST(co_await until_done(b_write));
        BOOST_TEST(!b_lock.ec);
        BOOST_TEST(!b_lease.ec);
        BOOST_TEST(!b_write.ec);
        BOOST_TEST(b_saw_a_holding == 0);  // mutual exclusion: B got each only after A's node was gone
        // At once, not after A's 30 s session timeout.
        BOOST_TEST((b_lock.at - started < 10s && b_lease.at - started < 10s && b_write.at - started < 10s));
        auto ms = [&](const outcome& o) { return std::chrono::duration_cast<std::chrono::milliseconds>(o.at - started).count(); };
        BOOST_TEST_MESSAGE("drain of 3 holders and 50 waiters: drained in " << ms(drained) << " ms; B granted the mutex at "
                                                                           << ms(b_lock) << " ms, the lease at " << ms(b_lease)
                                                                           << " ms, the write lock at " << ms(b_write) << " ms");
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(b, lock_path)).empty() && (co_await children(b, sem_path + "/leases")).empty() &&
                      (co_await children(b, rw_path)).empty();
        }));
    });
}

BOOST_AUTO_TEST_CASE(a_holder_past_the_grace_is_told_session_closed)
{
    asio::io_context ioc;
    auto a = long_session(ioc);
    sessions others(ioc, 1);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await a->async_connect(use_awaitable);
        co_await others.connect();
        const auto path = unique_path("drain-stubborn");
        mutex ma(*a, path), mb(others[0], path);
        auto g = co_await ma.acquire(5s, use_awaitable);  // a holder that never lets go
        outcome lost;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [ec, why] = co_await g.async_wait_lost(tuple_awaitable);
            lost.set(why);
        }, asio::detached);
        outcome drained;
        start_drain(ioc, *a, 300ms, drained);
        BOOST_TEST(co_await until_done(drained));
        BOOST_TEST(drained.ec == zklock::error::timeout);
        BOOST_TEST(a->state() == zklock::session_state::closed);
        BOOST_TEST(co_await until_done(lost));
        BOOST_TEST(lost.ec == zklock::error::session_closed);
        BOOST_TEST(g.lost() == zklock::error::session_closed);
        auto gb = co_await mb.acquire(5s, use_awaitable);  // the close released it
        BOOST_TEST(gb.owns_lock());
        co_await gb.release(use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(terminal_and_partial_cancellation_cut_the_grace_short_total_does_not)
{
    for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                      asio::cancellation_type::total}) {
        BOOST_TEST_CONTEXT("cancellation type " << static_cast<int>(type))
        {
            asio::io_context ioc;
            auto a = long_session(ioc);
            run(ioc, [&]() -> asio::awaitable<void> {
                co_await a->async_connect(use_awaitable);
                mutex m(*a, unique_path("drain-cancel"));
                auto g = co_await m.acquire(5s, use_awaitable);
                outcome drained;
                asio::cancellation_signal sig;
                start_drain(ioc, *a, 20s, drained, &sig);
                co_await pause(50ms);
                sig.emit(type);
                if (type == asio::cancellation_type::total) {
                    co_await pause(200ms);
                    BOOST_TEST(!drained.done);  // not supported: the drain goes on
                    BOOST_TEST(a->state() == zklock::session_state::connected);
                    co_await g.release(use_awaitable);
                    BOOST_TEST(co_await until_done(drained));
                    BOOST_TEST(!drained.ec);
                } else {
                    BOOST_TEST(co_await until_done(drained, 5s));
                    BOOST_TEST(drained.ec == asio::error::operation_aborted);
                    BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
                        co_return g.lost() == zklock::error::session_closed;
                    }));
                }
                BOOST_TEST(a->state() == zklock::session_state::closed);
            });
        }
    }
}

BOOST_AUTO_TEST_CASE(a_second_drain_joins_the_first_and_a_late_one_is_refused)
{
    asio::io_context ioc;
    auto a = long_session(ioc);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await a->async_connect(use_awaitable);
        mutex m(*a, unique_path("drain-twice"));
        auto g = co_await m.acquire(5s, use_awaitable);
        outcome first, second;
        const auto started = std::chrono::steady_clock::now();
        start_drain(ioc, *a, 20s, first);
        start_drain(ioc, *a, 300ms, second);  // the earlier deadline counts for both
        BOOST_TEST(co_await until_done(first));
        BOOST_TEST(co_await until_done(second));
        BOOST_TEST(first.ec == zklock::error::timeout);
        BOOST_TEST(second.ec == zklock::error::timeout);
        BOOST_TEST((first.at - started < 10s));
        auto [late] = co_await a->async_drain(1s, tuple_awaitable);
        BOOST_TEST(late == zklock::error::already_closed);

        session closed_before(ioc, config_for(shared_server().connect_string()));
        co_await closed_before.async_connect(use_awaitable);
        closed_before.close();
        auto [after_close] = co_await closed_before.async_drain(1s, tuple_awaitable);
        BOOST_TEST(after_close == zklock::error::already_closed);

        session from(ioc, config_for(shared_server().connect_string()));
        session to(std::move(from));
        auto [moved] = co_await from.async_drain(1s, tuple_awaitable);  // NOLINT(bugprone-use-after-move)
        BOOST_TEST(moved == zklock::error::no_session);
        auto [never_connected] = co_await to.async_drain(1s, tuple_awaitable);
        BOOST_TEST(!never_connected);  // nothing to hand over
        BOOST_TEST(to.state() == zklock::session_state::closed);
    });
}

// A lease that runs out ends a hold as a release does: the drain goes on at once, and closes cleanly
// (nothing was held at the close), long before its deadline.
BOOST_AUTO_TEST_CASE(a_lease_that_runs_out_lets_the_drain_go_on)
{
    asio::io_context ioc;
    auto a = long_session(ioc);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await a->async_connect(use_awaitable);
        mutex m(*a, unique_path("drain-lease"));
        const auto started = std::chrono::steady_clock::now();
        auto g = co_await m.acquire(5s, zklock::lease(1500ms), use_awaitable);  // a holder that never lets go
        outcome drained;
        start_drain(ioc, *a, 20s, drained);
        BOOST_TEST(co_await until_done(drained, 10s));
        BOOST_TEST(!drained.ec, drained.ec.message());  // not timeout: the lease had ended the hold
        BOOST_TEST((drained.at - started >= 1500ms));    // the drain waited for the lease: the hold was live
        BOOST_TEST((drained.at - started < 10s));
        BOOST_TEST(g.lost() == zklock::error::lease_expired);
    });
}

// The release's delete and the drain's confirming sync are lost with the connection. Closing then, while
// disconnected, would leave the lock node on the server for A's 30 s session timeout; the drain confirms
// again after the reconnect instead, and B gets the lock at once.
BOOST_AUTO_TEST_CASE(a_drain_whose_confirmation_is_lost_confirms_again_after_the_reconnect)
{
    asio::io_context ioc;
    auto a = long_session(ioc);
    sessions others(ioc, 1);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await a->async_connect(use_awaitable);
        co_await others.connect();
        const auto path = unique_path("drain-lost-sync");
        mutex ma(*a, path), mb(others[0], path);
        auto g = co_await ma.acquire(5s, use_awaitable);
        const auto a_node = g.node();
        outcome b_got;
        bool b_saw_a = false;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [ec, gb] = co_await mb.acquire(60s, tuple_awaitable);
            if (!ec)
                for (const auto& kid : co_await children(others[0], path)) b_saw_a = b_saw_a || path + "/" + kid == a_node;
            b_got.set(ec);
            if (!ec) co_await gb.release(use_awaitable);
        }, asio::detached);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(others[0], path)).size() == 2;
        }));
        const auto started = std::chrono::steady_clock::now();
        outcome drained;
        start_drain(ioc, *a, 20s, drained);
        zklock::testing::lose_next_answer(*a, "remove");
        outcome released;  // the delete goes out, then the drain's sync: the connection drops under both
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [ec] = co_await g.release(tuple_awaitable);
            released.set(ec);
        }, asio::detached);
        BOOST_TEST(co_await until_done(drained, 15s));
        BOOST_TEST(!drained.ec, drained.ec.message());
        BOOST_TEST(co_await until_done(released));
        BOOST_TEST(!released.ec, released.ec.message());  // confirmed by the server, not cut off by the close
        BOOST_TEST(co_await until_done(b_got, 15s));
        BOOST_TEST(!b_got.ec, b_got.ec.message());
        BOOST_TEST(!b_saw_a);  // mutual exclusion
        BOOST_TEST((b_got.at - started < 10s));  // not after A's session timeout
        BOOST_TEST(a->state() == zklock::session_state::closed);
    });
}

// Issue 48.3: a drain that could not confirm its releases said success (2 of 3 servers down: the resign and
// the close reached no server, the node stayed until the session expired). Here the one server is frozen:
// the holder's release goes out unanswered, the grace runs out, and the close reaches no server either.
BOOST_AUTO_TEST_CASE(a_drain_whose_releases_reach_no_server_says_timeout)
{
    zklock::testing::server zk;  // its own: frozen below
    asio::io_context ioc;
    auto c = config_for(zk.connect_string());
    c.session_timeout = 30s;  // the client does not give the connection up during the test
    session a(ioc, c);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await a.async_connect(use_awaitable);
        mutex m(a, unique_path("drain-unreachable"));
        auto g = co_await m.acquire(5s, use_awaitable);
        zk.freeze();
        outcome released, drained;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [ec] = co_await g.release(tuple_awaitable);
            released.set(ec);
        }, asio::detached);
        start_drain(ioc, a, 500ms, drained);
        BOOST_TEST(co_await until_done(drained, 20s));
        BOOST_TEST(drained.ec == zklock::error::timeout, drained.ec.message());
        BOOST_TEST(co_await until_done(released));
        BOOST_TEST(released.ec != zklock::error_code{});  // never confirmed either
        zk.thaw();
    }, 60s);
}

// Issue 48.4: a read guard taken by a downgrade was outside the drain: not asked to let go, not waited
// for, and ended with session_closed without grace. It is a holder as any other.
BOOST_AUTO_TEST_CASE(a_downgraded_read_guard_is_asked_and_waited_for)
{
    asio::io_context ioc;
    auto a = long_session(ioc);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await a->async_connect(use_awaitable);
        zklock::shared_mutex rw(*a, unique_path("drain-downgrade"));
        auto w = co_await rw.acquire(5s, use_awaitable);
        auto r = co_await rw.acquire_shared(w, use_awaitable);
        co_await w.release(use_awaitable);
        BOOST_REQUIRE(r.owns_lock());
        bool asked = false;
        outcome released, drained;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [ec] = co_await r.async_wait_revoked(tuple_awaitable);
            asked = !ec;
            co_await pause(200ms);  // still reading: the drain waits
            auto [rec] = co_await r.release(tuple_awaitable);
            released.set(rec);
        }, asio::detached);
        start_drain(ioc, *a, 10s, drained);
        BOOST_TEST(co_await until_done(drained, 15s));
        BOOST_TEST(!drained.ec, drained.ec.message());
        BOOST_TEST(asked);
        BOOST_TEST(released.done);  // answered before the drain completed
        BOOST_TEST(!released.ec, released.ec.message());  // not cut off by the close
        BOOST_TEST((released.at <= drained.at));
    });
}

// Issue 48.4: a semaphore's guards of a renewed session still counted as holders, so a drain after a
// renewal waited out its whole grace. Their permits went with the old session: nothing is held.
BOOST_AUTO_TEST_CASE(a_drain_after_a_renewal_does_not_wait_for_the_old_sessions_permits)
{
    asio::io_context ioc;
    auto c = config_for(shared_server().connect_string());
    c.on_expiry = zklock::expiry_policy::renew_requeue;
    session a(ioc, c);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await a.async_connect(use_awaitable);
        zklock::semaphore sem(a, unique_path("drain-renewed"), 2);
        auto g = co_await sem.acquire(5s, use_awaitable);
        const auto old_id = a.id();
        zklock::testing::kill_session(a);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return a.state() == zklock::session_state::connected && a.id() != old_id;
        }, 20s));
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return bool(g.lost()); }));
        outcome drained;
        const auto started = std::chrono::steady_clock::now();
        start_drain(ioc, a, 20s, drained);
        BOOST_TEST(co_await until_done(drained, 25s));
        BOOST_TEST(!drained.ec, drained.ec.message());
        BOOST_TEST((drained.at - started < 10s));  // not the whole grace
        co_await g.release(tuple_awaitable);
    }, 60s);
}

BOOST_AUTO_TEST_SUITE_END()  // drain_tests
