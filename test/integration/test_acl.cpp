// Lock directories whose ACL allows less than everything: a clear error naming the missing permission,
// and never a node the user cannot remove.
#include "test_util.hpp"

BOOST_AUTO_TEST_SUITE(acl_tests)

using namespace test;
using zklock::mutex;
using zklock::session;
namespace perm = zklock::perm;

namespace {

/// An administrator (digest credentials) and a user without any.
struct admin_and_user {
    session admin, user;
    explicit admin_and_user(asio::io_context& ioc, const std::string& user_hosts = shared_server().connect_string())
        : admin(ioc, admin_config()), user(ioc, config_for(user_hosts))
    {
    }
    static zklock::session_config admin_config()
    {
        auto c = config_for(shared_server().connect_string());
        c.credentials.push_back({"digest", "admin:secret"});
        return c;
    }
    asio::awaitable<void> connect()
    {
        co_await admin.async_connect(use_awaitable);
        co_await user.async_connect(use_awaitable);
    }
    /// unique_path's parent, for the admin's own nodes.
    asio::awaitable<void> make_test_root()
    {
        auto [ec, p, st] = co_await admin.async_create("/test", "", zklock::create_mode::persistent, tuple_awaitable);
        if (ec && ec != zklock::zk_errc::node_exists) BOOST_FAIL("create /test: " << ec.message());
    }
    /// A directory the admin may do anything in, and everyone else only `others`.
    asio::awaitable<void> make_dir(std::string path, int others)
    {
        zklock::op::create c{std::move(path), "", zklock::create_mode::persistent,
                             {{perm::all, "auth", ""}, {others, "world", "anyone"}}};
        co_await admin.async_create(c, use_awaitable);
    }
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_directory_without_delete_is_refused_before_any_node_is_made)
{
    asio::io_context ioc;
    admin_and_user s(ioc);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await s.connect();
        co_await s.make_test_root();
        const auto base = unique_path("acl");
        co_await s.admin.async_create(base, "", zklock::create_mode::persistent, use_awaitable);
        co_await s.make_dir(base + "/create-read", perm::create | perm::read);
        mutex m(s.user, base + "/create-read");
        auto [ec, g] = co_await m.acquire(2s, tuple_awaitable);
        BOOST_TEST(ec == zklock::error::no_delete_permission, ec.message());
        BOOST_TEST((co_await children(s.admin, base + "/create-read")).empty(), "a node the user cannot remove was left");
        // The same for a directory that grants CREATE alone.
        co_await s.make_dir(base + "/create-only", perm::create);
        mutex m2(s.user, base + "/create-only");
        auto [ec2, g2] = co_await m2.acquire(2s, tuple_awaitable);
        BOOST_TEST((ec2 == zklock::error::no_delete_permission || ec2 == zklock::error::no_read_permission), ec2.message());
        BOOST_TEST((co_await children(s.admin, base + "/create-only")).empty());
        // And one without CREATE: ZooKeeper refuses the create, named as such.
        co_await s.make_dir(base + "/read-delete", perm::read | perm::remove);
        mutex m3(s.user, base + "/read-delete");
        auto [ec3, g3] = co_await m3.acquire(2s, tuple_awaitable);
        BOOST_TEST(ec3 == zklock::error::no_create_permission, ec3.message());
        BOOST_TEST((co_await children(s.admin, base + "/read-delete")).empty());
        // A directory that grants what a lock needs works, and is left empty.
        co_await s.make_dir(base + "/enough", perm::create | perm::read | perm::remove);
        mutex m4(s.user, base + "/enough");
        auto g4 = co_await m4.acquire(2s, use_awaitable);
        co_await g4.release(use_awaitable);
        BOOST_TEST((co_await children(s.admin, base + "/enough")).empty());
    });
}

// With the root locked down and /locks provisioned, a lock under /locks/x/y needs CREATE only in /locks:
// ancestors that exist are looked at, not created.
BOOST_AUTO_TEST_CASE(existing_ancestors_under_a_locked_down_parent_are_not_created_again)
{
    asio::io_context ioc;
    const auto chroot = unique_path("locked-root");
    admin_and_user s(ioc, shared_server().connect_string() + chroot);
    run(ioc, [&]() -> asio::awaitable<void> {
        co_await s.admin.async_connect(use_awaitable);
        co_await s.make_test_root();
        // The user's root (the chroot) grants only READ; /locks under it grants everything.
        co_await s.make_dir(chroot, perm::read);
        zklock::op::create locks{chroot + "/locks", "", zklock::create_mode::persistent, zklock::open_acl()};
        co_await s.admin.async_create(locks, use_awaitable);
        co_await s.user.async_connect(use_awaitable);
        mutex m(s.user, "/locks/x/y");
        auto [ec, g] = co_await m.acquire(5s, tuple_awaitable);
        BOOST_TEST(!ec, ec.message());
        co_await g.release(tuple_awaitable);
    });
}

BOOST_AUTO_TEST_SUITE_END()  // acl_tests
