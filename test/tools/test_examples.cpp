// Every example runs with small arguments and exits 0, so none of them rots. The order service runs
// as two server processes selling from one stock, driven by the load client.
#include "process_util.hpp"

#include <zklock/testing/cluster.hpp>
#include <zklock/testing/server.hpp>

#include <boost/asio/ip/tcp.hpp>

#include <map>
#include <regex>

BOOST_AUTO_TEST_SUITE(example_tests)

using namespace tools_test;

namespace {

zklock::testing::server& zk()
{
    static zklock::testing::server s;
    return s;
}

/// "key value" lines of a summary.
std::map<std::string, std::string> summary(const std::string& text)
{
    std::map<std::string, std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (std::regex_match(line, m, std::regex("\\s*([a-z/ -]+?)\\s+(-?[0-9.]+)\\b.*"))) out[m[1]] = m[2];
    }
    return out;
}

/// GET /metrics from an order_server (HTTP/1.0: the server closes after its answer), as "name{labels}" ->
/// value; empty if it did not answer 200.
std::map<std::string, double> scrape(std::uint16_t port)
{
    boost::asio::ip::tcp::iostream http("127.0.0.1", std::to_string(port));
    http << "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" << std::flush;
    std::string status;
    std::getline(http, status);
    std::map<std::string, double> out;
    if (status.find(" 200 ") == std::string::npos) return out;
    bool body = false;
    for (std::string line; std::getline(http, line);) {
        if (!body) {
            body = line == "\r" || line.empty();
            continue;
        }
        if (line.empty() || line[0] == '#') continue;
        const auto space = line.rfind(' ');
        out[line.substr(0, space)] = std::stod(line.substr(space + 1));
    }
    return out;
}

/// The figures that must add up, from one scrape: the order locks' grants (by way) and the server's
/// own count of orders handled under a lock.
/// `complete` says that the scrape had all four (a failed scrape, or one before the first order, has not:
/// its zeros would add up).
struct order_figures {
    bool complete;
    double granted, local, zookeeper, sections;
    explicit order_figures(std::map<std::string, double> m)
        : complete(m.contains(R"(zklock_acquires_total{lock="orders",outcome="granted"})") &&
                   m.contains(R"(zklock_grants_total{lock="orders",via="local"})") &&
                   m.contains(R"(zklock_grants_total{lock="orders",via="zookeeper"})") &&
                   m.contains("order_server_sections_total")),
          granted(m[R"(zklock_acquires_total{lock="orders",outcome="granted"})"]),
          local(m[R"(zklock_grants_total{lock="orders",via="local"})"]),
          zookeeper(m[R"(zklock_grants_total{lock="orders",via="zookeeper"})"]),
          sections(m["order_server_sections_total"])
    {
    }
};

}  // namespace

BOOST_AUTO_TEST_CASE(ticket_office_sells_every_ticket_once)
{
    temp_dir dir;
    const auto out = dir / "out";
    // Without --hosts, as a new user runs it: it starts (and stops) its own ZooKeeper.
    BOOST_TEST(run({EXAMPLE_TICKET_OFFICE, "--sessions", "3", "--clients", "5", "--tickets", "120"}, 180s, out) == 0);
    const auto text = read_file(out);
    BOOST_TEST_MESSAGE(text);
    auto s = summary(text);
    BOOST_TEST(s["oversold"] == "0");
    BOOST_TEST(s["sold"] == "120");
    BOOST_TEST(s["final stock"] == "0");
    BOOST_TEST(s["turned away"] == "15");
    BOOST_TEST(text.find("hand-off p99") != std::string::npos);

    // And against a given ZooKeeper.
    BOOST_TEST(run({EXAMPLE_TICKET_OFFICE, "--hosts", zk().connect_string(), "--sessions", "2", "--clients", "3",
                    "--tickets", "40"},
                   120s, out) == 0);
    BOOST_TEST(summary(read_file(out))["oversold"] == "0");
}

BOOST_AUTO_TEST_CASE(two_order_servers_share_one_stock)
{
    temp_dir dir;
    const auto hosts = zk().connect_string();
    const int initial = 60;
    const std::uint16_t p1 = free_port(), p2 = free_port(), m1 = free_port();
    process s1({EXAMPLE_ORDER_SERVER, "--hosts", hosts, "--port", std::to_string(p1), "--init",
                "widget=" + std::to_string(initial), "--metrics-port", std::to_string(m1)},
               dir / "s1.out", dir / "s1.err");
    // The second server starts once the first has stocked the item (it prints that before listening).
    BOOST_REQUIRE_MESSAGE(eventually([&] { return listening(p1); }), read_file(dir / "s1.err"));
    process s2({EXAMPLE_ORDER_SERVER, "--hosts", hosts, "--port", std::to_string(p2)}, dir / "s2.out", dir / "s2.err");
    BOOST_REQUIRE_MESSAGE(eventually([&] { return listening(p2); }), read_file(dir / "s2.err"));

    // 8 connections x 15 requests = 120 buyers for 60 widgets; the first server's /metrics is scraped
    // while they buy: each scrape is one snapshot, in which every grant came one way or the other, and no
    // order was handled without a grant.
    const auto out = dir / "load.out";
    process load({EXAMPLE_ORDER_LOAD, "--ports", std::to_string(p1) + "," + std::to_string(p2), "--connections", "8",
                  "--requests", "15", "--item", "widget"},
                 out, dir / "load.err");
    int scrapes = 0;
    while (load.running()) {
        const order_figures f(scrape(m1));
        if (!f.complete) continue;
        ++scrapes;
        BOOST_TEST(f.local + f.zookeeper == f.granted);
        BOOST_TEST(f.sections <= f.granted);
    }
    BOOST_TEST(load.wait_for(120s).value_or(-1) == 0);
    const order_figures after(scrape(m1));
    BOOST_TEST_MESSAGE(scrapes << " scrapes during the load; afterwards " << after.granted << " granted ("
                               << after.local << " local), " << after.sections << " orders handled under a lock");
    BOOST_TEST(scrapes > 0, "no scrape during the load had the order figures");
    BOOST_TEST(after.complete, "the scrape after the load lacked the order figures");
    BOOST_TEST(after.granted == after.sections);  // every grant ran its section, and only those
    BOOST_TEST(after.local + after.zookeeper == after.granted);
    BOOST_TEST(after.granted > 0);
    const auto text = read_file(out);
    BOOST_TEST_MESSAGE(text);
    auto s = summary(text);
    const int ok = std::stoi(s["ok"]);
    BOOST_TEST(s["errors"] == "0");
    BOOST_TEST(s["oversold"] == "0");
    BOOST_TEST(ok + std::stoi(s["soldout"]) + std::stoi(s["busy"]) == 120);
    BOOST_TEST(ok <= initial);

    const auto stock = get_data(hosts, "/zklock-demo/stock/widget");
    BOOST_REQUIRE(stock.has_value());
    BOOST_TEST(std::stoi(*stock) == initial - ok);
    BOOST_TEST(std::stoi(*stock) >= 0);

    s1.signal(SIGTERM);
    s2.signal(SIGTERM);
    BOOST_TEST(s1.wait_for(20s).value_or(-1) == 0);
    BOOST_TEST(s2.wait_for(20s).value_or(-1) == 0);
    // SIGTERM drains each server's session: nothing was held, so it closed at once, without a timeout.
    for (const auto* name : {"s1.out", "s2.out"}) {
        const auto said = read_file(dir / name);
        BOOST_TEST_CONTEXT(name) { BOOST_TEST(said.find("drained in") != std::string::npos); }
        BOOST_TEST_CONTEXT(name) { BOOST_TEST(said.find("grace was over") == std::string::npos); }
    }
}

BOOST_AUTO_TEST_CASE(timed_acquire_runs)
{
    temp_dir dir;
    BOOST_TEST(run({EXAMPLE_TIMED_ACQUIRE, "--hosts", zk().connect_string()}, 120s, dir / "out") == 0);
    BOOST_TEST_MESSAGE(read_file(dir / "out"));
    BOOST_TEST(read_file(dir / "out").find("all done") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(callbacks_and_futures_runs)
{
    temp_dir dir;
    BOOST_TEST(run({EXAMPLE_CALLBACKS_AND_FUTURES, "--hosts", zk().connect_string()}, 120s, dir / "out") == 0);
    BOOST_TEST_MESSAGE(read_file(dir / "out"));
    BOOST_TEST(read_file(dir / "out").find("all done") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(cache_refresher_readers_share_and_never_see_half_a_refresh)
{
    temp_dir dir;
    const auto out = dir / "out";
    BOOST_TEST(run({EXAMPLE_CACHE_REFRESHER, "--hosts", zk().connect_string(), "--readers", "3", "--clients", "3",
                    "--reads", "20", "--refreshers", "2", "--refreshes", "8", "--path", "/examples-test/cache"},
                   120s, out, dir / "err") == 0);
    const auto text = read_file(out);
    BOOST_TEST_MESSAGE(text << read_file(dir / "err"));
    auto s = summary(text);
    BOOST_TEST(s["inconsistent reads"] == "0");  // value and checksum always agreed
    BOOST_TEST(s["lock overlaps"] == "0");       // no reader inside with a writer, no two writers
    BOOST_TEST(s["lost refreshes"] == "0");      // nothing slipped in between a write and its downgrade
    BOOST_TEST(s["reads"] == "180");
    BOOST_TEST(s["refreshes"] == "16");
    BOOST_TEST(s["final version"] == "16");
    // The three reader sessions held the read side together (each acquire_shared would have timed out
    // otherwise), and a writer's try_acquire was refused meanwhile (else the program fails).
    BOOST_TEST(s["readers held at once"] == "3");
    BOOST_TEST(std::stoi(s["most readers at once"]) >= 1);
}

BOOST_AUTO_TEST_CASE(connection_limit_reaches_but_never_exceeds_its_leases)
{
    temp_dir dir;
    const auto out = dir / "out";
    // Many attempts per job: a job dropped because the machine was slow would not be a lock failure.
    BOOST_TEST(run({EXAMPLE_CONNECTION_LIMIT, "--hosts", zk().connect_string(), "--limit", "3", "--sessions", "3",
                    "--workers", "3", "--jobs", "6", "--use-ms", "20", "--timeout-ms", "250", "--attempts", "40",
                    "--path", "/examples-test/connections"},
                   120s, out, dir / "err") == 0);
    const auto text = read_file(out);
    BOOST_TEST_MESSAGE(text << read_file(dir / "err"));
    auto s = summary(text);
    BOOST_TEST(s["limit"] == "3");
    BOOST_TEST(s["over the limit"] == "0");
    BOOST_TEST(s["most inside"] == "3");  // the maintenance job's acquire_many held all three at once
    BOOST_TEST(s["open in maintenance"] == "0");
    const int workers_most = std::stoi(s["most workers inside"]);
    BOOST_TEST(workers_most >= 1);
    BOOST_TEST(workers_most <= 3);
    BOOST_TEST(s["uses"] == "54");
    BOOST_TEST(s["dropped jobs"] == "0");
}

BOOST_AUTO_TEST_CASE(leader_scheduler_runs_each_period_once_through_leader_faults)
{
    temp_dir dir;
    const auto out = dir / "out";
    BOOST_TEST(run({EXAMPLE_LEADER_SCHEDULER, "--hosts", zk().connect_string(), "--candidates", "3", "--runs", "30",
                    "--faults", "2", "--period-ms", "10", "--path", "/examples-test/scheduler"},
                   180s, out, dir / "err") == 0);
    const auto text = read_file(out);
    BOOST_TEST_MESSAGE(text << read_file(dir / "err"));
    auto s = summary(text);
    BOOST_TEST(s["runs"] == "30");
    BOOST_TEST(s["runs missing"] == "0");
    BOOST_TEST(s["runs recorded twice"] == "0");
    BOOST_TEST(s["runs by a deposed leader"] == "0");
    BOOST_TEST(s["faults"] == "2");          // each fault found the leader and ended its session
    BOOST_TEST(std::stoi(s["terms"]) >= 3);  // and each ended a term
}

// Issue 48.9: the example ended its term on any error of a plain read, so a connection loss (the session
// alive, the term intact) changed the leader at 7 of 7 kills of ZooKeeper's leader. Here ZooKeeper's
// leader is killed twice while the scheduler runs: no leader may give its term up while it still leads
// (the example counts such terms and exits 1 if there is one), and every run is recorded once.
BOOST_AUTO_TEST_CASE(leader_scheduler_keeps_its_term_through_zookeeper_failovers)
{
    zklock::testing::server_options opts;
    opts.tick_ms = 200;
    zklock::testing::cluster cl(3, opts);
    temp_dir dir;
    const auto out = dir / "out";
    process p({EXAMPLE_LEADER_SCHEDULER, "--hosts", cl.connect_string(), "--candidates", "3", "--runs", "80",
               "--faults", "0", "--period-ms", "50", "--path", "/examples-test/failover"},
              out, dir / "err");
    BOOST_REQUIRE(eventually([&] { return read_file(out).find(" leads, term ") != std::string::npos; }, 30s));
    for (int kill = 0; kill < 2; ++kill) {
        const auto leader = cl.leader();
        cl.stop(leader);
        BOOST_REQUIRE_NO_THROW(cl.leader());  // the others elect a new one
        cl.start(leader);
    }
    const auto code = p.wait_for(180s);
    const auto text = read_file(out);
    BOOST_TEST_MESSAGE(text << read_file(dir / "err"));
    BOOST_TEST(code.value_or(-1) == 0);
    auto s = summary(text);
    BOOST_TEST(s["runs"] == "80");
    BOOST_TEST(s["runs missing"] == "0");
    BOOST_TEST(s["runs recorded twice"] == "0");
    BOOST_TEST(s["runs by a deposed leader"] == "0");
    BOOST_TEST(s["terms given up"] == "0");
}

BOOST_AUTO_TEST_SUITE_END()  // example_tests
