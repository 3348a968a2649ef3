// Several locks all or none against a real ZooKeeper: timeout and cancellation leave nothing, opposite
// orders never deadlock, mixed kinds, the loss of any one, a path twice.
#include "test_util.hpp"

#include <zklock/multi_lock.hpp>

#include <memory>
#include <stdexcept>

BOOST_AUTO_TEST_SUITE(multi_lock_tests)

using namespace test;
using zklock::lock_item;
using zklock::multi_guard;
using zklock::multi_lock;
using zklock::mutex;
using zklock::semaphore;
using zklock::session;
using zklock::shared_mutex;

namespace {

// GCC 12 cannot keep a braced list alive across co_await ("array used as initializer"): the lists below
// are built by these plain functions instead.
template <class... Lock>
std::vector<lock_item> items(Lock... locks)
{
    std::vector<lock_item> v;
    (v.push_back(lock_item(std::move(locks))), ...);
    return v;
}
template <class... S>
std::vector<std::string> paths(S... s)
{
    return std::vector<std::string>{std::string(s)...};
}

asio::awaitable<bool> nothing_left(session& s, std::vector<std::string> dirs)
{
    co_return co_await eventually([&]() -> asio::awaitable<bool> {
        for (const auto& d : dirs)
            if (!(co_await children(s, d)).empty()) co_return false;
        co_return true;
    });
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_timeout_takes_nothing_and_leaves_nothing)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto x = unique_path("multi-x"), y = unique_path("multi-y"), z = unique_path("multi-z");
        mutex hold_y(ss[0], y);
        auto gy = co_await hold_y.acquire(5s, use_awaitable);
        multi_lock m(items(mutex(ss[1], x), mutex(ss[1], y), semaphore(ss[1], z, 2)));
        const auto start = std::chrono::steady_clock::now();
        auto [ec, g] = co_await m.acquire(300ms, tuple_awaitable);
        const auto took = std::chrono::steady_clock::now() - start;
        BOOST_TEST(ec == zklock::error::timeout);
        BOOST_TEST(!g.owns_lock());
        BOOST_TEST(took < 3s);  // one deadline for all, not one per lock
        BOOST_TEST(co_await nothing_left(ss[0], paths(x, z + "/leases")));
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {  // ss[1]'s goes in the background
            co_return (co_await children(ss[0], y)).size() == 1u;  // the other holder's node only
        }));
        mutex other_x(ss[0], x);
        auto gx = co_await other_x.try_acquire(use_awaitable);  // x was given back
        BOOST_TEST(gx.owns_lock());
        co_await gx.release(use_awaitable);
        co_await gy.release(use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(cancellation_gives_back_what_was_taken)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto x = unique_path("multi-cx"), y = unique_path("multi-cy");
        mutex hold_y(ss[0], y);
        auto gy = co_await hold_y.acquire(5s, use_awaitable);
        multi_lock m(items(mutex(ss[1], x), mutex(ss[1], y)));
        asio::cancellation_signal sig;
        zklock::error_code cec;
        bool finished = false;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [e, g] = co_await m.acquire(asio::bind_cancellation_slot(sig.slot(), tuple_awaitable));
            cec = e;
            finished = true;
        }, asio::detached);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(ss[0], x)).size() == 1 && (co_await children(ss[0], y)).size() == 2;
        }));
        sig.emit(asio::cancellation_type::terminal);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return finished; }));
        BOOST_TEST(cec == asio::error::operation_aborted);
        BOOST_TEST(co_await nothing_left(ss[0], paths(x)));
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(ss[0], y)).size() == 1;
        }));
        co_await gy.release(use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(opposite_orders_never_deadlock_and_exclude_each_other)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto x = unique_path("multi-dx"), y = unique_path("multi-dy");
        int inside = 0, done = 0, rounds = 0;
        for (std::size_t i = 0; i < 2; ++i)
            asio::co_spawn(ioc, [&, i]() -> asio::awaitable<void> {
                // Given in opposite orders: the multi_lock sorts them.
                multi_lock m(i == 0 ? items(mutex(ss[i], x), mutex(ss[i], y)) : items(mutex(ss[i], y), mutex(ss[i], x)));
                for (int k = 0; k < 10; ++k) {
                    auto g = co_await m.acquire(30s, use_awaitable);
                    if (++inside != 1) throw std::runtime_error("both multi-locks inside at once");
                    ++rounds;
                    co_await asio::post(co_await asio::this_coro::executor, use_awaitable);
                    --inside;
                    co_await g.release(use_awaitable);
                }
                ++done;
            }, asio::detached);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return done == 2; }, 60s));
        BOOST_TEST(rounds == 20);
        BOOST_TEST(co_await nothing_left(ss[0], paths(x, y)));
    });
}

BOOST_AUTO_TEST_CASE(mixed_kinds_and_the_loss_of_any_one)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto r = unique_path("multi-r"), w = unique_path("multi-w"), s = unique_path("multi-s");
        multi_lock m(items(lock_item::shared(shared_mutex(ss[0], r)), lock_item::exclusive(shared_mutex(ss[0], w)),
                           semaphore(ss[0], s, 1)));
        auto g = co_await m.acquire(5s, use_awaitable);
        BOOST_TEST(g.guards().size() == 3u);
        shared_mutex other_r(ss[1], r), other_w(ss[1], w);
        auto shared_read = co_await other_r.try_acquire_shared(use_awaitable);  // readers share
        BOOST_TEST(shared_read.owns_lock());
        auto [ec, none] = co_await other_w.try_acquire(tuple_awaitable);
        BOOST_TEST(ec == zklock::error::timeout);
        co_await shared_read.release(use_awaitable);
        // Someone deletes the lease node: the multi guard hears it.
        co_await ss[1].async_remove(g.guards()[2].node(), -1, use_awaitable);
        auto [wec, why] = co_await g.async_wait_lost(tuple_awaitable);
        BOOST_TEST(!wec);
        BOOST_TEST(why == zklock::error::lock_node_deleted);
        auto [rec] = co_await g.release(tuple_awaitable);
        BOOST_TEST(rec == zklock::error::lock_node_deleted);
        BOOST_TEST(co_await nothing_left(ss[0], paths(r, w, s + "/leases")));
    });
}

BOOST_AUTO_TEST_CASE(a_path_twice_is_refused)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto x = unique_path("multi-twice");
        multi_lock m(items(lock_item::shared(shared_mutex(ss[0], x)), lock_item::exclusive(shared_mutex(ss[0], x))));
        auto [ec, g] = co_await m.acquire(1s, tuple_awaitable);
        BOOST_TEST(ec == zklock::error::conflicting_options);
        multi_lock empty(items());
        auto [ec2, g2] = co_await empty.acquire(1s, tuple_awaitable);
        BOOST_TEST(!ec2);
        BOOST_TEST((co_await children(ss[0], x)).empty());
        // Its release has nothing to do, and still completes as every async operation does: not inside
        // the initiating call, on the handler's executor (bound here: a plain callback would run on
        // asio::system_executor's threads, and could beat the check below).
        std::optional<error_code> released;
        g2.release(asio::bind_executor(ioc, [&](error_code e) { released = e; }));
        BOOST_TEST(!released.has_value());
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return released.has_value(); }));
        BOOST_TEST(!*released);
    });
}

BOOST_AUTO_TEST_CASE(waiting_for_a_loss_ends_with_a_release_or_a_cancellation)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto x = unique_path("multi-wx"), y = unique_path("multi-wy");
        multi_lock m(mutex(ss[0], x), mutex(ss[0], y));
        auto g = co_await m.acquire(5s, use_awaitable);
        asio::cancellation_signal sig;
        bool finished = false;
        zklock::error_code wec;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [e, r] = co_await g.async_wait_lost(asio::bind_cancellation_slot(sig.slot(), tuple_awaitable));
            wec = e;
            finished = true;
        }, asio::detached);
        co_await pause(50ms);
        BOOST_TEST(!finished);  // nothing lost
        sig.emit(asio::cancellation_type::terminal);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return finished; }));
        BOOST_TEST(wec == asio::error::operation_aborted);
        co_await g.release(use_awaitable);
        auto [e2, r2] = co_await g.async_wait_lost(tuple_awaitable);  // released: nothing to wait for
        BOOST_TEST(e2 == zklock::error::not_held);
        BOOST_TEST(co_await nothing_left(ss[0], paths(x, y)));
    });
}

// A lease bounds the hold of all the locks together, from the first grant (issue 25: multi_lock takes a
// lease as the other recipes do).
BOOST_AUTO_TEST_CASE(a_lease_holds_all_the_locks_at_most_that_long)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto x = unique_path("multi-lx"), y = unique_path("multi-ly"), z = unique_path("multi-lz");
        multi_lock m(items(mutex(ss[0], x), lock_item::shared(shared_mutex(ss[0], y)), semaphore(ss[0], z, 1)));

        // Zero is refused before anything is made.
        auto [ec0, g0] = co_await m.acquire(5s, zklock::lease(0s), tuple_awaitable);
        BOOST_TEST(ec0 == zklock::error::invalid_lease);
        BOOST_TEST(co_await nothing_left(ss[0], paths(x, y)));

        // Held together, then all run out: the multi guard hears it, and another session gets each lock.
        const auto t0 = std::chrono::steady_clock::now();
        auto g = co_await m.acquire(5s, zklock::lease(400ms), use_awaitable);
        BOOST_TEST(g.guards().size() == 3u);
        auto [wec, why] = co_await g.async_wait_lost(tuple_awaitable);
        const auto held_for = std::chrono::steady_clock::now() - t0;
        BOOST_TEST(!wec);
        BOOST_TEST(why == zklock::error::lease_expired);
        BOOST_TEST(held_for >= 400ms);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {  // the others run out about together
            for (const auto& one : g.guards())
                if (one.lost() != zklock::error::lease_expired) co_return false;
            co_return true;
        }));
        mutex other_x(ss[1], x);
        shared_mutex other_y(ss[1], y);
        semaphore other_z(ss[1], z, 1);
        auto gx = co_await other_x.acquire(3s, use_awaitable);
        auto gy = co_await other_y.acquire(3s, use_awaitable);  // the write side: no reader is left
        auto gz = co_await other_z.acquire(3s, use_awaitable);
        co_await g.release(tuple_awaitable);
        co_await gx.release(use_awaitable);
        co_await gy.release(use_awaitable);
        co_await gz.release(use_awaitable);
        BOOST_TEST(co_await nothing_left(ss[0], paths(x, y, z + "/leases")));
    });
}

BOOST_AUTO_TEST_CASE(a_lease_that_runs_out_before_the_last_lock_fails_the_acquire)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto x = unique_path("multi-ox"), y = unique_path("multi-oy");
        mutex hold_y(ss[1], y);
        auto gy = co_await hold_y.acquire(5s, use_awaitable);
        multi_lock m(mutex(ss[0], x), mutex(ss[0], y));
        zklock::error_code ec{zklock::error::not_held};
        bool finished = false;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [e, g] = co_await m.acquire(5s, zklock::lease(200ms), tuple_awaitable);
            ec = e;
            finished = true;
        }, asio::detached);
        // x is taken first (path order); once its node is there, let y go only after x's lease has run out.
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return !(co_await children(ss[1], x)).empty(); }));
        co_await pause(300ms);
        co_await gy.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return finished; }));
        BOOST_TEST(ec == zklock::error::lease_expired);
        BOOST_TEST(co_await nothing_left(ss[0], paths(x, y)));
    });
}

// The lease counts from the first lock's grant, not from when that grant's completion ran: a handler's
// executor busy for a second after the grant (here: not run at all) does not lengthen the later locks'
// leases, so every lock's lease ends together (issue 48.2).
BOOST_AUTO_TEST_CASE(a_lease_counts_from_the_first_grant_when_its_completion_runs_late)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    asio::io_context late;  // the handler's executor, run only a second after the first grant
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto x = unique_path("multi-gx"), y = unique_path("multi-gy");
        multi_lock m(mutex(ss[0], x), mutex(ss[0], y));
        std::optional<std::pair<error_code, multi_guard>> done;
        m.acquire(5s, zklock::lease(2s),
                  asio::bind_executor(late, [&](error_code ec, multi_guard g) { done.emplace(ec, std::move(g)); }));
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return !(co_await children(ss[0], x)).empty(); }));
        co_await pause(1s);
        while (!done) {  // the steps run on this thread from now on, each as soon as it is posted
            late.poll();
            late.restart();
            co_await pause(1ms);
        }
        BOOST_REQUIRE(!done->first);
        const auto& held = done->second.guards();
        BOOST_REQUIRE(held.size() == 2u);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return held[0].lost().failed(); }, 5s));
        BOOST_TEST(held[0].lost() == zklock::error::lease_expired);
        const auto first_ended = std::chrono::steady_clock::now();
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return held[1].lost().failed(); }, 5s));
        const auto gap = std::chrono::steady_clock::now() - first_ended;
        BOOST_TEST_MESSAGE("the second lock's lease ended "
                           << std::chrono::duration_cast<std::chrono::milliseconds>(gap).count() << " ms after the first's");
        BOOST_TEST((gap < 300ms), "the second lock's lease was counted from the late completion, not the grant");
        co_await done->second.release(tuple_awaitable);
        BOOST_TEST(co_await nothing_left(ss[0], paths(x, y)));
    });
}

// A lock lost while the acquire waits for the next one is not handed out: the acquire gives everything
// back and completes with that loss, as every single-lock acquire refuses to hand out a lost guard.
BOOST_AUTO_TEST_CASE(a_lock_lost_before_the_last_one_is_held_fails_the_acquire)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto x = unique_path("multi-dx"), y = unique_path("multi-dy");
        mutex hold_y(ss[1], y);
        auto gy = co_await hold_y.acquire(5s, use_awaitable);
        multi_lock m(mutex(ss[0], x), mutex(ss[0], y));
        zklock::error_code ec{zklock::error::not_held};
        multi_guard got;
        bool finished = false;
        asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
            auto [e, g] = co_await m.acquire(10s, tuple_awaitable);
            ec = e;
            got = std::move(g);
            finished = true;
        }, asio::detached);
        // x is taken first (path order), then the acquire waits for y. An operator deletes x's node; then y
        // is let go. The session hears of x's deletion before y's grant (one session's events in zxid order).
        std::vector<std::string> xs;
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> {
            xs = co_await children(ss[1], x);
            co_return !xs.empty();
        }));
        BOOST_REQUIRE(xs.size() == 1u);
        co_await ss[1].async_remove(x + "/" + xs[0], -1, use_awaitable);
        co_await gy.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return finished; }));
        BOOST_TEST(ec == zklock::error::lock_node_deleted);
        BOOST_TEST(!got.owns_lock());
        BOOST_TEST(co_await nothing_left(ss[1], paths(x, y)));
    });
}

BOOST_AUTO_TEST_SUITE_END()  // multi_lock_tests
