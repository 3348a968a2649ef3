// The read/write lock, the semaphore and the multi-lock in a multi-threaded Asio service: an io_context
// on four threads, sessions on strands, connections on strands of their own cancelling acquires with ||,
// with a signal and by timeout, releasing from plain threads through use_future. The test checks
// exclusion itself (no reader beside a writer, at most N lease holders). Run under ThreadSanitizer by
// scripts/test.sh.
#include "test_util.hpp"

#include <zklock/multi_lock.hpp>

#include <future>
#include <random>
#include <thread>

BOOST_AUTO_TEST_SUITE(thread_recipe_tests)

using namespace test;
using namespace boost::asio::experimental::awaitable_operators;
using zklock::guard;
using zklock::lock_item;
using zklock::session;

namespace {

/// Who is inside, from any thread: readers, writers and lease holders.
struct room {
    int leases;
    std::atomic<int> readers{0}, writers{0}, holders{0}, violations{0}, sections{0}, cancelled{0}, errors{0};
    void enter(int kind)  // 0 reader, 1 writer, 2 lease holder
    {
        ++sections;
        if (kind == 0 && (++readers, writers.load() != 0)) ++violations;
        if (kind == 1 && (writers.fetch_add(1) != 0 || readers.load() != 0)) ++violations;
        if (kind == 2 && holders.fetch_add(1) >= leases) ++violations;
    }
    void leave(int kind) { (kind == 0 ? readers : kind == 1 ? writers : holders).fetch_sub(1); }
};

/// lock_item's acquire with any completion token.
template <class Token>
auto acquire(const lock_item& l, zklock::detail::deadline d, Token&& token)
{
    return asio::async_initiate<Token, void(zklock::error_code, guard)>(
        [&l](auto h, zklock::detail::deadline dl) { l.start(dl, std::move(h)); }, token, d);
}

asio::awaitable<void> connection(lock_item item, int kind, room& r, int id, int iterations)
{
    auto strand = co_await asio::this_coro::executor;
    std::mt19937 rng(static_cast<unsigned>(id));
    auto jitter = [&] { return std::chrono::microseconds(std::uniform_int_distribution<int>(0, 3000)(rng)); };
    for (int k = 0; k < iterations; ++k) {
        std::optional<guard> got;
        auto take = [&](zklock::error_code ec, guard g) {
            if (!ec) got = std::move(g);
            else if (ec == asio::error::operation_aborted || ec == zklock::error::timeout) ++r.cancelled;
            else ++r.errors;
        };
        switch ((k + id) % 4) {
        case 0: {  // cancelled by ||
            asio::steady_timer t(strand, jitter());
            auto res = co_await (acquire(item, std::nullopt, tuple_awaitable) || t.async_wait(tuple_awaitable));
            if (res.index() == 0) std::apply(take, std::move(std::get<0>(res)));
            else ++r.cancelled;
            break;
        }
        case 1: {  // cancelled by a signal emitted on this strand
            auto sig = std::make_shared<asio::cancellation_signal>();
            asio::steady_timer t(strand, jitter());
            t.async_wait([sig](zklock::error_code ec) {
                if (!ec) sig->emit(asio::cancellation_type::terminal);
            });
            auto [ec, g] = co_await acquire(item, std::nullopt, asio::bind_cancellation_slot(sig->slot(), tuple_awaitable));
            t.cancel();
            take(ec, std::move(g));
            break;
        }
        case 2: {  // a short deadline
            auto [ec, g] = co_await acquire(item, std::chrono::steady_clock::now() + jitter() + 1ms, tuple_awaitable);
            take(ec, std::move(g));
            break;
        }
        default: {  // released by a plain thread through use_future
            auto [ec, g] = co_await acquire(item, std::chrono::steady_clock::now() + 30s, tuple_awaitable);
            if (ec) {
                ++r.errors;
                break;
            }
            std::atomic<bool> done{false};
            std::thread worker([&r, &done, kind, g = std::move(g)]() mutable {
                r.enter(kind);
                std::this_thread::yield();
                r.leave(kind);
                try {
                    g.release(asio::use_future).get();
                } catch (const std::exception&) {
                    ++r.errors;
                }
                done = true;
            });
            co_await eventually([&]() -> asio::awaitable<bool> { co_return done.load(); }, 30s);
            worker.join();
            continue;
        }
        }
        if (!got) continue;
        r.enter(kind);
        co_await yield();
        r.leave(kind);
        if (k % 2) co_await got->release(tuple_awaitable);
        else got.reset();
    }
}

}  // namespace

BOOST_AUTO_TEST_CASE(readers_writers_and_leases_from_many_threads)
{
    threaded_sessions service(2);
    auto& ioc = service.ioc;
    auto strand_a = service.strands[0], strand_b = service.strands[1];
    auto& a = service.all[0];
    auto& b = service.all[1];
    const auto rw_path = unique_path("threads-rw"), sem_path = unique_path("threads-sem");
    // Lock objects are made on their session's executor; copies may be used anywhere.
    struct items {
        std::optional<lock_item> read, write, lease;
    };
    auto make = [&](session& s) -> asio::awaitable<items> {
        zklock::shared_mutex rw(s, rw_path, {.local_handoff_limit = 3, .acl = zklock::open_acl()});
        co_return items{lock_item::shared(rw), lock_item::exclusive(rw),
                        lock_item(zklock::semaphore(s, sem_path, 2, {.local_handoff_limit = 3, .acl = zklock::open_acl()}))};
    };
    auto ia = on(strand_a, [&] { return make(*a); });
    auto ib = on(strand_b, [&] { return make(*b); });

    room r{2};
    std::vector<std::future<void>> running;
    for (int i = 0; i < 12; ++i) {
        auto& mine = i % 2 ? ia : ib;
        const int kind = i % 3;
        const auto& item = kind == 0 ? *mine.read : kind == 1 ? *mine.write : *mine.lease;
        running.push_back(asio::co_spawn(asio::make_strand(ioc), connection(item, kind, r, i, 30), asio::use_future));
    }
    // A plain thread taking a read side, a write side and a lease together, through futures alone.
    std::thread plain([&] {
        auto m = on(strand_a, [&]() -> asio::awaitable<std::optional<zklock::multi_lock>> {
            std::vector<lock_item> v;
            v.push_back(*ia.lease);
            v.push_back(*ib.write);
            co_return zklock::multi_lock(std::move(v));
        });
        for (int k = 0; k < 10; ++k) {
            try {
                auto g = m->acquire(30s, asio::use_future).get();
                r.enter(1);
                r.enter(2);
                r.leave(2);
                r.leave(1);
                g.release(asio::use_future).get();
            } catch (const std::exception&) {
                ++r.errors;
            }
        }
        on(strand_a, [&]() -> asio::awaitable<void> { m.reset(); co_return; });
    });
    for (auto& f : running) BOOST_CHECK_NO_THROW(f.get());
    plain.join();

    BOOST_TEST_MESSAGE("sections " << r.sections << ", cancelled " << r.cancelled << ", errors " << r.errors);
    BOOST_TEST(r.violations == 0);
    BOOST_TEST(r.errors == 0);
    BOOST_TEST(r.sections > 100);
    BOOST_TEST(r.cancelled > 0);
    const auto left = on(strand_a, [&]() -> asio::awaitable<std::size_t> {
        co_await eventually([&]() -> asio::awaitable<bool> {
            co_return (co_await children(*a, rw_path)).empty() && (co_await children(*a, sem_path + "/leases")).empty();
        });
        co_return (co_await children(*a, rw_path)).size() + (co_await children(*a, sem_path + "/leases")).size();
    });
    BOOST_TEST(left == 0u, "lock nodes were left behind");

    on(strand_a, [&]() -> asio::awaitable<void> {
        { auto drop = std::move(ia); }
        co_await a->async_close(use_awaitable);
        a.reset();
    });
    on(strand_b, [&]() -> asio::awaitable<void> {
        { auto drop = std::move(ib); }
        co_await b->async_close(use_awaitable);
        b.reset();
    });
}

// Leases, their extension and a waiter's place, from other threads: coroutines on strands of their own
// extend their leases while holding (exclusion checked), a plain thread's hold runs out while it blocks
// (told lease_expired through use_future), and a plain thread waits for its place and cancels the wait.
BOOST_AUTO_TEST_CASE(leases_and_places_from_other_threads)
{
    threaded_sessions service(2);
    auto& ioc = service.ioc;
    auto strand_a = service.strands[0], strand_b = service.strands[1];
    auto& a = service.all[0];
    auto& b = service.all[1];
    const auto path = unique_path("threads-lease");
    auto ma = on(strand_a, [&]() -> asio::awaitable<std::optional<zklock::mutex>> { co_return zklock::mutex(*a, path); });
    auto mb = on(strand_b, [&]() -> asio::awaitable<std::optional<zklock::mutex>> { co_return zklock::mutex(*b, path); });

    // A plain thread holds with a short lease and then blocks: the lease runs out all the same.
    auto short_hold = ma->acquire(10s, zklock::lease(300ms), asio::use_future).get();
    auto told = short_hold.async_wait_lost(asio::use_future);
    BOOST_TEST(told.get() == zklock::error_code(zklock::error::lease_expired));
    // Errors through a plain callback and a promise: use_future would carry them as exceptions, whose
    // reference counts live in an uninstrumented libstdc++ (ThreadSanitizer would report their release).
    std::promise<zklock::error_code> released;
    short_hold.release([&](zklock::error_code ec) { released.set_value(ec); });
    BOOST_TEST(released.get_future().get() == zklock::error::lease_expired);

    std::atomic<int> inside{0}, violations{0}, sections{0}, errors{0};
    auto worker = [&](zklock::mutex& m) -> asio::awaitable<void> {
        for (int k = 0; k < 15; ++k) {
            auto [ec, g] = co_await m.acquire(30s, zklock::lease(5s), tuple_awaitable);
            if (ec) {
                ++errors;
                continue;
            }
            if (inside.fetch_add(1) != 0) ++violations;
            ++sections;
            auto [xec] = co_await g.async_extend_lease(5s, tuple_awaitable);  // from this strand: hops over
            if (xec) ++errors;
            co_await yield();
            inside.fetch_sub(1);
            co_await g.release(tuple_awaitable);
        }
    };
    std::vector<std::future<void>> running;
    for (int i = 0; i < 8; ++i)
        running.push_back(asio::co_spawn(asio::make_strand(ioc), worker(i % 2 ? *ma : *mb), asio::use_future));
    // A plain thread waits for session b's place and gives up by its own signal. (Boost.Test is not
    // thread-safe: the thread keeps what it saw, checked after the join.)
    std::size_t first = 0;
    bool place_ok = false;
    std::thread plain([&] {
        asio::cancellation_signal stop;
        first = mb->async_wait_place(1000, asio::use_future).get();  // 1000 is not its place: at once
        // A wait for a change from its current place, cancelled by this thread's own signal.
        std::promise<std::pair<zklock::error_code, std::size_t>> again;
        mb->async_wait_place(first, asio::bind_cancellation_slot(stop.slot(), [&](zklock::error_code ec, std::size_t p) {
            again.set_value({ec, p});
        }));
        stop.emit(asio::cancellation_type::terminal);
        const auto [ec, where] = again.get_future().get();
        // Its place may also have changed first: then it completes with the new one.
        place_ok = ec == asio::error::operation_aborted || (!ec && where != first);
    });
    for (auto& f : running) BOOST_CHECK_NO_THROW(f.get());
    plain.join();
    BOOST_TEST(first < 1000u);
    BOOST_TEST(place_ok);
    BOOST_TEST(violations == 0);
    BOOST_TEST(errors == 0);
    BOOST_TEST(sections == 120);

    on(strand_a, [&]() -> asio::awaitable<void> {
        ma.reset();
        co_await a->async_close(use_awaitable);
        a.reset();
    });
    on(strand_b, [&]() -> asio::awaitable<void> {
        mb.reset();
        co_await b->async_close(use_awaitable);
        b.reset();
    });
}

BOOST_AUTO_TEST_SUITE_END()  // thread_recipe_tests
