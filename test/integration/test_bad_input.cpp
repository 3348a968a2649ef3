// Bad input gets a clear error, at once, and loses nothing: a table of what a careful new user tries,
// each row expecting a named error within a bound, with no znode left and the session still usable.
#include "test_util.hpp"

#include <zklock/election.hpp>
#include <zklock/participants.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/shared_mutex.hpp>
#include <zklock/validation.hpp>

#include <cmath>
#include <limits>

BOOST_AUTO_TEST_SUITE(bad_input_tests)

using namespace test;
using zklock::mutex;
using zklock::session;
using zerr = zklock::error;

namespace {

using std::chrono::duration;

/// A connected session, another one holding the lock of `held`, and a clean directory per test.
struct fixture {
    asio::io_context& ioc;
    session s, holder;
    std::string root = unique_path("bad-input");
    std::string held = root + "/held";
    zklock::guard holding;
    explicit fixture(asio::io_context& io)
        : ioc(io), s(io, config_for(shared_server().connect_string())), holder(io, config_for(shared_server().connect_string()))
    {
    }
    asio::awaitable<void> start()
    {
        co_await s.async_connect(use_awaitable);
        co_await holder.async_connect(use_awaitable);
        mutex m(holder, held);
        holding = co_await m.acquire(5s, use_awaitable);
    }
};

using step = std::function<asio::awaitable<error_code>(fixture&)>;

struct row {
    std::string name;
    step run;
    error_code expected;
    std::chrono::milliseconds within = 1s;
};

step acquire_at(std::string path)
{
    return [path](fixture& f) -> asio::awaitable<error_code> {
        mutex m(f.s, path);
        auto [ec, g] = co_await m.acquire(1s, tuple_awaitable);
        co_return ec;
    };
}

step acquire_shared_mutex_at(std::string path, bool writer)
{
    return [path, writer](fixture& f) -> asio::awaitable<error_code> {
        zklock::shared_mutex rw(f.s, path);
        if (writer) {
            auto [ec, g] = co_await rw.acquire(1s, tuple_awaitable);
            co_return ec;
        }
        auto [ec, g] = co_await rw.acquire_shared(1s, tuple_awaitable);
        co_return ec;
    };
}

step acquire_lease_at(std::string path)
{
    return [path](fixture& f) -> asio::awaitable<error_code> {
        zklock::semaphore sem(f.s, path, 2);
        auto [ec, g] = co_await sem.acquire(1s, tuple_awaitable);
        co_return ec;
    };
}

/// An acquire of the held lock that must still be waiting after 300 ms (no deadline, or a long one),
/// then is cancelled; a timeout that overflowed gave up at once instead.
template <class Duration>
step waits_on_held(Duration timeout)
{
    return [timeout](fixture& f) -> asio::awaitable<error_code> {
        mutex m(f.s, f.held);
        asio::steady_timer t(f.ioc, 300ms);
        using namespace boost::asio::experimental::awaitable_operators;
        auto r = co_await (m.acquire(timeout, tuple_awaitable) || t.async_wait(tuple_awaitable));
        if (r.index() == 0) co_return std::get<0>(std::get<0>(r));  // finished early: the error says why
        co_return error_code{};                                       // still waiting: right
    };
}

template <class Duration>
step one_look_on_held(Duration timeout)
{
    return [timeout](fixture& f) -> asio::awaitable<error_code> {
        mutex m(f.s, f.held);
        auto [ec, g] = co_await m.acquire(timeout, tuple_awaitable);
        co_return ec;
    };
}

step connect_with(std::function<void(zklock::session_config&)> change)
{
    return [change](fixture& f) -> asio::awaitable<error_code> {
        auto cfg = config_for(shared_server().connect_string());
        change(cfg);
        session s(f.ioc, cfg);
        auto [ec] = co_await s.async_connect(tuple_awaitable);
        co_return ec;
    };
}

step hosts(std::string h)
{
    return connect_with([h](zklock::session_config& c) { c.hosts = h; });
}

std::vector<row> rows()
{
    std::vector<row> r;
    auto path = [&](std::string name, std::string p) { r.push_back({"path " + name, acquire_at(p), zerr::invalid_path}); };
    path("empty", "");
    path("relative", "locks/a");
    path("trailing slash", "/locks/a/");
    path("root", "/");
    path("double slash", "//locks");
    path("empty part", "/locks//a");
    path("dot", "/locks/./a");
    path("dot dot", "/locks/../a");
    path("ends in dot", "/locks/.");
    path("NUL", std::string("/locks/a\0b", 10));
    path("control", "/locks/a\x01");
    path("DEL", "/locks/a\x7f");
    path("U+0080", "/locks/a\xc2\x80");
    path("U+009F", "/locks/a\xc2\x9f");
    path("invalid byte", "/locks/a\xff");
    path("overlong", "/locks/a\xc0\xaf");
    path("surrogate", "/locks/a\xed\xa0\x80");
    path("private use", "/locks/a\xee\x80\x80");
    path("U+FFF0", "/locks/a\xef\xbf\xb0");
    path("truncated", "/locks/a\xe2\x82");
    path("40 KB", "/locks/" + std::string(40 * 1024, 'x'));
    path("2 MB", "/locks/" + std::string(2 * 1024 * 1024, 'x'));
    // Valid paths of `size` bytes in the test's directory, with no room for each kind's nodes below them.
    for (const std::size_t size : {zklock::max_lock_path_length + 1, std::size_t{32'724}, zklock::max_path_length}) {
        using make_step = std::function<step(std::string)>;
        for (const auto& [kind, make] : std::vector<std::pair<std::string, make_step>>{
                 {"mutex", acquire_at},
                 {"reader", [](std::string p) { return acquire_shared_mutex_at(std::move(p), false); }},
                 {"writer", [](std::string p) { return acquire_shared_mutex_at(std::move(p), true); }},
                 {"lease", acquire_lease_at}})
            r.push_back({kind + " on a path of " + std::to_string(size) + " bytes",
                         [size, make](fixture& f) -> asio::awaitable<error_code> {
                             const auto acquire = make(f.root + "/" + std::string(size - f.root.size() - 1, 'p'));
                             co_return co_await acquire(f);  // `acquire` outlives its coroutine here
                         },
                         zerr::invalid_path});
    }

    auto no_deadline = [&](std::string name, step s) { r.push_back({"timeout " + name, std::move(s), {}, 2s}); };
    no_deadline("seconds::max", waits_on_held(std::chrono::seconds::max()));
    no_deadline("hours::max", waits_on_held(std::chrono::hours::max()));
    no_deadline("nanoseconds::max", waits_on_held(std::chrono::nanoseconds::max()));
    no_deadline("steady_clock::duration::max", waits_on_held(std::chrono::steady_clock::duration::max()));
    no_deadline("300 years", waits_on_held(std::chrono::years(300)));
    no_deadline("infinite double", waits_on_held(duration<double>(std::numeric_limits<double>::infinity())));
    no_deadline("1e300 s double", waits_on_held(duration<double>(1e300)));
    auto one_look = [&](std::string name, step s) { r.push_back({"timeout " + name, std::move(s), zerr::timeout}); };
    one_look("zero", one_look_on_held(0s));
    one_look("negative", one_look_on_held(-5s));
    one_look("nanoseconds::min", one_look_on_held(std::chrono::nanoseconds::min()));
    one_look("NaN", one_look_on_held(duration<double>(std::nan(""))));
    one_look("-infinity", one_look_on_held(duration<double>(-std::numeric_limits<double>::infinity())));

    auto config = [&](std::string name, std::function<void(zklock::session_config&)> c) {
        r.push_back({"config " + name, connect_with(std::move(c)), zerr::invalid_config});
    };
    config("session_timeout 0", [](auto& c) { c.session_timeout = 0ms; });
    config("session_timeout 1 ms", [](auto& c) { c.session_timeout = 1ms; });
    config("session_timeout negative", [](auto& c) { c.session_timeout = -5s; });
    config("session_timeout 1000 h", [](auto& c) { c.session_timeout = std::chrono::hours(1000); });
    config("connect_timeout 0", [](auto& c) { c.connect_timeout = 0ms; });
    config("connect_timeout negative", [](auto& c) { c.connect_timeout = -1s; });
    config("loss_grace 0", [](auto& c) { c.loss_grace = 0ms; });
    config("2 MB owner", [](auto& c) { c.owner = std::string(2 * 1024 * 1024, 'o'); });
    config("owner one byte over the bound", [](auto& c) { c.owner = std::string(zklock::max_owner_length + 1, 'o'); });
    config("2 MB secret", [](auto& c) { c.credentials.push_back({"digest", std::string(2 * 1024 * 1024, 'x')}); });
    config("empty scheme", [](auto& c) { c.credentials.push_back({"", "u:p"}); });

    auto host = [&](std::string name, std::string h, error_code e = zerr::invalid_hosts) {
        r.push_back({"hosts " + name, hosts(h), e});
    };
    host("empty", "");
    host("only a chroot", "/app");
    host("port 99999", "127.0.0.1:99999");
    host("port 0", "127.0.0.1:0");
    host("port 65536", "127.0.0.1:65536");
    host("no port", "127.0.0.1");
    host("no host", ":2181");
    host("port not a number", "127.0.0.1:abc");
    host("trailing comma", "127.0.0.1:2181,");
    host("empty entry", "127.0.0.1:2181,,127.0.0.1:2182");
    host("bad chroot", "127.0.0.1:2181/app//x");
    host("space", "127.0.0.1 :2181");
    host("unresolvable", "no-such-host.invalid:2181", zerr::unresolvable_host);

    // The election's observers read a lock's path by name: the root and a path the server would refuse are
    // refused at once, and so is a moved-from session (nothing is read).
    auto observe = [&](std::string name, std::string p, error_code e = zerr::invalid_path) {
        r.push_back({"leader of " + name, [p](fixture& f) -> asio::awaitable<error_code> {
                         auto [ec, l] = co_await zklock::async_leader(f.s, p, tuple_awaitable);
                         co_return ec;
                     },
                     e});
        r.push_back({"leader change of " + name, [p](fixture& f) -> asio::awaitable<error_code> {
                         auto [ec, l] = co_await zklock::async_wait_leader_change(f.s, p, {}, tuple_awaitable);
                         co_return ec;
                     },
                     e});
    };
    observe("the root", "/");
    observe("a relative path", "election");
    observe("a trailing slash", "/election/");
    r.push_back({"leader of a moved-from session", [](fixture& f) -> asio::awaitable<error_code> {
                     session s(f.ioc, config_for(shared_server().connect_string()));
                     session taken(std::move(s));
                     auto [ec, l] = co_await zklock::async_leader(s, f.root + "/moved", tuple_awaitable);  // NOLINT(bugprone-use-after-move)
                     co_return ec;
                 },
                 zerr::no_session});

    r.push_back({"second mutex with another ACL", [](fixture& f) -> asio::awaitable<error_code> {
                     mutex first(f.s, f.root + "/acl");
                     mutex second(f.s, f.root + "/acl", {.acl = zklock::creator_all_acl()});
                     auto [ec, g] = co_await second.acquire(1s, tuple_awaitable);
                     co_return ec;
                 },
                 zerr::conflicting_options});
    r.push_back({"second mutex with another hand-off limit", [](fixture& f) -> asio::awaitable<error_code> {
                     mutex first(f.s, f.root + "/limit");
                     mutex second(f.s, f.root + "/limit", {.local_handoff_limit = 0});
                     auto [ec, g] = co_await second.try_acquire(tuple_awaitable);
                     co_return ec;
                 },
                 zerr::conflicting_options});
    r.push_back({"mutex of a moved-from session", [](fixture& f) -> asio::awaitable<error_code> {
                     session s(f.ioc, config_for(shared_server().connect_string()));
                     session taken(std::move(s));
                     mutex m(s, f.root + "/moved");  // NOLINT(bugprone-use-after-move): that is the point
                     auto [ec, g] = co_await m.acquire(1s, tuple_awaitable);
                     co_return ec;
                 },
                 zerr::no_session});
    r.push_back({"acquire before connect", [](fixture& f) -> asio::awaitable<error_code> {
                     session s(f.ioc, config_for(shared_server().connect_string()));
                     mutex m(s, f.root + "/idle");
                     auto [ec, g] = co_await m.acquire(1s, tuple_awaitable);
                     co_return ec;
                 },
                 zerr::not_connected});
    r.push_back({"acquire after close", [](fixture& f) -> asio::awaitable<error_code> {
                     session s(f.ioc, config_for(shared_server().connect_string()));
                     co_await s.async_connect(use_awaitable);
                     co_await s.async_close(use_awaitable);
                     mutex m(s, f.root + "/closed");
                     auto [ec, g] = co_await m.acquire(1s, tuple_awaitable);
                     co_return ec;
                 },
                 zerr::session_closed});
    r.push_back({"close after a refused connect", [](fixture& f) -> asio::awaitable<error_code> {
                     auto cfg = config_for("127.0.0.1:0");
                     session s(f.ioc, cfg);
                     auto [ec] = co_await s.async_connect(tuple_awaitable);
                     if (ec != zerr::invalid_hosts) co_return ec;
                     auto [cec] = co_await s.async_close(tuple_awaitable);  // it never completed before
                     co_return cec;
                 },
                 {}});
    r.push_back({"a name that does not resolve beside one that does", [](fixture& f) -> asio::awaitable<error_code> {
                     session s(f.ioc, config_for("no-such-host.invalid:2181," + shared_server().connect_string()));
                     auto [ec] = co_await s.async_connect(tuple_awaitable);
                     co_return ec;
                 },
                 {}, 5s});
    r.push_back({"release of an empty guard", [](fixture&) -> asio::awaitable<error_code> {
                     zklock::guard g;
                     auto [ec] = co_await g.release(tuple_awaitable);
                     co_return ec;
                 },
                 zerr::not_held});
    r.push_back({"wait for loss on an empty guard", [](fixture&) -> asio::awaitable<error_code> {
                     zklock::guard g;
                     auto [ec, why] = co_await g.async_wait_lost(tuple_awaitable);
                     co_return ec;
                 },
                 zerr::not_held});
    return r;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_bad_input_gets_a_named_error_at_once_and_loses_nothing)
{
    asio::io_context ioc;
    fixture f(ioc);
    const auto table = rows();
    BOOST_TEST(table.size() >= 40u);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await f.start();
        const auto requests_before = f.s.stats().requests;
        std::size_t rows_on_held = 0;
        for (const auto& r : table) {
            const auto t0 = std::chrono::steady_clock::now();
            const auto sent_before = f.s.stats().requests;
            const auto ec = co_await r.run(f);
            const auto sent = f.s.stats().requests - sent_before;
            // A path refused is refused before anything is sent; an acquire of the held lock sends its
            // create, listing, watch and delete (a batch may count as one or several).
            // A path refused is refused before anything is sent (these rows come first: no earlier row's
            // background release is counted against them).
            if (r.expected == zerr::invalid_path) BOOST_TEST(sent == 0u, r.name << ": " << sent << " requests sent");
            if (r.name.starts_with("timeout ")) ++rows_on_held;
            const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
            BOOST_TEST(ec == r.expected, r.name << ": got '" << ec.message() << "', expected '" << r.expected.message() << "'");
            BOOST_TEST((took <= r.within), r.name << ": took " << took.count() << " ms");
            BOOST_TEST(f.s.state() == zklock::session_state::connected, r.name << ": the session suffered");
        }
        // Nothing bad was sent: the only requests on this session were the held path's acquires (at most
        // five each: create, listing, watch, delete, and a retried listing; the other rows use sessions of
        // their own or send nothing), and the directory holds only the holder's node.
        const auto requests = f.s.stats().requests - requests_before;
        BOOST_TEST_MESSAGE("requests sent for " << table.size() << " rows: " << requests << ", for "
                                                << rows_on_held << " acquires of the held lock");
        BOOST_TEST(rows_on_held >= 12u);
        BOOST_TEST(requests <= 5 * rows_on_held);
        auto left = co_await children(f.s, f.held);
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return (co_await children(f.s, f.held)).size() == 1u; }));
        BOOST_TEST((co_await children(f.s, f.root)).size() <= 1u);  // "held" and nothing else
        auto [ec, data, st] = co_await f.s.async_get_data("/", tuple_awaitable);
        BOOST_TEST(!ec, "the session still works: " << ec.message());
    }, 120s);
}

BOOST_AUTO_TEST_CASE(the_checks_explain_what_is_wrong)
{
    std::string why;
    BOOST_TEST(zklock::check_hosts("127.0.0.1:99999", &why) == zerr::invalid_hosts);
    BOOST_TEST(why.find("99999") != std::string::npos, why);
    BOOST_TEST(zklock::check_path("/locks/" + std::string(40000, 'x'), &why) == zerr::invalid_path);
    BOOST_TEST(why.find("bytes") != std::string::npos, why);
    zklock::session_config c;
    c.session_timeout = 1ms;
    BOOST_TEST(zklock::check_config(c, &why) == zerr::invalid_config);
    BOOST_TEST(why.find("ticks") != std::string::npos, why);
    c = {};
    c.owner = std::string(2 * 1024 * 1024, 'o');
    BOOST_TEST(zklock::check_config(c, &why) == zerr::invalid_config);
    BOOST_TEST(why.find("owner is 2097152 bytes; at most 4096") != std::string::npos, why);
    c.owner = std::string(zklock::max_owner_length, 'o') + "\n" + std::string(100, 'x');  // the first line is written
    BOOST_TEST(!zklock::check_config(c));
    BOOST_TEST(zklock::check_lock_path("/" + std::string(32'723, 'p'), &why) == zerr::invalid_path);
    BOOST_TEST(why.find("32724 bytes long; at most 32704") != std::string::npos, why);
    BOOST_TEST(!zklock::check_lock_path("/" + std::string(32'703, 'p')));
    BOOST_TEST(zklock::check_lock_path("relative") == zerr::invalid_path);
    BOOST_TEST(!zklock::check_hosts("127.0.0.1:2181,localhost:2182/app"));
    BOOST_TEST(!zklock::check_path("/locks/caf\xc3\xa9/\xe2\x82\xac"));
}

// At max_lock_path_length every kind takes its lock (the bound is the room its longest node name needs, a
// semaphore's lease, and no more), and an owner of max_owner_length fits in the nodes' data and reads back.
BOOST_AUTO_TEST_CASE(a_lock_path_at_the_bound_and_the_longest_owner_work_for_every_kind)
{
    asio::io_context ioc;
    auto cfg = config_for(shared_server().connect_string());
    cfg.owner = std::string(zklock::max_owner_length, 'o');
    session s(ioc, cfg);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await s.async_connect(use_awaitable);
        const auto dir = unique_path("lock-path-bound");
        auto at_bound = [&](char fill) { return dir + "/" + std::string(zklock::max_lock_path_length - dir.size() - 1, fill); };
        const auto mutex_path = at_bound('m'), rw_path = at_bound('r'), sem_path = at_bound('s');

        mutex m(s, mutex_path);
        auto g = co_await m.acquire(5s, zklock::lease(60s), use_awaitable);
        auto [pec, list] = co_await zklock::async_participants(s, mutex_path, tuple_awaitable);
        BOOST_TEST(!pec, pec.message());
        BOOST_TEST_REQUIRE(list.size() == 1u);
        BOOST_TEST((list[0].owner == cfg.owner), "the owner did not read back whole");
        co_await g.release(use_awaitable);

        zklock::shared_mutex rw(s, rw_path);
        auto w = co_await rw.acquire(5s, use_awaitable);
        co_await w.release(use_awaitable);
        auto r = co_await rw.acquire_shared(5s, use_awaitable);
        co_await r.release(use_awaitable);

        zklock::semaphore sem(s, sem_path, 2);
        auto leases = co_await sem.acquire_many(2, 5s, use_awaitable);
        BOOST_TEST_REQUIRE(leases.size() == 2u);
        BOOST_TEST(leases[0].node().size() == zklock::max_path_length);  // the longest name there is, exactly
        for (auto& l : leases) co_await l.release(use_awaitable);
        const std::vector<std::string> dirs{mutex_path, rw_path, sem_path + "/leases", sem_path + "/locks"};
        for (const auto& d : dirs) BOOST_TEST((co_await children(s, d)).empty());
        co_await s.async_close(use_awaitable);
    });
}

BOOST_AUTO_TEST_SUITE_END()  // bad_input_tests
