// Real network partitions (testing::cluster with server_options::partitionable): each member and each
// client machine is a network namespace of its own, and links are cut with packet filters. The suite
// `partitions` needs root: without it its cases say "zklock: skipped:" and ctest reports partition_tests
// skipped (SKIP_REGULAR_EXPRESSION). The cases outside it run everywhere, as partition_setup_tests, where
// no skip can hide their failure.
#define BOOST_TEST_MODULE partition_tests
#include "test_util.hpp"

#include <zklock/testing/cluster.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <boost/system/system_error.hpp>

#include <filesystem>
#include <future>
#include <optional>
#include <thread>

namespace {

using namespace test;
using zklock::testing::cluster;
using clk = std::chrono::steady_clock;

boost::test_tools::assertion_result root_only(boost::unit_test::test_unit_id)
{
    if (::geteuid() == 0) return true;
    std::cout << "zklock: skipped: network partitions need root" << std::endl;
    return false;
}

zklock::testing::server_options partitionable()
{
    zklock::testing::server_options o;
    o.partitionable = true;
    return o;
}

// "10.77.0.1:2181,..." minus or only some members.
std::string hosts_of(const cluster& cl, const std::vector<std::size_t>& members)
{
    std::vector<std::string> all;
    std::stringstream in(cl.connect_string());
    for (std::string h; std::getline(in, h, ',');) all.push_back(h);
    std::string out;
    for (auto m : members) out += (out.empty() ? "" : ",") + all.at(m);
    return out;
}

// A client machine: an io_context run by a thread that entered the machine's network namespace, so
// that every connection its sessions make is the machine's.
struct machine {
    asio::io_context ioc;
    asio::executor_work_guard<asio::io_context::executor_type> work{ioc.get_executor()};
    std::optional<zklock::session> s;
    std::optional<zklock::guard> g;
    std::thread t;

    machine(const cluster& cl, std::size_t client, const std::string& hosts)
    {
        std::promise<void> entered;
        t = std::thread([&] {
            try {
                cl.enter_client(client);
            } catch (...) {
                entered.set_exception(std::current_exception());
                return;
            }
            entered.set_value();
            ioc.run();
        });
        try {
            entered.get_future().get();
        } catch (...) {
            t.join();
            throw;
        }
        on(ioc.get_executor(), [&]() -> asio::awaitable<void> {
            s.emplace(ioc, config_for(hosts));
            auto [ec] = co_await s->async_connect(tuple_awaitable);
            BOOST_REQUIRE_MESSAGE(!ec, "connect: " << ec.message());
        });
    }
    ~machine()
    {
        on(ioc.get_executor(), [&]() -> asio::awaitable<void> {  // guards and session go on their executor
            g.reset();
            if (s) s->close();
            s.reset();
            co_return;
        });
        work.reset();
        t.join();
    }
    template <class Fn>
    auto run(Fn fn) { return on(ioc.get_executor(), fn); }
};

// When a holder learned that its lock was lost, and why. A wait that ended without a loss (aborted by
// the guard's end, or failed) is not "told": it fails the test rather than counting as a warning.
struct warning {
    std::promise<std::pair<clk::time_point, error_code>> told;
    void watch(machine& m)
    {
        m.run([&]() -> asio::awaitable<void> {
            m.g->async_wait_lost([this](error_code ec, error_code reason) {
                if (ec)
                    told.set_exception(std::make_exception_ptr(boost::system::system_error(ec, "async_wait_lost ended without a loss")));
                else
                    told.set_value({clk::now(), reason});
            });
            co_return;
        });
    }
};

const std::string lock_path = "/partition/lock";

zklock::guard take(machine& m, std::chrono::seconds timeout)
{
    return m.run([&]() -> asio::awaitable<zklock::guard> {
        zklock::mutex mx(*m.s, lock_path);
        auto [ec, g] = co_await mx.acquire(timeout, tuple_awaitable);
        BOOST_REQUIRE_MESSAGE(!ec, "acquire: " << ec.message());
        co_return std::move(g);
    });
}

// The holder on machine `a` is cut off (as `cut` does); a contender on `b` then waits for the lock. The
// holder must be told before the contender holds it, and the contender's token must be greater.
void holder_is_told_first(cluster& cl, machine& a, machine& b, const std::function<void()>& cut)
{
    a.g = take(a, 10s);
    const auto first = a.g->token();
    warning w;
    w.watch(a);
    cut();
    const auto cut_at = clk::now();
    b.g = take(b, 60s);  // granted once the server expired the holder's session
    const auto granted_at = clk::now();
    auto told = w.told.get_future();
    BOOST_REQUIRE_MESSAGE(told.wait_for(0s) == std::future_status::ready,
                          "the contender holds the lock and the cut-off holder has not been told");
    const auto [told_at, why] = told.get();
    BOOST_TEST((told_at < granted_at));
    BOOST_TEST(why.failed(), "a loss without a reason");
    BOOST_TEST_MESSAGE("told after " << std::chrono::duration_cast<std::chrono::milliseconds>(told_at - cut_at).count()
                                     << " ms (" << why.message() << "), contender granted after "
                                     << std::chrono::duration_cast<std::chrono::milliseconds>(granted_at - cut_at).count()
                                     << " ms");
    BOOST_TEST((first < b.g->token()));
    cl.heal();
    // Nothing is left behind: the cut-off holder's node went with its session; the contender's goes now.
    b.run([&]() -> asio::awaitable<void> {
        auto [ec] = co_await b.g->release(tuple_awaitable);
        BOOST_TEST(!ec);
        auto [lec, children, st] = co_await b.s->async_get_children(lock_path, tuple_awaitable);
        BOOST_TEST(!lec);
        BOOST_TEST(children.empty());
    });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(partitions, *boost::unit_test::precondition(root_only))

BOOST_AUTO_TEST_CASE(a_holder_with_the_leader_on_the_minority_side_is_told_before_the_majority_grants)
{
    cluster cl(3, partitionable());
    const auto leader = cl.leader();
    std::vector<std::size_t> rest;
    for (std::size_t m = 0; m < 3; ++m)
        if (m != leader) rest.push_back(m);
    const auto near = cl.add_client(), far = cl.add_client();
    machine a(cl, near, hosts_of(cl, {leader})), b(cl, far, hosts_of(cl, rest));
    holder_is_told_first(cl, a, b, [&] {
        cl.partition({.members = {leader}, .clients = {near}}, {.members = rest, .clients = {far}});
    });
}

BOOST_AUTO_TEST_CASE(a_client_cut_off_from_every_server_is_told_before_its_lock_passes_on)
{
    cluster cl(3, partitionable());
    const auto cut_off = cl.add_client(), other = cl.add_client();
    machine a(cl, cut_off, cl.connect_string()), b(cl, other, cl.connect_string());
    holder_is_told_first(cl, a, b, [&] { cl.isolate_client(cut_off); });
}

BOOST_AUTO_TEST_CASE(a_delayed_link_answers_late_and_a_healed_one_at_once)
{
    cluster cl(1, partitionable());
    machine a(cl, cl.add_client(), cl.connect_string());
    auto round_trip = [&] {
        return a.run([&]() -> asio::awaitable<clk::duration> {
            const auto start = clk::now();
            auto [ec, st] = co_await a.s->async_exists("/", tuple_awaitable);
            BOOST_TEST(!ec);
            co_return clk::now() - start;
        });
    };
    cl.degrade_client(0, {.loss = 0.0, .delay = 300ms});
    BOOST_TEST((round_trip() >= 300ms));
    cl.degrade_member(0, {.loss = 0.0, .delay = 300ms});
    BOOST_TEST((round_trip() >= 600ms));  // both ends hold their packets back
    cl.heal();
    BOOST_TEST((round_trip() < 300ms));
}

BOOST_AUTO_TEST_CASE(everything_is_torn_down_and_a_killed_runs_leftovers_are_removed)
{
    namespace fs = std::filesystem;
    // A namespace as a run killed before its destructor would leave it (no such process: pid_max < 10^9).
    const std::string leftover = "zklock-999999999-0-h0";
    BOOST_REQUIRE_EQUAL(std::system(("/usr/sbin/ip netns add " + leftover).c_str()), 0);
    const std::string ours = "zklock-" + std::to_string(::getpid()) + "-";
    auto count_ours = [&] {
        int n = 0;
        for (const auto& e : fs::directory_iterator("/run/netns"))
            if (e.path().filename().string().starts_with(ours)) ++n;
        return n;
    };
    {
        cluster cl(1, partitionable());
        cl.add_client();
        BOOST_TEST(!fs::exists("/run/netns/" + leftover));
        BOOST_TEST(count_ours() == 3);  // the hub, the member, the client
    }
    BOOST_TEST(count_ours() == 0);
}

BOOST_AUTO_TEST_SUITE_END()

// Without root the cluster says what is missing (as root: in a child process that gave root up).
BOOST_AUTO_TEST_CASE(without_root_a_partitionable_cluster_is_not_supported)
{
    auto attempt = [] {
        try {
            cluster cl(1, partitionable());
        } catch (const boost::system::system_error& e) {
            const bool named = std::string(e.what()).find("need root") != std::string::npos;
            return e.code() == zklock::error::not_supported && named ? 0 : 2;
        } catch (...) {
            return 3;
        }
        return 4;
    };
    if (::geteuid() != 0) {
        BOOST_TEST(attempt() == 0);
        return;
    }
    const pid_t child = ::fork();  // before any thread of this test: the child only throws
    if (child == 0) {
        if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) ::_exit(5);
        ::_exit(attempt());
    }
    int status = 0;
    BOOST_REQUIRE_EQUAL(::waitpid(child, &status, 0), child);
    BOOST_TEST(WIFEXITED(status));
    BOOST_TEST(WEXITSTATUS(status) == 0);
}

BOOST_AUTO_TEST_CASE(a_cluster_made_without_partitions_says_so)
{
    cluster cl(1);
    try {
        cl.isolate(0);
        BOOST_FAIL("isolate on a loopback cluster did not throw");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST(e.code() == zklock::error::not_supported);
    }
}
