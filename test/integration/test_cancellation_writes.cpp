// The cancellation table of the guarded writes, the revocation request and the participants listing,
// against a real ZooKeeper: before the request is sent any type withdraws it; once sent, terminal and
// partial complete at once (and the write lands), total is ignored; the listing (reads only) honours any
// type. `op || timer` returns at the timer. And a guarded write whose answer was lost completes with
// error::outcome_unknown, though the server applied it.
#include "cancellation_util.hpp"

#include <zklock/participants.hpp>
#include <zklock/revoke.hpp>

BOOST_AUTO_TEST_SUITE(cancellation_write_tests)

using namespace test;
using namespace test::cancel;
using zklock::create_mode;
using zklock::mutex;
using zklock::session;
namespace data = boost::unit_test::data;

// Named, not anonymous: the data-driven cases are templates that refer to it.
namespace write_table {

/// A session on a strand of `ioc` (so that an operation initiated outside the strand has a hop to make
/// before it sends anything), and what a case works on: a lock held at `path` (two, for the multi_guard),
/// a data node `node` holding "before".
struct scene {
    asio::io_context& ioc;
    asio::strand<asio::io_context::executor_type> strand = asio::make_strand(ioc);
    session s{strand, config_for(shared_server().connect_string())};
    session other{ioc, config_for(shared_server().connect_string())};
    std::string path = unique_path("cancel-write"), node;
    zklock::guard g;
    zklock::multi_guard multi;
    explicit scene(asio::io_context& io) : ioc(io) {}
};

asio::awaitable<std::string> data_of(session& s, std::string path)
{
    auto [ec, d, st] = co_await s.async_get_data(path, tuple_awaitable);
    co_return ec ? "<" + ec.message() + ">" : d;
}

asio::awaitable<void> set_up(scene& sc)
{
    co_await sc.s.async_connect(use_awaitable);
    co_await sc.other.async_connect(use_awaitable);
    co_await sc.s.async_create("/test", "", create_mode::persistent, tuple_awaitable);
    sc.node = unique_path("cancel-write-data");
    co_await sc.s.async_create(sc.node, "before", create_mode::persistent, use_awaitable);
    mutex a(sc.s, sc.path + "/a");
    sc.g = co_await a.acquire(5s, use_awaitable);
    zklock::multi_lock both(mutex(sc.s, sc.path + "/b"), mutex(sc.s, sc.path + "/c"));
    sc.multi = co_await both.acquire(5s, use_awaitable);
}

std::vector<zklock::multi_op> write_ops(const std::string& node)
{
    std::vector<zklock::multi_op> ops;
    ops.emplace_back(zklock::op::set_data{node, "after", -1});
    return ops;
}

/// One verb, and whether it writes (what it writes is checked by `landed`).
struct write_verb {
    const char* name;
    std::function<void(scene&, bound_record)> start;
    std::function<asio::awaitable<bool>(scene&)> landed;  ///< null: a read
};

asio::awaitable<bool> node_says_after(scene& sc) { co_return co_await data_of(sc.other, sc.node) == "after"; }

const std::vector<write_verb>& verbs()
{
    static const std::vector<write_verb> all{
        {"guard::async_guarded_set_data", [](scene& sc, bound_record h) { sc.g.async_guarded_set_data(sc.node, "after", -1, h); },
         node_says_after},
        {"guard::async_guarded_multi", [](scene& sc, bound_record h) { sc.g.async_guarded_multi(write_ops(sc.node), h); },
         node_says_after},
        {"multi_guard::async_guarded_multi", [](scene& sc, bound_record h) { sc.multi.async_guarded_multi(write_ops(sc.node), h); },
         node_says_after},
        {"async_request_revoke", [](scene& sc, bound_record h) { zklock::async_request_revoke(sc.s, sc.g.node(), h); },
         [](scene& sc) -> asio::awaitable<bool> {
             co_return co_await data_of(sc.other, sc.g.node()) == std::string(zklock::revoke_message);
         }},
        {"async_participants", [](scene& sc, bound_record h) { zklock::async_participants(sc.s, sc.path + "/a", h); }, nullptr},
    };
    return all;
}
std::vector<row> write_rows()
{
    return table_rows(verbs(), [](const write_verb& v) {
        const std::vector<stage> stages{stage::before_send, stage::disconnected, stage::in_flight, stage::completed};
        return v.landed ? rows_for(v.name, stages, as_write) : rows_for(v.name, stages, as_undoable);
    });
}

/// Runs `body(scene)` on the session's strand.
void run_scene(std::function<asio::awaitable<void>(scene&)> body)
{
    asio::io_context ioc;
    scene sc(ioc);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await asio::co_spawn(sc.strand, [&]() -> asio::awaitable<void> {
            co_await set_up(sc);
            co_await body(sc);
        }, use_awaitable);
    });
}

}  // namespace write_table
using namespace write_table;

BOOST_DATA_TEST_CASE(writes, data::make(write_rows()), r)
{
    run_scene([&](scene& sc) -> asio::awaitable<void> {
        const auto& v = named(verbs(), r.verb);
        probe p(sc.ioc);
        co_await emit_at_stage(r, sc.s, shared_server(), p, [&] { v.start(sc, p.handler()); });
        BOOST_TEST(co_await works(sc.s), r);  // and, the session's answers coming in order, the late answer came
        if (v.landed) {
            // Withdrawn before it was sent; sent (cancelled or not), it lands.
            BOOST_TEST(co_await v.landed(sc) == (r.at != stage::before_send), r);
        } else {
            BOOST_TEST(co_await data_of(sc.other, sc.node) == "before", r);
        }
        // The holds were not disturbed.
        BOOST_TEST(!sc.g.lost(), r << ": " << sc.g.lost().message());
        auto [ec] = co_await sc.g.async_guarded_set_data(sc.node, "later", -1, tuple_awaitable);
        BOOST_TEST(!ec, r << ": " << ec.message());
        co_await sc.multi.release(use_awaitable);
        co_await sc.g.release(use_awaitable);
        BOOST_TEST_MESSAGE("measured: " << r << " (" << p.result->ec.message() << ")");
    });
}

// `co_await (op || timer)` returns at the timer while ZooKeeper cannot answer (these four ignored the
// caller's slot before, and `||` waited for ZooKeeper).
BOOST_DATA_TEST_CASE(op_or_timer_returns_at_the_timer, data::xrange(4), which)
{
    using op_t = std::function<asio::awaitable<void>(scene&)>;
    const std::vector<std::pair<const char*, op_t>> ops{
        {"guard::async_guarded_set_data",
         [](scene& sc) -> asio::awaitable<void> { co_await sc.g.async_guarded_set_data(sc.node, "after", -1, use_awaitable); }},
        {"guard::async_guarded_multi",
         [](scene& sc) -> asio::awaitable<void> { co_await sc.g.async_guarded_multi(write_ops(sc.node), use_awaitable); }},
        {"async_participants",
         [](scene& sc) -> asio::awaitable<void> { co_await zklock::async_participants(sc.s, sc.path + "/a", use_awaitable); }},
        {"async_request_revoke",
         [](scene& sc) -> asio::awaitable<void> { co_await zklock::async_request_revoke(sc.s, sc.g.node(), use_awaitable); }},
    };
    const auto& [name, op] = ops.at(static_cast<std::size_t>(which));
    run_scene([&](scene& sc) -> asio::awaitable<void> {
        shared_server().freeze();
        co_await check_or_timer(name, [&]() { return op(sc); });
        shared_server().thaw();
        BOOST_TEST(co_await works(sc.s));
    });
}

// The answer of a guarded write is lost after the server applied it: outcome_unknown, not a failure; the
// write is found by reading it back (sync, then read), recognised by the guard's token.
BOOST_AUTO_TEST_CASE(a_lost_answer_is_outcome_unknown_and_the_write_is_there)
{
    run_scene([&](scene& sc) -> asio::awaitable<void> {
        const auto mine = "after by " + sc.g.token().to_string();
        zklock::testing::lose_next_applied_answer(sc.s, "multi");
        auto [ec] = co_await sc.g.async_guarded_set_data(sc.node, mine, -1, tuple_awaitable);
        BOOST_TEST(ec == zklock::error::outcome_unknown, ec.message());
        BOOST_TEST(!zklock::is_retryable(ec));
        co_await sc.s.async_sync(sc.node, use_awaitable);  // after the reconnect
        BOOST_TEST(co_await data_of(sc.s, sc.node) == mine, "the write was applied after all");
        co_await sc.g.release(use_awaitable);
    });
}

// The session ends while a guarded write is out: outcome_unknown (not session_closed, which would read as
// "not written"), and the server applies the write before it ends the session.
BOOST_AUTO_TEST_CASE(a_session_ended_with_the_write_out_is_outcome_unknown)
{
    run_scene([&](scene& sc) -> asio::awaitable<void> {
        shared_server().freeze();
        probe p(sc.ioc);
        sc.g.async_guarded_set_data(sc.node, "after", -1, p.handler());
        co_await settle();  // sent
        sc.s.close();
        co_await settle();
        BOOST_TEST(p.result->done);
        BOOST_TEST(p.result->ec == zklock::error::outcome_unknown, p.result->ec.message());
        shared_server().thaw();
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return co_await data_of(sc.other, sc.node) == "after"; }, 20s));
        // Known before the write is sent, the session's end means "not written".
        auto [ec] = co_await sc.g.async_guarded_set_data(sc.node, "again", -1, tuple_awaitable);
        BOOST_TEST(ec == zklock::error::session_closed, ec.message());
    });
}

BOOST_AUTO_TEST_SUITE_END()  // cancellation_write_tests
