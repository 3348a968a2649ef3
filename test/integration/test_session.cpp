// The session and its typed operations, against a real ZooKeeper started by the test itself. How
// operations complete (cancelled, failed by a close, ten thousand at once): test_session_completions.cpp.
#include "session_util.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>

BOOST_AUTO_TEST_SUITE(session_tests)

using namespace test;
using namespace boost::asio::experimental::awaitable_operators;
using zklock::create_mode;
using zklock::session;
using zklock::zk_errc;

BOOST_AUTO_TEST_SUITE(session_basics)

BOOST_AUTO_TEST_CASE(connects_and_reports_its_state)
{
    asio::io_context ioc;
    session s(ioc, config_for(shared_server().connect_string()));
    BOOST_TEST(s.state() == zklock::session_state::idle);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await connect(s);
        BOOST_TEST(s.state() == zklock::session_state::connected);
        BOOST_TEST(s.id() != 0);
        BOOST_TEST(s.negotiated_timeout() == 4s);
        // A state waiter hears the close.
        auto waiting = s.async_wait_state(zklock::session_state::connected, tuple_awaitable);
        s.close();
        auto [ec, st] = co_await std::move(waiting);
        BOOST_TEST(!ec);
        BOOST_TEST(st == zklock::session_state::closed);
        auto [ec2] = co_await s.async_connect(tuple_awaitable);
        BOOST_TEST(ec2 == zklock::error::already_closed);
        // Nothing can change after a final state: a wait for a change from it ends at once.
        auto [ec3, st3] = co_await s.async_wait_state(zklock::session_state::closed, tuple_awaitable);
        BOOST_TEST(ec3 == zklock::error::already_closed);
        BOOST_TEST(st3 == zklock::session_state::closed);
    });
}

BOOST_AUTO_TEST_CASE(typed_operations_round_trip)
{
    asio::io_context ioc;
    session s(ioc, config_for(shared_server().connect_string()));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await connect(s);
        const auto base = unique_path("ops");
        co_await make_parent(s, base);

        auto [ec, created, st] = co_await s.async_create(base + "/a", "one", create_mode::persistent, tuple_awaitable);
        BOOST_TEST(!ec);
        BOOST_TEST(created == base + "/a");
        BOOST_TEST(st.czxid > 0);

        auto [ec_dup, c2, st2] = co_await s.async_create(base + "/a", "", create_mode::persistent, tuple_awaitable);
        BOOST_TEST(ec_dup == zk_errc::node_exists);

        auto [ec_seq, seq_path, st3] =
            co_await s.async_create(base + "/e-", "", create_mode::ephemeral_sequential, tuple_awaitable);
        BOOST_TEST(!ec_seq);
        BOOST_TEST(seq_path == base + "/e-0000000001");
        BOOST_TEST(st3.ephemeral_owner == s.id());

        auto [ec_get, data, st4] = co_await s.async_get_data(base + "/a", tuple_awaitable);
        BOOST_TEST(!ec_get);
        BOOST_TEST(data == "one");
        BOOST_TEST(st4.version == 0);

        auto [ec_set, st5] = co_await s.async_set_data(base + "/a", "two", 0, tuple_awaitable);
        BOOST_TEST(!ec_set);
        BOOST_TEST(st5.version == 1);
        auto [ec_stale, st6] = co_await s.async_set_data(base + "/a", "three", 0, tuple_awaitable);
        BOOST_TEST(ec_stale == zk_errc::bad_version);

        auto [ec_ex, there] = co_await s.async_exists(base + "/a", tuple_awaitable);
        BOOST_TEST(!ec_ex);
        BOOST_TEST(there.has_value());
        BOOST_TEST(there->data_length == 3);
        auto [ec_nx, absent] = co_await s.async_exists(base + "/nope", tuple_awaitable);
        BOOST_TEST(!ec_nx);
        BOOST_TEST(!absent.has_value());

        auto [ec_ls, names, pst] = co_await s.async_get_children(base, tuple_awaitable);
        BOOST_TEST(!ec_ls);
        std::sort(names.begin(), names.end());
        BOOST_TEST(names == (std::vector<std::string>{"a", "e-0000000001"}));
        BOOST_TEST(pst.num_children == 2);

        auto [ec_del_bad] = co_await s.async_remove(base + "/a", 0, tuple_awaitable);
        BOOST_TEST(ec_del_bad == zk_errc::bad_version);
        auto [ec_del] = co_await s.async_remove(base + "/a", 1, tuple_awaitable);
        BOOST_TEST(!ec_del);
        auto [ec_gone, d2, st7] = co_await s.async_get_data(base + "/a", tuple_awaitable);
        BOOST_TEST(ec_gone == zk_errc::no_node);
        auto [ec_not_empty] = co_await s.async_remove(base, -1, tuple_awaitable);
        BOOST_TEST(ec_not_empty == zk_errc::not_empty);
    });
}

BOOST_AUTO_TEST_CASE(multi_is_all_or_nothing)
{
    asio::io_context ioc;
    session s(ioc, config_for(shared_server().connect_string()));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await connect(s);
        const auto base = unique_path("multi");
        co_await make_parent(s, base);
        std::vector<zklock::multi_op> ops{zklock::op::create{base + "/x", "1"}, zklock::op::create{base + "/y", "2"},
                                          zklock::op::set_data{base + "/x", "3", 0}};
        auto [ec, results] = co_await s.async_multi(std::move(ops), tuple_awaitable);
        BOOST_TEST(!ec);
        BOOST_REQUIRE(results.size() == 3u);
        BOOST_TEST(results[0].path == base + "/x");
        auto [ec_get, data, st] = co_await s.async_get_data(base + "/x", tuple_awaitable);
        BOOST_TEST(data == "3");
        // The set_data's result carries the node's stat after the write (multi_result::stat).
        BOOST_TEST(results[2].stat.version == 1);
        BOOST_TEST(results[2].stat.data_length == 1);
        BOOST_TEST(results[2].stat.mzxid == st.mzxid);
        BOOST_TEST(results[2].stat.czxid == st.czxid);

        // A failing check undoes the whole batch.
        std::vector<zklock::multi_op> guarded{zklock::op::create{base + "/z", ""}, zklock::op::check{base + "/x", 7}};
        auto [ec2, results2] = co_await s.async_multi(std::move(guarded), tuple_awaitable);
        BOOST_TEST(ec2 == zk_errc::bad_version);
        BOOST_REQUIRE(results2.size() == 2u);
        BOOST_TEST(results2[1].ec == zk_errc::bad_version);
        auto [ec3, none] = co_await s.async_exists(base + "/z", tuple_awaitable);
        BOOST_TEST(!none.has_value());
    });
}

BOOST_AUTO_TEST_CASE(watches_fire_once_and_leave_nothing_on_the_server)
{
    asio::io_context ioc;
    session s(ioc, config_for(shared_server().connect_string()));
    session other(ioc, config_for(shared_server().connect_string()));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await connect(s);
        co_await connect(other);
        const auto base = unique_path("watch");
        co_await make_parent(s, base);
        co_await s.async_create(base + "/n", "", create_mode::persistent, use_awaitable);

        zklock::watch w;
        auto [ec, data, st] = co_await s.async_get_data(base + "/n", w, tuple_awaitable);
        BOOST_TEST(!ec);
        BOOST_TEST(w.armed());
        co_await other.async_set_data(base + "/n", "changed", -1, use_awaitable);
        auto [wec, ev] = co_await w.async_wait(tuple_awaitable);
        BOOST_TEST(!wec);
        BOOST_TEST((ev.type == zklock::watch_event_type::data_changed));
        BOOST_TEST(ev.path == base + "/n");
        BOOST_TEST(!w.armed());

        // An exists watch on a missing node fires on its creation.
        zklock::watch born;
        auto [eec, none] = co_await s.async_exists(base + "/later", born, tuple_awaitable);
        BOOST_TEST(!none.has_value());
        co_await other.async_create(base + "/later", "", create_mode::ephemeral, use_awaitable);
        auto [bec, bev] = co_await born.async_wait(tuple_awaitable);
        BOOST_TEST((bev.type == zklock::watch_event_type::created));

        // A child watch fires on a new child.
        zklock::watch kids;
        co_await s.async_get_children(base, kids, use_awaitable);
        co_await other.async_create(base + "/child", "", create_mode::ephemeral, use_awaitable);
        auto [kec, kev] = co_await kids.async_wait(tuple_awaitable);
        BOOST_TEST((kev.type == zklock::watch_event_type::children_changed));

        // A watch dropped unfired is never delivered. The server keeps it (the C client cannot remove it)
        // until the node changes, when it goes; wchc lists data watches.
        {
            zklock::watch dropped;
            co_await s.async_get_data(base + "/n", dropped, use_awaitable);
            const auto listed = watched_paths(shared_server().four_letter("wchc"), s.id());
            BOOST_TEST((listed == std::vector<std::string>{base + "/n"}));
        }
        const auto events_before = s.stats().watch_events;
        co_await other.async_set_data(base + "/n", "again", -1, use_awaitable);
        bool gone = co_await eventually([&]() -> asio::awaitable<bool> {
            co_return watched_paths(shared_server().four_letter("wchc"), s.id()).empty();
        });
        BOOST_TEST(gone, "the dropped watch is still registered on the server");
        co_await s.async_exists("/", use_awaitable);  // a round trip: a notification would have come first
        BOOST_TEST(s.stats().watch_events == events_before);

        zklock::watch never;
        auto [nec, nev] = co_await never.async_wait(tuple_awaitable);
        BOOST_TEST(nec == zklock::error::watch_not_armed);

        // A wait begun while its read is still out ends when the read fails (no node: nothing is watched),
        // as a wait on a dropped watch does, instead of waiting for an event that cannot come.
        zklock::watch missing;
        std::optional<error_code> read_ec;
        s.async_get_data(base + "/missing", missing, [&](error_code e, auto&&...) { read_ec = e; });
        asio::steady_timer hang(ioc, 10s);
        auto waited = co_await (missing.async_wait(tuple_awaitable) || hang.async_wait(tuple_awaitable));
        BOOST_TEST_REQUIRE(waited.index() == 0u, "the wait outlived its failed read by 10 s");
        BOOST_TEST(std::get<0>(std::get<0>(waited)) == asio::error::operation_aborted);
        co_await s.async_exists("/", use_awaitable);  // a round trip: the read's own completion has run by then
        BOOST_TEST((read_ec == error_code(zklock::zk_errc::no_node)));
        BOOST_TEST(!missing.armed());
    });
}

BOOST_AUTO_TEST_CASE(bad_input_is_refused_clearly_and_creates_nothing)
{
    asio::io_context ioc;
    run(ioc, [&]() -> asio::awaitable<void> {
        {
            auto cfg = config_for("");
            session bad(ioc, cfg);
            auto [ec] = co_await bad.async_connect(tuple_awaitable);
            BOOST_TEST(ec == zklock::error::invalid_hosts);
        }
        {
            session bad(ioc, config_for("127.0.0.1:notaport,,"));
            auto [ec] = co_await bad.async_connect(tuple_awaitable);
            BOOST_TEST((ec == zklock::error::invalid_hosts || ec == zklock::error::connect_timeout), ec.message());
        }
        {
            // Nothing listens on port 1: an error within the deadline, no hang.
            auto cfg = config_for("127.0.0.1:1");
            cfg.connect_timeout = 1s;
            session nobody(ioc, cfg);
            const auto t0 = std::chrono::steady_clock::now();
            auto [ec] = co_await nobody.async_connect(tuple_awaitable);
            const auto took = std::chrono::steady_clock::now() - t0;
            BOOST_TEST(ec == zklock::error::connect_timeout);
            BOOST_TEST(took < 3s);
            BOOST_TEST(nobody.state() == zklock::session_state::closed);
            auto [ec2, d, st] = co_await nobody.async_get_data("/", tuple_awaitable);
            BOOST_TEST(ec2 == zklock::error::session_closed);
        }
        session s(ioc, config_for(shared_server().connect_string()));
        {
            session early(ioc, config_for(shared_server().connect_string()));
            auto [ec, d, st] = co_await early.async_get_data("/", tuple_awaitable);
            BOOST_TEST(ec == zklock::error::not_connected);
        }
        co_await connect(s);
        for (std::string p : {"", "relative", "/trailing/", "/a//b", "/a/../b"}) {
            auto [ec, created, st] = co_await s.async_create(p, "", create_mode::persistent, tuple_awaitable);
            BOOST_TEST(ec == zklock::error::invalid_path, "'" << p << "': " << ec.message());
        }
        auto [ec, names, st] = co_await s.async_get_children("/", tuple_awaitable);
        BOOST_TEST((std::find(names.begin(), names.end(), "relative") == names.end()));
    });
}

BOOST_AUTO_TEST_CASE(digest_credentials_and_acls)
{
    asio::io_context ioc;
    auto cfg = config_for(shared_server().connect_string());
    cfg.credentials.push_back({"digest", "alice:secret"});
    session alice(ioc, cfg);
    session anon(ioc, config_for(shared_server().connect_string()));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await connect(alice);
        co_await connect(anon);
        const auto base = unique_path("acl");
        co_await make_parent(alice, base);
        zklock::op::create mine{base + "/private", "secret", create_mode::persistent, zklock::creator_all_acl()};
        auto [ec, p, st] = co_await alice.async_create(mine, tuple_awaitable);
        BOOST_TEST(!ec, ec.message());
        auto [ec2, data, st2] = co_await anon.async_get_data(base + "/private", tuple_awaitable);
        BOOST_TEST(ec2 == zk_errc::no_auth);
        auto [ec3, data3, st3] = co_await alice.async_get_data(base + "/private", tuple_awaitable);
        BOOST_TEST(data3 == "secret");
    });
}

BOOST_AUTO_TEST_CASE(a_chroot_in_the_host_string_roots_every_path)
{
    asio::io_context ioc;
    session plain(ioc, config_for(shared_server().connect_string()));
    const auto root = unique_path("chroot");
    session rooted(ioc, config_for(shared_server().connect_string() + root));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await connect(plain);
        co_await make_parent(plain, root);  // ZooKeeper does not make the chroot itself
        co_await connect(rooted);
        BOOST_TEST(rooted.hosts() == shared_server().connect_string());
        auto [ec, created, st] = co_await rooted.async_create("/inside", "x", create_mode::persistent, tuple_awaitable);
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST(created == "/inside");
        auto [ec2, data, st2] = co_await plain.async_get_data(root + "/inside", tuple_awaitable);
        BOOST_TEST(data == "x");
        // A lock under the chroot is the same lock as the full path outside it.
        zklock::mutex inner(rooted, "/lock"), outer(plain, root + "/lock");
        auto g = co_await inner.acquire(5s, use_awaitable);
        auto [ec3, g2] = co_await outer.acquire(200ms, tuple_awaitable);
        BOOST_TEST(ec3 == zklock::error::timeout);
        BOOST_TEST(g.node().rfind("/lock/", 0) == 0u);
    });
}

// async_close promises that the session's ephemeral nodes are gone when it completes. The C client's
// close stops waiting for the server's answer as soon as anything is readable, and an answer to an
// earlier request usually is: it then closed its socket with bytes unread, the kernel reset the
// connection, and now and then the server dropped the closeSession it had not read yet, so the nodes
// stayed until the session expired (seen as 1 run in 20-40 of a one-look `zklock --write --timeout 0`).
BOOST_AUTO_TEST_CASE(a_close_right_after_a_request_leaves_no_ephemeral_node)
{
    asio::io_context ioc;
    session watcher(ioc, config_for(shared_server().connect_string()));
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await connect(watcher);
        const auto base = unique_path("close-race");
        co_await make_parent(watcher, base);
        const auto lock_path = base + "/lock";
        zklock::mutex holder_lock(watcher, lock_path);
        auto held = co_await holder_lock.acquire(10s, use_awaitable);
        int left_by_request = 0, left_by_try = 0;
        for (int i = 0; i < 40; ++i) {
            // A request whose answer is on its way when the close starts.
            session s(ioc, config_for(shared_server().connect_string()));
            co_await connect(s);
            auto [ec, node, st] = co_await s.async_create(base + "/e-", "", create_mode::ephemeral_sequential, tuple_awaitable);
            BOOST_TEST_REQUIRE(!ec);
            s.async_exists(node, asio::detached);
            co_await s.async_close(use_awaitable);
            auto [ec2, found] = co_await watcher.async_exists(node, tuple_awaitable);
            BOOST_TEST(!ec2);
            if (found) ++left_by_request;

            // A one-look try that fails: its node's delete and the close leave together, as in the command.
            session t(ioc, config_for(shared_server().connect_string()));
            co_await connect(t);
            zklock::mutex one_look(t, lock_path);
            auto [ec3, g] = co_await one_look.acquire(0s, tuple_awaitable);
            BOOST_TEST(ec3 == zklock::error::timeout);
            co_await t.async_close(use_awaitable);
            if ((co_await children(watcher, lock_path)).size() != 1u) ++left_by_try;
        }
        BOOST_TEST(left_by_request == 0);
        BOOST_TEST(left_by_try == 0);
        co_await held.release(use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(logs_go_to_the_chosen_sink)
{
    asio::io_context ioc;
    std::vector<std::string> lines;
    auto cfg = config_for("127.0.0.1:1");
    cfg.connect_timeout = 500ms;
    cfg.log = [&](zklock::log_level, std::string_view text) { lines.emplace_back(text); };
    session s(ioc, cfg);
    run(ioc, [&]() -> asio::awaitable<void> {
        auto [ec] = co_await s.async_connect(tuple_awaitable);
        BOOST_TEST(ec == zklock::error::connect_timeout);
        co_await s.async_close(use_awaitable);  // the sink may be called until the handle is closed
    });
    bool said = std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
        return l.find("no ZooKeeper server answered at 127.0.0.1:1") != std::string::npos;
    });
    BOOST_TEST(said);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // session_tests
