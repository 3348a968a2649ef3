// The contender machine before its node exists: the permission probe, missing parents, errors and
// reconnects while setting up. No server, no I/O.
#include "contender_fixture.hpp"

namespace unit_contender_setup {  // a namespace of its own: the unit tests compile as one translation unit

using namespace contender_test;

BOOST_AUTO_TEST_SUITE(contender_setup_tests)

BOOST_FIXTURE_TEST_CASE(errors_fail_the_contender_or_wait_for_a_reconnect, fixture)
{
    show(m.start());
    auto out = m.on_created(r, no_auth, "", 0);
    BOOST_TEST(show(out) == "drop_watch drop_watch failed");  // no node to delete
    BOOST_TEST(failure(out) == error_code(zerr::error::no_create_permission));
    BOOST_TEST(m.on_listed(r, listing::place, no_auth, {}).empty());
    remake(contender_kind::exclusive);
    show(m.start());
    BOOST_TEST(failure(m.on_created(r, zk_errc::invalid_acl, "", 0)) == error_code(zk_errc::invalid_acl));
    remake(contender_kind::exclusive);  // the listing's errors
    created();
    BOOST_TEST(show(m.on_listed(r, listing::place, conn_loss, {})) == "await_connected[relist] waiting");
    BOOST_TEST(show(m.on_reconnected(resume::relist, true)) == "list");
    out = m.on_listed(r, listing::place, zk_errc::marshalling_error, {});
    BOOST_TEST(show(out) == "drop_watch drop_watch delete_node(" + own + ") failed");
    BOOST_TEST(failure(out) == error_code(zk_errc::marshalling_error));
}

BOOST_FIXTURE_TEST_CASE(permission_probe_then_create, fixture)
{
    remake(contender_kind::exclusive, false);
    auto out = m.start();
    BOOST_TEST(show(out) == "probe_delete(zklock-permission-probe) list[permissions]");
    BOOST_TEST(out[0].round == out[1].round);
    m.on_probed(r, conn_loss);
    BOOST_TEST(show(m.on_listed(r, listing::permissions, conn_loss, {})) == "await_connected[start] waiting");
    BOOST_TEST(show(m.on_reconnected(resume::start, true)) ==
               "probe_delete(zklock-permission-probe) list[permissions]");
    BOOST_TEST(m.on_probed(r, no_node).empty());  // NONODE: the delete would have been allowed
    BOOST_TEST(show(m.on_listed(r, listing::permissions, ok, {})) == "note_permitted create_node(_c_u-lock-) list");
    m.on_created(r, ok, own_path, 100);
    BOOST_TEST(listed({}) == "create_node(_c_u-lock-) list");  // checked once: no probe for a later node
    // The directory is missing: its parents are checked.
    remake(contender_kind::exclusive, false);
    show(m.start());
    m.on_probed(r, no_node);
    BOOST_TEST(show(m.on_listed(r, listing::permissions, no_node, {})) == "exists(/locks) exists");
}

BOOST_FIXTURE_TEST_CASE(permission_probe_refusals, fixture)
{
    using row = std::tuple<error_code, error_code, error_code>;  // probe, listing -> failure
    const std::vector<row> rows{{no_auth, ok, zerr::error::no_delete_permission},
                                {no_node, no_auth, zerr::error::no_read_permission},
                                {no_auth, no_auth, zerr::error::no_delete_permission}};  // the delete first
    for (const auto& [probe, list_ec, expected] : rows) {
        remake(contender_kind::exclusive, false);
        show(m.start());
        m.on_probed(r, probe);
        const auto out = m.on_listed(r, listing::permissions, list_ec, {});
        BOOST_TEST(show(out) == "drop_watch drop_watch failed");
        BOOST_TEST(failure(out) == expected);
    }
}

BOOST_FIXTURE_TEST_CASE(missing_parents_are_made_as_containers, fixture)
{
    remake(contender_kind::exclusive, true, false, "/app/locks/a");
    show(m.start());
    const auto create_round = r;
    auto out = m.on_created(r, no_node, "", 0);
    BOOST_TEST(show(out) == "exists(/app) exists(/app/locks) exists");  // pipelined, one round
    for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(out[i].index == i);
    BOOST_TEST(m.on_listed(create_round, listing::place, no_node, {}).empty());
    const auto exists_round = r;
    BOOST_TEST(m.on_exists(r, 0, ok, true).empty());
    BOOST_TEST(m.on_exists(r, 1, ok, false).empty());
    out = m.on_exists(r, 2, ok, false);  // the last answer decides
    BOOST_TEST(show(out) == "create_container(/app/locks) create_container");  // from the first missing on
    BOOST_TEST(out[0].index == 1u);
    BOOST_TEST(r > exists_round);
    BOOST_TEST(m.on_container_created(r, 1, zk_errc::node_exists).empty());  // someone was quicker: fine
    BOOST_TEST(show(m.on_container_created(r, 2, ok)) == "create_node(_c_u-lock-) list");
    // Parents that appeared meanwhile need no container.
    show(m.on_created(r, no_node, "", 0));
    for (std::size_t i = 0; i < 2; ++i) m.on_exists(r, i, ok, true);
    BOOST_TEST(show(m.on_exists(r, 2, ok, true)) == "create_node(_c_u-lock-) list");
}

BOOST_FIXTURE_TEST_CASE(parent_checks_fail_or_wait_for_a_reconnect, fixture)
{
    show(m.start());
    show(m.on_created(r, no_node, "", 0));
    m.on_exists(r, 0, conn_loss, false);
    BOOST_TEST(show(m.on_exists(r, 1, conn_loss, false)) == "await_connected[start] waiting");
    BOOST_TEST(show(m.on_reconnected(resume::start, true)) == "create_node(_c_u-lock-) list");
    show(m.on_created(r, no_node, "", 0));
    m.on_exists(r, 0, ok, false);
    BOOST_TEST(show(m.on_exists(r, 1, ok, false)) == "create_container(/locks) create_container");
    BOOST_TEST(m.on_container_created(r, 0, no_auth).empty());  // the last answer decides, by the first error
    auto out = m.on_container_created(r, 1, no_node);
    BOOST_TEST(show(out) == "drop_watch drop_watch failed");
    BOOST_TEST(failure(out) == no_auth);
}

BOOST_FIXTURE_TEST_CASE(one_lost_connection_while_making_parents_is_one_reconnect, fixture)
{
    remake(contender_kind::exclusive, true, false, "/app/locks/a");
    show(m.start());
    show(m.on_created(r, no_node, "", 0));
    m.on_exists(r, 0, ok, true);
    m.on_exists(r, 1, ok, false);
    BOOST_TEST(show(m.on_exists(r, 2, ok, false)) == "create_container(/app/locks) create_container");
    BOOST_TEST(m.on_container_created(r, 1, conn_loss).empty());
    BOOST_TEST(show(m.on_container_created(r, 2, conn_loss)) == "await_connected[start] waiting");  // once
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_contender_setup
