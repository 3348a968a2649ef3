// The semaphore against a real ZooKeeper: never more than N holders and N reached, several leases all
// or none, timeouts and cancellation leave nothing, loss of a lease, local hand-off, bad counts, schemas.
#include "test_util.hpp"

#include <zklock/mutex.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/shared_mutex.hpp>
#include <zklock/testing/faults.hpp>

#include <memory>
#include <optional>
#include <stdexcept>

BOOST_AUTO_TEST_SUITE(semaphore_tests)

using namespace test;
using zklock::guard;
using zklock::semaphore;
using zklock::session;

namespace {

/// Counts who is inside; throws past the limit, so the test checks it itself.
struct pool {
    int limit, inside = 0, most = 0, uses = 0;
    asio::awaitable<void> use(std::chrono::milliseconds stay)
    {
        if (++inside > limit) throw std::runtime_error("more holders than leases");
        most = std::max(most, inside);
        ++uses;
        co_await pause(stay);
        --inside;
    }
};

}  // namespace

BOOST_AUTO_TEST_CASE(three_leases_never_have_four_holders)
{
    for (std::size_t limit : {std::size_t{0}, std::size_t{10}}) {
        asio::io_context ioc;
        sessions ss(ioc, 3);
        pool p{3};
        run(ioc, [&]() -> asio::awaitable<void> {
            co_await ss.connect();
            const auto path = unique_path("sem");
            int done = 0;
            for (std::size_t i = 0; i < 3; ++i)
                for (int c = 0; c < 3; ++c)
                    asio::co_spawn(ioc, [&, i]() -> asio::awaitable<void> {
                        semaphore sem(ss[i], path, 3, {.local_handoff_limit = limit, .acl = zklock::open_acl()});
                        for (int k = 0; k < 5; ++k) {
                            auto g = co_await sem.acquire(60s, use_awaitable);
                            co_await p.use(5ms);
                            co_await g.release(use_awaitable);
                        }
                        ++done;
                    }, asio::detached);
            BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return done == 9; }, 120s));
            BOOST_TEST(p.uses == 45);
            BOOST_TEST(p.most <= 3);
            BOOST_TEST((co_await children(ss[0], path + "/leases")).empty());
        }, 150s);
    }
}

BOOST_AUTO_TEST_CASE(three_processes_hold_the_three_leases_and_a_fourth_waits)
{
    asio::io_context ioc;
    sessions ss(ioc, 4);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("sem-three");
        semaphore a(ss[0], path, 3), b(ss[1], path, 3), c(ss[2], path, 3), d(ss[3], path, 3);
        auto ga = co_await a.acquire(5s, use_awaitable);
        auto gb = co_await b.acquire(5s, use_awaitable);
        auto gc = co_await c.try_acquire(use_awaitable);
        BOOST_TEST((ga && gb && gc));
        auto [ec, none] = co_await d.try_acquire(tuple_awaitable);
        BOOST_TEST(ec == zklock::error::timeout);
        guard gd;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { gd = co_await d.acquire(10s, use_awaitable); },
                       asio::detached);
        co_await pause(200ms);  // time for a wrong grant to show
        BOOST_TEST(!gd);
        co_await gb.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return gd.owns_lock(); }));
        BOOST_TEST((co_await children(ss[0], path + "/leases")).size() == 3u);
        for (auto* g : {&ga, &gc, &gd}) co_await g->release(use_awaitable);
        BOOST_TEST((co_await children(ss[0], path + "/leases")).empty());
        BOOST_TEST((co_await children(ss[0], path + "/locks")).empty());
    });
}

// A run lets the internal lock go with its first requests when its session's last run held at its first
// count (a new session's first run does too). When its count then says "full", it may not wait without
// the lock (Curator's waiters count under it, and their count may only shrink): its lease goes, and it
// waits holding the lock. So behind the holders there is one
// waiting lease at a time, and the other waiters queue for the lock.
BOOST_AUTO_TEST_CASE(a_waiter_that_finds_the_semaphore_full_waits_holding_the_internal_lock)
{
    asio::io_context ioc;
    sessions ss(ioc, 3);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("sem-full");
        semaphore a(ss[0], path, 1), b(ss[1], path, 1), c(ss[2], path, 1);
        auto settled = [&](std::size_t locks, std::size_t leases) -> asio::awaitable<bool> {
            co_return (co_await children(ss[0], path + "/locks")).size() == locks &&
                (co_await children(ss[0], path + "/leases")).size() == leases;
        };
        auto ga = co_await a.acquire(5s, use_awaitable);
        // A new session speculates: a one look that finds it full deletes its lease and leaves nothing.
        for (auto* s : {&b, &c}) {
            auto [ec, none] = co_await s->try_acquire(tuple_awaitable);
            BOOST_TEST(ec == zklock::error::timeout);
        }
        BOOST_TEST(co_await eventually([&] { return settled(0, 1); }));
        // They saw it full, so now they count before they let the lock go (no transient state to mistake).
        guard gb, gc;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { gb = co_await b.acquire(20s, use_awaitable); },
                       asio::detached);
        BOOST_TEST(co_await eventually([&] { return settled(1, 2); }));  // b: the lock, and its waiting lease
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { gc = co_await c.acquire(20s, use_awaitable); },
                       asio::detached);
        BOOST_TEST(co_await eventually([&] { return settled(2, 2); }));  // c queues for the lock, no lease
        BOOST_TEST((!gb && !gc));
        co_await ga.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return gb.owns_lock(); }));
        BOOST_TEST(co_await eventually([&] { return settled(1, 2); }));  // now c waits as b did
        BOOST_TEST(!gc);
        co_await gb.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return gc.owns_lock(); }));
        co_await gc.release(use_awaitable);
        BOOST_TEST(co_await eventually([&] { return settled(0, 0); }));
        // a's session held at its first count: it speculates, finds c's lease, deletes its own and waits
        // under the lock.
        auto gc2 = co_await c.acquire(5s, use_awaitable);
        guard gd;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { gd = co_await a.acquire(20s, use_awaitable); },
                       asio::detached);
        BOOST_TEST(co_await eventually([&] { return settled(1, 2); }));
        co_await gc2.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return gd.owns_lock(); }));
        co_await gd.release(use_awaitable);
        BOOST_TEST(co_await eventually([&] { return settled(0, 0); }));
    });
}

BOOST_AUTO_TEST_CASE(several_leases_are_taken_all_together_or_not_at_all)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("sem-many");
        semaphore a(ss[0], path, 3), b(ss[1], path, 3);
        auto three = co_await a.acquire_many(3, 5s, use_awaitable);
        BOOST_TEST(three.size() == 3u);
        auto [ec, none] = co_await b.acquire_many(2, 200ms, tuple_awaitable);
        BOOST_TEST(ec == zklock::error::timeout);
        BOOST_TEST(none.empty());
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(ss[0], path + "/leases")).size() == 3;  // the timed-out pair is gone
        }));
        std::vector<guard> got;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { got = co_await b.acquire_many(2, 10s, use_awaitable); },
                       asio::detached);
        co_await three[0].release(use_awaitable);
        co_await pause(200ms);
        BOOST_TEST(got.empty());  // one free lease is not enough for two
        co_await three[1].release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return got.size() == 2; }));
        co_await three[2].release(use_awaitable);
        for (auto& g : got) co_await g.release(use_awaitable);
        BOOST_TEST((co_await children(ss[0], path + "/leases")).empty());
    });
}

BOOST_AUTO_TEST_CASE(cancellation_leaves_no_lease_and_no_lock_node)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("sem-cancel");
        semaphore a(ss[0], path, 1), b(ss[1], path, 1);
        auto g = co_await a.acquire(5s, use_awaitable);
        asio::cancellation_signal sig;
        zklock::error_code cec;
        bool finished = false;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [e, w] = co_await b.acquire(asio::bind_cancellation_slot(sig.slot(), tuple_awaitable));
            cec = e;
            finished = true;
        }, asio::detached);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(ss[0], path + "/leases")).size() == 2;  // b waits with its lease node
        }));
        sig.emit(asio::cancellation_type::terminal);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return finished; }));
        BOOST_TEST(cec == asio::error::operation_aborted);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(ss[0], path + "/leases")).size() == 1 &&
                (co_await children(ss[0], path + "/locks")).empty();
        }));
        co_await g.release(use_awaitable);
    });
}

// The header's lifetime rule: when the last semaphore object of a path goes (and no guard of it is left), a
// pending acquire completes with operation_aborted, and its lease and internal lock nodes leave the server.
BOOST_AUTO_TEST_CASE(dropping_the_last_semaphore_object_aborts_its_waiter_and_leaves_nothing)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("sem-dropped");
        semaphore theirs(ss[0], path, 1);
        auto g = co_await theirs.acquire(5s, use_awaitable);
        auto ours = std::make_unique<semaphore>(ss[1], path, 1);
        std::optional<zklock::error_code> waited;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [e, w] = co_await ours->acquire(60s, tuple_awaitable);
            waited = e;
        }, asio::detached);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(ss[0], path + "/leases")).size() == 2;  // ours waits with its lease node
        }));
        ours.reset();
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return waited.has_value(); }));
        BOOST_TEST(*waited == asio::error::operation_aborted, waited->message());
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(ss[0], path + "/leases")).size() == 1 &&
                (co_await children(ss[0], path + "/locks")).empty();
        }));
        BOOST_TEST(!g.lost());  // the holder is untouched
        co_await g.release(use_awaitable);
        BOOST_TEST((co_await children(ss[0], path + "/leases")).empty());
    });
}

// A permit node whose create was applied but whose answer was lost (the connection dropped) would count as
// a holder for as long as the session lives, and block the semaphore: the run that lost it finds it by its
// protected name once reconnected and deletes it, and the waiter tries again and is served in its turn.
BOOST_AUTO_TEST_CASE(a_permit_node_whose_create_answer_was_lost_is_found_and_deleted)
{
    asio::io_context ioc;
    sessions ss(ioc, 3);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("sem-orphan");
        semaphore b(ss[0], path, 1), a(ss[1], path, 1), c(ss[2], path, 1);
        auto held = co_await b.acquire(5s, use_awaitable);
        // c waits for the permit holding the internal lock; a waits for the internal lock behind it, so that
        // a's next create is its permit node's.
        std::optional<guard> cg, ag;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { cg = co_await c.acquire(60s, use_awaitable); }, asio::detached);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(ss[0], path + "/leases")).size() == 2;
        }));
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { ag = co_await a.acquire(60s, use_awaitable); }, asio::detached);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(ss[0], path + "/locks")).size() == 2 && none_out(ss[1], "create");
        }));
        zklock::testing::lose_next_applied_answer(ss[1], "create");
        co_await held.release(use_awaitable);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return cg.has_value(); }));
        // a reconnects, deletes the orphan and waits again under the internal lock with a new permit node:
        // c's node and that one are left.
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return ss[1].state() == zklock::session_state::connected &&
                (co_await children(ss[0], path + "/leases")).size() == 2 &&
                (co_await children(ss[0], path + "/locks")).size() == 1;
        }));
        BOOST_TEST(!ag.has_value());  // one permit, and c holds it
        co_await cg->release(use_awaitable);
        BOOST_TEST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return ag.has_value(); }),
                           "a waits behind a permit node nobody holds");
        co_await ag->release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(ss[0], path + "/leases")).empty();
        }), "a permit node was left, holding the semaphore");
    }, 90s);
}

// A holder hears when its lease node is deleted, whether it listens (the watch goes out at once) or only
// polls lost(): the node is watched once held for a millisecond (as a mutex's node is), not at its grant.
BOOST_AUTO_TEST_CASE(a_holder_learns_when_its_lease_node_is_deleted)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        for (const bool listens : {true, false}) {
            BOOST_TEST_CONTEXT((listens ? "listens" : "only polls")) {
                const auto path = unique_path("sem-lost");
                semaphore a(ss[0], path, 2);
                auto g = co_await a.acquire(5s, use_awaitable);
                co_await ss[1].async_remove(g.node(), -1, use_awaitable);
                if (listens) {
                    auto [ec, why] = co_await g.async_wait_lost(tuple_awaitable);
                    BOOST_TEST(!ec);
                    BOOST_TEST(why == zklock::error::lock_node_deleted);
                } else {
                    BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
                        co_return g.lost() == zklock::error::lock_node_deleted;
                    }));
                }
                BOOST_TEST(g.lost() == zklock::error::lock_node_deleted);
                auto [rec] = co_await g.release(tuple_awaitable);
                BOOST_TEST(rec == zklock::error::lock_node_deleted);
            }
        }
    });
}

BOOST_AUTO_TEST_CASE(a_lease_passes_between_coroutines_of_one_session)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    pool p{1};
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("sem-local");
        int done = 0;
        std::vector<zklock::fencing_token> tokens;
        for (int c = 0; c < 5; ++c)
            asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
                semaphore sem(ss[0], path, 1);
                for (int k = 0; k < 4; ++k) {
                    auto g = co_await sem.acquire(30s, use_awaitable);
                    tokens.push_back(g.token());
                    co_await p.use(1ms);
                    co_await g.release(use_awaitable);
                }
                ++done;
            }, asio::detached);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return done == 5; }, 60s));
        BOOST_TEST(p.uses == 20);
        for (std::size_t i = 1; i < tokens.size(); ++i) BOOST_TEST((tokens[i - 1] < tokens[i]));
        std::size_t local = 0;
        for (auto& t : tokens) local += t.local > 0;
        BOOST_TEST(local > 0u);  // some hand-offs went without a round trip
        BOOST_TEST((co_await children(ss[0], path + "/leases")).empty());
    });
}

// Cohorting bounded by real contention: alone, a session's coroutines keep passing the lease among them
// well beyond local_handoff_limit; once another session waits for it, the bound applies and it gets in.
BOOST_AUTO_TEST_CASE(a_lease_stays_local_beyond_the_bound_until_another_session_waits)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    pool p{1};
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("sem-cohort");
        constexpr std::size_t limit = 3;
        bool stop = false, failed = false;
        std::uint64_t most_local = 0;
        std::size_t grants = 0;
        int running = 0;
        for (int c = 0; c < 4; ++c) {
            ++running;
            asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
                try {
                    semaphore sem(ss[0], path, 1, {.local_handoff_limit = limit, .acl = zklock::open_acl()});
                    while (!stop) {
                        auto g = co_await sem.acquire(30s, use_awaitable);
                        ++grants;
                        most_local = std::max<std::uint64_t>(most_local, g.token().local);
                        co_await p.use(2ms);  // throws if two are inside
                        co_await g.release(use_awaitable);
                    }
                } catch (const std::exception&) {
                    failed = true;
                }
                --running;
            }, asio::detached);
        }
        // Alone, the lease stays far beyond the bound (a token's local count is its hand-offs in a row).
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return most_local > 4 * limit; }, 30s));
        // Another session asks while the first one's coroutines still want the lease: it gets it soon.
        semaphore other(ss[1], path, 1);
        const auto asked = grants;
        auto g = co_await other.acquire(30s, use_awaitable);
        const auto passed = grants - asked;
        co_await p.use(1ms);
        co_await g.release(use_awaitable);
        stop = true;
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return running == 0; }, 30s));
        BOOST_TEST(!failed);
        // Its own protocol takes a few round trips (the internal lock, its lease node, the listing); after
        // that the first session passes the lease on at most once more.
        BOOST_TEST(passed < 100u, passed << " local grants while the other session asked");
        BOOST_TEST((co_await children(ss[0], path + "/leases")).empty());
    });
}

BOOST_AUTO_TEST_CASE(bad_counts_and_other_schemas_are_refused)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("sem-bad");
        semaphore none(ss[0], path, 0);
        auto [e0, g0] = co_await none.try_acquire(tuple_awaitable);
        BOOST_TEST(e0 == zklock::error::invalid_permit_count);
        semaphore three(ss[0], path, 3);
        BOOST_TEST(three.max_permits() == 3u);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        BOOST_TEST(three.max_leases() == 3u);  // the old name, deprecated
#pragma GCC diagnostic pop
        auto [e1, g1] = co_await three.acquire_many(0, 1s, tuple_awaitable);
        BOOST_TEST(e1 == zklock::error::invalid_permit_count);
        auto [e2, g2] = co_await three.acquire_many(4, 1s, tuple_awaitable);
        BOOST_TEST(e2 == zklock::error::invalid_permit_count);
        semaphore other_count(ss[0], path, 2);
        auto [e3, g3] = co_await other_count.try_acquire(tuple_awaitable);
        BOOST_TEST(e3 == zklock::error::conflicting_options);

        const auto mpath = unique_path("sem-on-mutex");
        zklock::mutex m(ss[0], mpath);
        auto mg = co_await m.acquire(5s, use_awaitable);
        semaphore on_mutex(ss[0], mpath, 2);
        auto [e4, g4] = co_await on_mutex.acquire(5s, tuple_awaitable);
        BOOST_TEST(e4 == zklock::error::schema_mismatch);
        // Refused before anything was made: no PATH/locks left to refuse the mutex's own kind later.
        const auto left = co_await children(ss[0], mpath);
        BOOST_TEST(left.size() == 1u);
        BOOST_TEST(left.front() == mg.node().substr(mpath.size() + 1));
        co_await mg.release(use_awaitable);
        BOOST_TEST((co_await children(ss[0], mpath)).empty());
        auto again = co_await m.acquire(5s, use_awaitable);  // the mutex's path is still the mutex's
        co_await again.release(use_awaitable);

        const auto rwpath = unique_path("sem-on-rw");
        zklock::shared_mutex rw(ss[0], rwpath);
        auto rg = co_await rw.acquire_shared(5s, use_awaitable);
        semaphore on_rw(ss[0], rwpath, 2);
        auto [e6, g6] = co_await on_rw.acquire_many(2, 5s, tuple_awaitable);
        BOOST_TEST(e6 == zklock::error::schema_mismatch);
        BOOST_TEST((co_await children(ss[0], rwpath)).size() == 1u);
        co_await rg.release(use_awaitable);

        // A count too large to be nodes in one listing: refused, not a std::bad_alloc.
        const std::size_t huge = std::size_t{1} << 31;
        semaphore big(ss[0], unique_path("sem-big"), huge);
        auto [e7, g7] = co_await big.acquire_many(huge, 1s, tuple_awaitable);
        BOOST_TEST(e7 == zklock::error::invalid_permit_count);
        auto [e8, g8] = co_await big.acquire_many(5000, 1s, tuple_awaitable);
        BOOST_TEST(e8 == zklock::error::invalid_permit_count);

        auto sg = co_await three.acquire(5s, use_awaitable);
        zklock::mutex on_sem(ss[0], path);
        auto [e5, g5] = co_await on_sem.acquire(5s, tuple_awaitable);
        BOOST_TEST(e5 == zklock::error::schema_mismatch);
        co_await sg.release(use_awaitable);
        BOOST_TEST((co_await children(ss[0], path + "/leases")).empty());
    });
}

BOOST_AUTO_TEST_SUITE_END()  // semaphore_tests
