// The cancellation table of the acquires, against a real ZooKeeper: every type, at every stage before the
// grant, completes the acquire at once with operation_aborted and leaves no node; after the grant a signal
// does nothing; the session works afterwards. multi_lock included (its composed operation must let
// partial and total through).
#include "cancellation_util.hpp"

BOOST_AUTO_TEST_SUITE(cancellation_acquire_tests)

using namespace test;
using namespace test::cancel;
using zklock::guard;
using zklock::session;
namespace data = boost::unit_test::data;

// Named, not anonymous: the data-driven cases are templates that refer to it.
namespace acquire_table {

/// One kind of acquire: the lock directories it makes nodes in, how it starts (the lock objects are
/// kept alive by what it returns), and how another session makes it wait.
struct lock_kind {
    const char* name;
    std::vector<std::string> (*dirs)(const std::string& path);
    std::function<std::shared_ptr<void>(session&, const std::string& path, bound_record)> start;
    std::function<asio::awaitable<std::vector<guard>>(session&, const std::string& path)> hold;
};

std::vector<std::string> one_dir(const std::string& p) { return {p}; }
std::vector<std::string> semaphore_dirs(const std::string& p) { return {p + "/leases", p + "/locks"}; }
std::vector<std::string> multi_dirs(const std::string& p) { return {p + "/a", p + "/b"}; }

template <class Lock, class Start>
std::shared_ptr<void> keep(Lock l, Start start)
{
    auto kept = std::make_shared<Lock>(std::move(l));
    start(*kept);
    return kept;
}

/// Holds one guard of `lock`, acquired by `acquire`.
template <class Lock, class Acquire>
asio::awaitable<std::vector<guard>> held(Lock lock, Acquire acquire)
{
    std::vector<guard> out;
    out.push_back(co_await acquire(lock));
    co_return out;
}

const std::vector<lock_kind>& kinds()
{
    using zklock::multi_lock;
    using zklock::mutex;
    using zklock::semaphore;
    using zklock::shared_mutex;
    using path_t = const std::string&;
    static const std::vector<lock_kind> all{
        {"mutex", one_dir,
         [](session& s, path_t p, bound_record h) { return keep(mutex(s, p), [&](mutex& m) { m.acquire(60s, h); }); },
         [](session& o, path_t p) { return held(mutex(o, p), [](mutex& m) { return m.acquire(5s, use_awaitable); }); }},
        {"shared_mutex write", one_dir,
         [](session& s, path_t p, bound_record h) { return keep(shared_mutex(s, p), [&](shared_mutex& m) { m.acquire(60s, h); }); },
         [](session& o, path_t p) {
             return held(shared_mutex(o, p), [](shared_mutex& m) { return m.acquire_shared(5s, use_awaitable); });
         }},
        {"shared_mutex read", one_dir,
         [](session& s, path_t p, bound_record h) {
             return keep(shared_mutex(s, p), [&](shared_mutex& m) { m.acquire_shared(60s, h); });
         },
         [](session& o, path_t p) { return held(shared_mutex(o, p), [](shared_mutex& m) { return m.acquire(5s, use_awaitable); }); }},
        {"semaphore", semaphore_dirs,
         [](session& s, path_t p, bound_record h) { return keep(semaphore(s, p, 1), [&](semaphore& m) { m.acquire(60s, h); }); },
         [](session& o, path_t p) { return held(semaphore(o, p, 1), [](semaphore& m) { return m.acquire(5s, use_awaitable); }); }},
        {"semaphore acquire_many", semaphore_dirs,
         [](session& s, path_t p, bound_record h) {
             return keep(semaphore(s, p, 2), [&](semaphore& m) { m.acquire_many(2, 60s, h); });
         },
         [](session& o, path_t p) { return held(semaphore(o, p, 2), [](semaphore& m) { return m.acquire(5s, use_awaitable); }); }},
        {"multi_lock", multi_dirs,
         [](session& s, path_t p, bound_record h) {
             return keep(multi_lock(mutex(s, p + "/a"), mutex(s, p + "/b")), [&](multi_lock& m) { m.acquire(60s, h); });
         },
         [](session& o, path_t p) { return held(mutex(o, p + "/b"), [](mutex& m) { return m.acquire(5s, use_awaitable); }); }},
    };
    return all;
}
std::vector<row> acquire_rows()
{
    return table_rows(kinds(), [](const lock_kind& k) {
        return rows_for(k.name, {stage::disconnected, stage::queued, stage::in_flight, stage::completed}, as_undoable);
    });
}

std::size_t sum(const std::vector<std::size_t>& v)
{
    std::size_t n = 0;
    for (auto x : v) n += x;
    return n;
}

/// Releases what an acquire gave; each release must succeed (the hold was not disturbed).
asio::awaitable<void> release_all(const row& r, outcome& o)
{
    for (auto& g : o.guards) {
        BOOST_TEST(g.owns_lock(), r);
        BOOST_TEST(!g.lost(), r << ": " << g.lost().message());
        auto [ec] = co_await g.release(tuple_awaitable);
        BOOST_TEST(!ec, r << ": release: " << ec.message());
    }
    if (o.multi) {
        auto [ec] = co_await o.multi.release(tuple_awaitable);
        BOOST_TEST(!ec, r << ": release: " << ec.message());
    }
}

}  // namespace acquire_table
using namespace acquire_table;

BOOST_DATA_TEST_CASE(acquires, data::make(acquire_rows()), r)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        auto &s = ss[0], &other = ss[1];
        const auto& k = named(kinds(), r.verb);
        const auto path = unique_path("cancel-acquire");
        const auto dirs = k.dirs(path);
        std::vector<guard> others;
        if (r.at == stage::queued) others = co_await k.hold(other, path);
        const auto before = co_await counts(other, dirs);
        probe p(ioc);
        std::shared_ptr<void> lock;
        auto queued = [&]() -> asio::awaitable<void> {  // at the queued stage: its nodes are made, and wait
            if (r.at != stage::queued) co_return;
            BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return sum(co_await counts(other, dirs)) > sum(before); }));
        };
        co_await emit_at_stage(r, s, shared_server(), p, [&] { lock = k.start(s, path, p.handler()); }, queued);
        if (r.at == stage::completed) co_await release_all(r, *p.result);  // the hold was not disturbed
        // What was made for it is given back: the directories hold what they held before.
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return co_await counts(other, dirs) == before; }, 20s),
                   r << ": a node was left behind");
        others.clear();  // released in the background
        // The session works: the same acquire succeeds.
        probe again(ioc);
        auto lock2 = k.start(s, path, again.handler());
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return again.result->done; }, 20s), r);
        BOOST_TEST(!again.result->ec, r << ": " << again.result->ec.message());
        co_await release_all(r, *again.result);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return sum(co_await counts(other, dirs)) == 0; }, 20s),
                   r << ": nodes left at the end");
        BOOST_TEST_MESSAGE("measured: " << r << " (" << p.result->ec.message() << ")");
    });
}

BOOST_AUTO_TEST_SUITE_END()  // cancellation_acquire_tests
