// The simulation's model of ZooKeeper (src/testing/simulation/data_tree.hpp) against the real server: one
// script of writes, reads and watches from two sessions runs on both, and each step's outcome is compared
// (codes, paths, stats with zxids counted from the script's first write, owners, the watches that fired).
// The first piece of issue 50's conformance suite: what the model gets wrong here, a simulation would get
// wrong everywhere.
#include "session_util.hpp"

#include "testing/simulation/data_tree.hpp"
#include "testing/simulation/session_table.hpp"

#include <map>
#include <sstream>

BOOST_AUTO_TEST_SUITE(simulation_conformance_tests)

using namespace test;
using zklock::create_mode;
using zklock::session;
namespace sim = zklock::testing::simulation;

namespace {

// A script's view of both sides: the real sessions a and b are the model's sessions 1 and 2.
struct both {
    both(session& first, session& second, std::string root) : a(first), b(second), base(std::move(root)) {}
    session& a;
    session& b;
    std::string base;  // the script's root: base on the server, "/c" in the model
    sim::data_tree model;
    std::int64_t real_zero = 0;   // the zxid before the script's first write, on each side
    std::int64_t model_zero = 0;
    std::map<std::string, zklock::watch> watches;  // name -> real watch
    std::map<std::string, std::pair<sim::session_id, std::string>> watch_of;  // name -> model session, path

    session& real(sim::session_id s) { return s == 1 ? a : b; }
    std::string on_server(const std::string& path) const { return base + path.substr(2); }
    std::string in_model(const std::string& path) const { return "/c" + path.substr(base.size()); }

    // A stat as the script compares it: zxids from the start, the owner as 1, 2 or 0.
    std::string show(const zklock::stat& st, std::int64_t zero) const
    {
        const auto owner = st.ephemeral_owner == 0 ? 0
                           : st.ephemeral_owner == a.id() || st.ephemeral_owner == 1 ? 1
                                                                                      : 2;
        std::ostringstream o;
        o << "czxid+" << st.czxid - zero << " mzxid+" << st.mzxid - zero << " pzxid+" << st.pzxid - zero
          << " version " << st.version << " cversion " << st.cversion << " children " << st.num_children
          << " length " << st.data_length << " owner " << owner;
        return o.str();
    }
};

std::string code(const boost::system::error_code& ec) { return ec ? zklock::error_name(ec) : "ok"; }

// After every step: each session syncs and reads, so that every event of an earlier write has reached it
// (ZooKeeper delivers a watch's event before the answer to a later read on the same connection); then the
// watches that fired on the server are exactly those the model fired, with the same events.
asio::awaitable<void> same_watches(both& t, const std::string& step)
{
    for (auto* s : {&t.a, &t.b}) {
        if (s->state() != zklock::session_state::connected) continue;
        co_await s->async_sync("/", asio::use_awaitable);
        co_await s->async_exists("/", asio::use_awaitable);
    }
    std::map<std::pair<sim::session_id, std::string>, std::string> model_fired;
    for (const auto& f : t.model.take_fired())
        model_fired[{f.session, f.event.path}] = std::string(zklock::to_string(f.event.type));
    for (auto& [name, w] : t.watches) {
        const auto& [who, path] = t.watch_of.at(name);
        const auto it = model_fired.find({who, path});
        if (t.real(who).state() != zklock::session_state::connected) continue;  // its watches ended with it
        BOOST_TEST_CONTEXT(step << ", watch " << name)
        {
            BOOST_TEST(!w.armed() == (it != model_fired.end()));
            if (!w.armed() && it != model_fired.end()) {
                auto [ec, ev] = co_await w.async_wait(tuple_awaitable);
                BOOST_TEST(!ec);
                BOOST_TEST(std::string(zklock::to_string(ev.type)) == it->second);
                BOOST_TEST(t.in_model(ev.path) == path);
            }
        }
    }
    std::erase_if(t.watches, [](const auto& w) { return !w.second.armed(); });
}

asio::awaitable<std::string> create(both& t, sim::session_id who, const std::string& rel, create_mode mode)
{
    auto [ec, path, st] = co_await t.real(who).async_create(t.base + rel, "d", mode, tuple_awaitable);
    const auto m = t.model.create(who, zklock::op::create{"/c" + rel, "d", mode, zklock::open_acl()});
    BOOST_TEST_CONTEXT("create " << rel)
    {
        BOOST_TEST(code(ec) == code(m.ec));
        if (!ec && !m.ec) {
            BOOST_TEST(t.in_model(path) == m.path);
            BOOST_TEST(t.show(st, t.real_zero) == t.show(m.stat, t.model_zero));
        }
    }
    co_await same_watches(t, "create " + rel);
    co_return ec ? std::string{} : path.substr(t.base.size());
}

asio::awaitable<void> remove(both& t, sim::session_id who, const std::string& rel, int version)
{
    auto [ec] = co_await t.real(who).async_remove(t.base + rel, version, tuple_awaitable);
    const auto m = t.model.remove(zklock::op::remove{"/c" + rel, version});
    BOOST_TEST_CONTEXT("remove " << rel) { BOOST_TEST(code(ec) == code(m)); }
    co_await same_watches(t, "remove " + rel);
}

// Reads each side's children of `rel` and stat, leaving a child watch named `name` if given.
asio::awaitable<void> children(both& t, sim::session_id who, const std::string& rel, const std::string& name = {})
{
    std::vector<std::string> real_names, model_names;
    zklock::stat real_st, model_st;
    boost::system::error_code ec;
    if (name.empty()) {
        std::tie(ec, real_names, real_st) = co_await t.real(who).async_get_children(t.base + rel, tuple_awaitable);
    } else {
        auto& w = t.watches[name];
        std::tie(ec, real_names, real_st) = co_await t.real(who).async_get_children(t.base + rel, w, tuple_awaitable);
        t.watch_of[name] = {who, "/c" + rel};
    }
    const auto m = t.model.get_children("/c" + rel, model_names, model_st,
                                        name.empty() ? std::nullopt : std::optional<sim::session_id>(who));
    std::sort(real_names.begin(), real_names.end());
    BOOST_TEST_CONTEXT("children of " << rel)
    {
        BOOST_TEST(code(ec) == code(m));
        BOOST_TEST(real_names == model_names, boost::test_tools::per_element());
        BOOST_TEST(t.show(real_st, t.real_zero) == t.show(model_st, t.model_zero));
    }
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_lock_queue_script_sees_the_same_on_the_model_and_on_the_server)
{
    asio::io_context ioc;
    sessions ss(ioc, 2);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await ss.connect();
        both t(ss[0], ss[1], unique_path("conformance"));
        co_await make_parent(t.a, t.base);
        t.model.create(1, zklock::op::create{"/c", "", create_mode::persistent, zklock::open_acl()});
        t.real_zero = (co_await t.a.async_exists(t.base, asio::use_awaitable))->czxid;
        t.model_zero = t.model.last_zxid();
        t.model.take_fired();

        // A lock's queue: a's node, b watching it and the queue, a's release, the next two nodes.
        const auto first = co_await create(t, 1, "/n-", create_mode::ephemeral_sequential);
        co_await children(t, 2, "", "b: queue");
        {
            auto& w = t.watches["b: first node"];
            co_await t.b.async_get_data(t.base + first, w, asio::use_awaitable);
            t.watch_of["b: first node"] = {2, "/c" + first};
            std::string data;
            zklock::stat st;
            t.model.get_data("/c" + first, data, st, 2);
        }
        co_await remove(t, 1, first, -1);
        co_await create(t, 1, "/n-", create_mode::ephemeral_sequential);
        const auto bs = co_await create(t, 2, "/n-", create_mode::ephemeral_sequential);
        co_await create(t, 2, "/n-", create_mode::ephemeral_sequential);  // duplicate prefix: a new name
        co_await create(t, 2, "/plain", create_mode::persistent);
        co_await create(t, 1, "/plain", create_mode::persistent);  // node_exists, and still a transaction
        co_await create(t, 1, "/missing/child", create_mode::persistent);
        co_await create(t, 1, bs + "/under-ephemeral", create_mode::persistent);
        co_await remove(t, 2, "/plain", 4);  // bad_version
        co_await children(t, 1, "", "a: queue");
        co_await children(t, 2, "", "b: queue again");
        co_await children(t, 2, bs, "b: its node's children");  // a child watch on the node it deletes
        co_await remove(t, 2, bs, -1);

        // A multi that fails changes nothing and still takes a zxid; one that succeeds is one transaction.
        {
            std::vector<zklock::multi_op> ops{zklock::op::create{t.base + "/m", "", create_mode::persistent, zklock::open_acl()},
                                              zklock::op::check{t.base + "/plain", 7}};
            auto [ec, results] = co_await t.b.async_multi(ops, tuple_awaitable);
            std::vector<zklock::multi_op> model_ops{zklock::op::create{"/c/m", "", create_mode::persistent, zklock::open_acl()},
                                                    zklock::op::check{"/c/plain", 7}};
            const auto m = t.model.multi(2, model_ops);
            BOOST_TEST(!!ec);
            BOOST_TEST_REQUIRE(results.size() == m.size());
            for (std::size_t i = 0; i < m.size(); ++i) BOOST_TEST(code(results[i].ec) == code(m[i].ec));
            co_await same_watches(t, "failed multi");
        }
        co_await create(t, 2, "/after-multi", create_mode::persistent);

        // a's session ends: its ephemeral node goes in one transaction, and b hears of it once.
        co_await children(t, 2, "", "b: before a's end");
        // async_close completes once the server ended the session: a close() alone may still be in a's
        // socket when b's sync is answered (the server orders no two connections), and b would not yet see it.
        co_await t.a.async_close(asio::use_awaitable);
        t.model.end_session(1);
        co_await same_watches(t, "a's end");
        co_await children(t, 2, "");
        co_await create(t, 2, "/last", create_mode::persistent);
    });
}

BOOST_AUTO_TEST_CASE(a_session_gets_the_timeout_the_model_negotiates)
{
    // A 1 s tick: 2 s to 20 s, and zklock's own bounds (1 s to 24 h) let a request fall on either side.
    zklock::testing::server_options o;
    o.tick_ms = 1'000;
    zklock::testing::server srv(o);
    const sim::session_table model(sim::session_limits{1'000, {}, {}});
    asio::io_context ioc;
    run(ioc, [&]() -> asio::awaitable<void> {
        for (const std::chrono::milliseconds asked : {1'000ms, 5'000ms, 60'000ms}) {
            auto cfg = config_for(srv.connect_string());
            cfg.session_timeout = asked;
            zklock::session s(ioc, cfg);
            co_await s.async_connect(asio::use_awaitable);
            BOOST_TEST(s.negotiated_timeout().count() == model.negotiate(asked.count()), "asked " << asked.count() << " ms");
            co_await s.async_close(asio::use_awaitable);
        }
    });
}

BOOST_AUTO_TEST_SUITE_END()
