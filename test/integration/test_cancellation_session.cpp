// The cancellation table of the session's verbs, against a real ZooKeeper: each type at each stage that
// exists for the verb, with what it must do (session.hpp): reads and waits honour any type; writes honour
// terminal and partial (and may still land), never total once sent; a connect honours terminal only.
#include "cancellation_util.hpp"

#include <functional>

BOOST_AUTO_TEST_SUITE(cancellation_session_tests)

using namespace test;
using namespace test::cancel;
using zklock::create_mode;
using zklock::session;
namespace data = boost::unit_test::data;

// Named, not anonymous: the data-driven cases are templates that refer to it.
namespace session_table {

asio::awaitable<std::string> data_of(session& s, std::string path)
{
    auto [ec, d, st] = co_await s.async_get_data(path, tuple_awaitable);
    co_return ec ? "<" + ec.message() + ">" : d;
}
asio::awaitable<bool> exists(session& s, std::string path)  // by value: the awaitable outlives a temporary argument
{
    auto [ec, st] = co_await s.async_exists(path, tuple_awaitable);
    BOOST_TEST(!ec);
    co_return st.has_value();
}

/// One typed operation: how it starts on `node` (which holds "before" and has a child `c`), and whether the
/// server shows its write.
struct op_verb {
    const char* name;
    std::function<void(session&, const std::string& node, bound_record)> start;
    std::function<asio::awaitable<bool>(session&, const std::string& node)> applied;
};

std::vector<zklock::multi_op> multi_ops(const std::string& node)
{
    std::vector<zklock::multi_op> ops;
    ops.emplace_back(zklock::op::set_data{node, "after", -1});
    ops.emplace_back(zklock::op::create{node + "/m", "", create_mode::persistent, zklock::open_acl()});
    return ops;
}

const std::vector<op_verb>& op_verbs()
{
    using node_t = const std::string&;
    static const std::vector<op_verb> verbs{
        {"create", [](session& s, node_t n, bound_record h) { s.async_create(n + "/new", "", create_mode::persistent, h); },
         [](session& s, node_t n) { return exists(s, n + "/new"); }},
        {"remove", [](session& s, node_t n, bound_record h) { s.async_remove(n + "/c", -1, h); },
         [](session& s, node_t n) -> asio::awaitable<bool> { co_return !co_await exists(s, n + "/c"); }},
        {"set_data", [](session& s, node_t n, bound_record h) { s.async_set_data(n, "after", -1, h); },
         [](session& s, node_t n) -> asio::awaitable<bool> { co_return co_await data_of(s, n) == "after"; }},
        {"multi", [](session& s, node_t n, bound_record h) { s.async_multi(multi_ops(n), h); },
         [](session& s, node_t n) -> asio::awaitable<bool> { co_return co_await exists(s, n + "/m"); }},
        {"exists", [](session& s, node_t n, bound_record h) { s.async_exists(n + "/c", h); }, nullptr},
        {"get_data", [](session& s, node_t n, bound_record h) { s.async_get_data(n, h); }, nullptr},
        {"get_children", [](session& s, node_t n, bound_record h) { s.async_get_children(n, h); }, nullptr},
        {"sync", [](session& s, node_t n, bound_record h) { s.async_sync(n, h); }, nullptr},
    };
    return verbs;
}
std::vector<row> op_rows()
{
    return table_rows(op_verbs(), [](const op_verb& v) {
        const std::vector<stage> stages{stage::disconnected, stage::in_flight, stage::completed};
        return v.applied ? rows_for(v.name, stages, as_write) : rows_for(v.name, stages, as_undoable);
    });
}

asio::awaitable<std::string> make_node(session& s)
{
    co_await s.async_create("/test", "", create_mode::persistent, tuple_awaitable);
    const auto node = unique_path("cancel-op");
    co_await s.async_create(node, "before", create_mode::persistent, use_awaitable);
    co_await s.async_create(node + "/c", "", create_mode::persistent, use_awaitable);
    co_return node;
}

/// Runs `body(ioc, s, node)` with a connected session `s` and a node made by make_node.
void with_node(std::function<asio::awaitable<void>(asio::io_context&, session&, const std::string&)> body)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto node = co_await make_node(ss[0]);
        co_await body(ioc, ss[0], node);
    });
}

}  // namespace session_table
using namespace session_table;

BOOST_DATA_TEST_CASE(typed_operations, data::make(op_rows()), r)
{
    with_node([&](asio::io_context& ioc, session& s, const std::string& node) -> asio::awaitable<void> {
        const auto& v = named(op_verbs(), r.verb);
        probe p(ioc);
        co_await emit_at_stage(r, s, shared_server(), p, [&] { v.start(s, node, p.handler()); });
        // One session's requests are answered in order: once this one is, the late answer has come too.
        BOOST_TEST(co_await works(s), r);
        if (v.applied) BOOST_TEST(co_await v.applied(s, node), r << ": a sent write lands, cancelled or not");
        else BOOST_TEST((co_await data_of(s, node) == "before" && co_await exists(s, node + "/c")), r);
        BOOST_TEST_MESSAGE("measured: " << r << " (" << p.result->ec.message() << ")");
    });
}

// A cancelled read's watch is dropped, whenever the read's answer comes; a completed one stays armed.
BOOST_DATA_TEST_CASE(a_read_with_a_watch,
                     data::make(rows_for("get_data with a watch", {stage::disconnected, stage::in_flight, stage::completed},
                                         as_undoable)),
                     r)
{
    with_node([&](asio::io_context& ioc, session& s, const std::string& node) -> asio::awaitable<void> {
        zklock::watch w;
        probe p(ioc);
        co_await emit_at_stage(r, s, shared_server(), p, [&] { s.async_get_data(node, w, p.handler()); });
        BOOST_TEST(co_await works(s), r);  // and the late answer has come
        BOOST_TEST(w.armed() == (r.at == stage::completed), r);
        if (!w.armed()) {
            auto [ec, ev] = co_await w.async_wait(tuple_awaitable);
            BOOST_TEST(ec == asio::error::operation_aborted);
        }
    });
}

// A watch's wait, a state wait: any type ends the wait; the watch stays armed.
BOOST_DATA_TEST_CASE(waits, data::make(join(rows_for("watch::async_wait", {stage::queued, stage::completed}, as_undoable),
                                            rows_for("async_wait_state", {stage::queued, stage::completed}, as_undoable))),
                     r)
{
    with_node([&](asio::io_context& ioc, session& s, const std::string& node) -> asio::awaitable<void> {
        const bool watch = std::string_view(r.verb) == "watch::async_wait";
        zklock::watch w;
        co_await s.async_get_data(node, w, use_awaitable);
        probe p(ioc);
        auto start = [&] {
            if (watch) w.async_wait(p.handler());
            else s.async_wait_state(zklock::session_state::connected, p.handler());
        };
        auto event = [&]() -> asio::awaitable<void> {  // at the completed stage: the event comes, then the signal
            if (r.at != stage::completed) co_return;
            if (watch) co_await s.async_set_data(node, "changed", -1, use_awaitable);
            else zklock::testing::drop_connection(s);
        };
        co_await emit_at_stage(r, s, shared_server(), p, start, event);
        BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return s.state() == zklock::session_state::connected; }));
        if (watch && r.at == stage::queued) {  // still armed: the change is heard by the next wait
            BOOST_TEST(w.armed());
            co_await s.async_set_data(node, "changed", -1, use_awaitable);
            auto [ec, ev] = co_await w.async_wait(tuple_awaitable);
            BOOST_TEST(!ec);
            BOOST_TEST((ev.type == zklock::watch_event_type::data_changed));
        }
        BOOST_TEST(co_await works(s), r);
    });
}

// A connect honours terminal only (the session is then closed); partial and total let it connect.
BOOST_DATA_TEST_CASE(async_connect,
                     data::make(rows_for("async_connect", {stage::in_flight, stage::completed},
                                         [](asio::cancellation_type t, stage at) {
                                             if (at == stage::completed) return expect::nothing;
                                             return t == asio::cancellation_type::terminal ? expect::aborted : expect::ignored;
                                         })),
                     r)
{
    asio::io_context ioc;
    session s(ioc, config_for(shared_server().connect_string()));
    run(ioc, [&]() -> asio::awaitable<void> {
        probe p(ioc);
        co_await emit_at_stage(r, s, shared_server(), p, [&] { s.async_connect(p.handler()); });
        if (r.outcome == expect::aborted) {
            BOOST_TEST((s.state() == zklock::session_state::closed));
            auto [ec] = co_await s.async_sync("/", tuple_awaitable);
            BOOST_TEST(ec == zklock::error::session_closed);
        } else {
            BOOST_TEST(co_await works(s), r);
        }
    });
}

// async_close: any type ends the wait at once; the close goes on (the session's ephemeral node goes).
BOOST_DATA_TEST_CASE(async_close, data::make(rows_for("async_close", {stage::in_flight, stage::completed}, as_undoable)), r)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        const auto node = co_await make_node(ss[1]);
        co_await ss[0].async_create(node + "/mine", "", create_mode::ephemeral, use_awaitable);
        probe p(ioc);
        co_await emit_at_stage(r, ss[0], shared_server(), p, [&] { ss[0].async_close(p.handler()); });
        BOOST_TEST((ss[0].state() == zklock::session_state::closed));
        BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return !co_await exists(ss[1], node + "/mine"); }, 20s),
                   r << ": the close did not go on");
        auto [ec] = co_await ss[0].async_close(tuple_awaitable);  // the server has confirmed by now
        BOOST_TEST(!ec);
    });
}

// `co_await (s.async_close() || timer)` returns at the timer while the server does not answer.
BOOST_AUTO_TEST_CASE(close_or_timer_returns_at_the_timer)
{
    asio::io_context ioc;
    sessions ss(ioc, 1);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        shared_server().freeze();
        co_await check_or_timer("async_close", [&]() -> asio::awaitable<void> { co_await ss[0].async_close(use_awaitable); });
        shared_server().thaw();
    });
}

BOOST_AUTO_TEST_SUITE_END()  // cancellation_session_tests
