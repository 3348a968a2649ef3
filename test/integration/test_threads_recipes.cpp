// The read/write lock, the semaphore and the multi-lock in a multi-threaded Asio service: an io_context
// on four threads, sessions on strands, connections on strands of their own cancelling acquires with ||,
// with a signal and by timeout, releasing from plain threads through use_future. The test checks
// exclusion itself (no reader beside a writer, at most N lease holders). Run under ThreadSanitizer by
// scripts/test.sh.
#define BOOST_TEST_MODULE zklock threads recipes
#include "test_util.hpp"

#include <zklock/multi_lock.hpp>

#include <future>
#include <random>
#include <thread>

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
    asio::io_context ioc(4);
    auto work = asio::make_work_guard(ioc);
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) threads.emplace_back([&] { ioc.run(); });

    const auto hosts = shared_server().connect_string();
    auto strand_a = asio::make_strand(ioc), strand_b = asio::make_strand(ioc);
    auto a = std::make_unique<session>(strand_a, config_for(hosts));
    auto b = std::make_unique<session>(strand_b, config_for(hosts));
    const auto rw_path = unique_path("threads-rw"), sem_path = unique_path("threads-sem");
    on(strand_a, [&]() -> asio::awaitable<void> { co_await a->async_connect(use_awaitable); });
    on(strand_b, [&]() -> asio::awaitable<void> { co_await b->async_connect(use_awaitable); });
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
    work.reset();
    for (auto& t : threads) t.join();
}
