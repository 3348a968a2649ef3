// The cancellation table of what a holder does with its guard, against a real ZooKeeper: releases honour
// terminal and partial and ignore total (a release cannot be undone); the waits (loss, revocation, a
// waiter's place) honour every type; a lease extension never waits, so a
// signal changes nothing; a late signal does nothing. Each case checks the nodes left and that the
// session still works.
#include "cancellation_util.hpp"

#include <zklock/revoke.hpp>

BOOST_AUTO_TEST_SUITE(cancellation_guard_tests)

using namespace test;
using namespace test::cancel;
using zklock::guard;
using zklock::mutex;
using zklock::session;
namespace data = boost::unit_test::data;

// Named, not anonymous: the data-driven cases are templates that refer to it.
namespace guard_table {

/// What a case works on: a lock at `path` held by `s` (two locks for the multi_guard verbs), another session.
struct scene {
    session& s;
    session& other;
    std::string path;
    std::vector<guard> held;
    zklock::multi_guard multi;
    std::vector<std::string> dirs() const { return {path + "/a", path + "/b"}; }
};

/// One verb: how it starts on the scene, and what makes it complete by itself (for the completed stage).
struct guard_verb {
    const char* name;
    std::function<void(scene&, bound_record)> start;
    std::function<asio::awaitable<void>(scene&)> complete_it;
};

asio::awaitable<void> delete_first_node(scene& sc)
{
    const auto& g = sc.multi ? sc.multi.guards().front() : sc.held.front();
    co_await sc.other.async_remove(g.node(), -1, use_awaitable);
}

const std::vector<guard_verb>& verbs()
{
    static const std::vector<guard_verb> all{
        {"guard::release", [](scene& sc, bound_record h) { sc.held.front().release(h); }, nullptr},
        {"guard::async_wait_lost", [](scene& sc, bound_record h) { sc.held.front().async_wait_lost(h); }, delete_first_node},
        {"guard::async_wait_revoked", [](scene& sc, bound_record h) { sc.held.front().async_wait_revoked(h); },
         [](scene& sc) -> asio::awaitable<void> {
             co_await zklock::async_request_revoke(sc.other, sc.held.front().node(), use_awaitable);
         }},
        {"multi_guard::release", [](scene& sc, bound_record h) { sc.multi.release(h); }, nullptr},
        {"multi_guard::async_wait_lost", [](scene& sc, bound_record h) { sc.multi.async_wait_lost(h); }, delete_first_node},
    };
    return all;
}
bool is_release(const guard_verb& v) { return !v.complete_it; }
bool of_multi(const guard_verb& v) { return std::string_view(v.name).starts_with("multi_guard"); }

std::vector<row> guard_rows()
{
    return table_rows(verbs(), [](const guard_verb& v) {
        return is_release(v) ? rows_for(v.name, {stage::disconnected, stage::in_flight, stage::completed}, as_release)
                             : rows_for(v.name, {stage::queued, stage::completed}, as_undoable);
    });
}

asio::awaitable<void> take_locks(scene& sc, bool multi)
{
    if (multi) {
        zklock::multi_lock both(mutex(sc.s, sc.path + "/a"), mutex(sc.s, sc.path + "/b"));
        sc.multi = co_await both.acquire(5s, use_awaitable);
    } else {
        mutex m(sc.s, sc.path + "/a");
        sc.held.push_back(co_await m.acquire(5s, use_awaitable));
    }
}

asio::awaitable<bool> none_left(scene& sc)
{
    for (const auto& d : sc.dirs())
        if (!(co_await children(sc.other, d)).empty()) co_return false;
    co_return true;
}

}  // namespace guard_table
using namespace guard_table;

BOOST_DATA_TEST_CASE(guard_verbs, data::make(guard_rows()), r)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto& v = named(verbs(), r.verb);
        scene sc{ss[0], ss[1], unique_path("cancel-guard"), {}, {}};
        co_await take_locks(sc, of_multi(v));
        probe p(ioc);
        auto complete_it = [&]() -> asio::awaitable<void> {
            if (r.at == stage::completed && v.complete_it) co_await v.complete_it(sc);
        };
        co_await emit_at_stage(r, sc.s, shared_server(), p, [&] { v.start(sc, p.handler()); }, complete_it);
        if (r.at == stage::queued) {  // the wait ended, the hold did not: it still holds and releases
            const auto& g = of_multi(v) ? sc.multi.guards().front() : sc.held.front();
            BOOST_TEST(g.owns_lock());
            BOOST_TEST(!g.lost(), r << ": " << g.lost().message());
        }
        for (auto& g : sc.held) co_await g.release(tuple_awaitable);
        co_await sc.multi.release(tuple_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return co_await none_left(sc); }, 20s),
                   r << ": a node was left behind");
        // The session works: the lock can be taken again.
        mutex again(sc.s, sc.path + "/a");
        auto [ec, g] = co_await again.acquire(5s, tuple_awaitable);
        BOOST_TEST(!ec, r << ": " << ec.message());
        BOOST_TEST_MESSAGE("measured: " << r << " (" << p.result->ec.message() << ")");
    });
}

// A lease extension never waits for ZooKeeper: it supports no cancellation, and a signal emitted right
// after it started leaves it to complete with its real result.
BOOST_DATA_TEST_CASE(extend_lease, data::make(rows_for("guard::async_extend_lease", {stage::before_send},
                                                       [](asio::cancellation_type, stage) { return expect::nothing; })),
                     r)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        mutex m(ss[0], unique_path("cancel-extend"));
        auto g = co_await m.acquire(5s, zklock::lease(1s), use_awaitable);
        probe p(ioc);
        g.async_extend_lease(60s, p.handler());
        p.emit(r.type);
        co_await check_at_once(r, *p.result);
        co_await pause(1500ms);  // past the first lease's end: the extension applied
        BOOST_TEST(!g.lost(), r << ": " << g.lost().message());
        auto [ec] = co_await g.release(tuple_awaitable);
        BOOST_TEST(!ec);
        BOOST_TEST_MESSAGE("measured: " << r << " (" << p.result->ec.message() << ")");
    });
}

// A waiter's place: any type ends the wait; a late signal does nothing.
BOOST_DATA_TEST_CASE(wait_place, data::make(rows_for("mutex::async_wait_place", {stage::queued, stage::completed}, as_undoable)), r)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto path = unique_path("cancel-place");
        mutex held_by_other(ss[1], path), m(ss[0], path);
        auto other = co_await held_by_other.acquire(5s, use_awaitable);
        probe acquire(ioc);
        m.acquire(60s, acquire.handler());
        const auto place = co_await m.async_wait_place(0, use_awaitable);
        BOOST_REQUIRE(place == 1u);
        probe p(ioc);
        auto release_other = [&]() -> asio::awaitable<void> {  // at the completed stage: the place becomes 0
            if (r.at == stage::completed) co_await other.release(use_awaitable);
        };
        co_await emit_at_stage(r, ss[0], shared_server(), p, [&] { m.async_wait_place(place, p.handler()); }, release_other);
        BOOST_TEST(!acquire.result->ec, r);  // the acquire goes on
        if (other) co_await other.release(use_awaitable);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return acquire.result->done; }), r);
        BOOST_TEST(!acquire.result->ec, r << ": " << acquire.result->ec.message());
        BOOST_TEST_MESSAGE("measured: " << r << " (" << p.result->ec.message() << ")");
    });
}

BOOST_AUTO_TEST_SUITE_END()  // cancellation_guard_tests
