// A periodic job that must run exactly once per period across a fleet: every process campaigns in one
// leader election, and only the leader runs the job. Each run is recorded with a guarded write (one
// ZooKeeper multi that checks the leader's node, bumps PATH/last-run at the version just read, and creates
// PATH/runs/run-K), so a leader that was deposed without knowing it yet cannot record a run: the server
// refuses the whole multi.
//
//   leader_scheduler [--hosts HOSTS] [--candidates N] [--runs N] [--period-ms MS] [--faults N] [--path ZNODE]
//
// Each session stands for a process. --faults times, the current leader's session is ended on the
// server, as when its process is killed or cut off for longer than its session timeout
// (testing::kill_session); the candidate then starts a new session, as a restarted process would. It
// prints leaders, terms and runs, then a summary read back from ZooKeeper; exit status 0 only if every
// run was recorded once, none by a deposed leader, every fault ended a term, and no leader gave its term
// up while it still led (a connection loss, as at a ZooKeeper failover, leaves the term intact: the
// leader retries, zklock::is_retryable, while !l.lost()). A write whose answer was
// lost (the session ended meanwhile) may have been recorded: the next leader reads last-run again, so it
// is neither lost nor run twice. Without --hosts it starts a local ZooKeeper.
#include <zklock/election.hpp>
#include <zklock/session.hpp>
#include <zklock/testing/server.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);  // errors as values

struct options {
    std::string hosts;  // empty: start a local ZooKeeper
    int candidates = 3, runs = 30, period_ms = 20, faults = 2;
    std::string path = "/zklock-demo/scheduler";
};

[[noreturn]] void usage(int code)
{
    std::cerr << "usage: leader_scheduler [--hosts HOSTS] [--candidates N] [--runs N] [--period-ms MS] [--faults N]"
                 " [--path ZNODE]\n";
    std::exit(code);
}

options parse(int argc, char** argv)
{
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        auto number = [&](int low) {
            if (i + 1 >= argc) usage(64);
            char* end = nullptr;
            const long n = std::strtol(argv[++i], &end, 10);
            if (*argv[i] == '\0' || *end != '\0' || n < low || n > 100'000) usage(64);
            return static_cast<int>(n);
        };
        if (a == "--hosts" && i + 1 < argc) o.hosts = argv[++i];
        else if (a == "--path" && i + 1 < argc) o.path = argv[++i];
        else if (a == "--candidates") o.candidates = number(1);
        else if (a == "--runs") o.runs = number(1);
        else if (a == "--period-ms") o.period_ms = number(0);
        else if (a == "--faults") o.faults = number(0);
        else if (a == "-h" || a == "--help") usage(0);
        else usage(64);
    }
    if (o.faults > 0 && o.candidates < 2) usage(64);  // someone must take over
    return o;
}

/// What the leaders' own logs say. Every coroutine runs on one thread: plain fields are enough.
struct ledger {
    std::map<int, int> recorded;            // run -> how many leaders were told they recorded it
    int refused = 0;                        // writes the server refused (deposed, or raced)
    int unknown = 0;                        // writes whose answer was lost (the audit reads what happened)
    int base = 0;                           // last-run when this program started (runs go on from there)
    int terms = 0, faults_done = 0;
    int abdications = 0;  // terms ended while still leading (not lost, not done): a failover must not
    bool done = false;
    std::map<std::string, zklock::session*> sessions;  // id -> its current session (for the faults)
};

std::string run_name(int k)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "run-%06d", k);
    return buf;
}

/// The leader's job: one run per period, each recorded with a guarded write. Returns when the term ends:
/// with the error that ended it, if an error did (empty when all is done or the term was lost).
asio::awaitable<boost::system::error_code> lead(zklock::session& s, zklock::leadership& l, const std::string& id, const options& o,
                           ledger& book)
{
    const auto last = o.path + "/last-run";
    asio::steady_timer period(co_await asio::this_coro::executor);
    // Before a retry: a short pause, so that a failing-over ZooKeeper is not asked in a tight loop.
    auto retry_pause = [&period]() -> asio::awaitable<void> {
        period.expires_after(100ms);
        co_await period.async_wait(use_tuple);
    };
    while (!book.done) {
        auto [rec, data, st] = co_await s.async_get_data(last, use_tuple);
        if (rec) {
            // A connection loss (ZooKeeper's leader failing over) leaves the session, and so the term,
            // intact: read again after a pause while the term lasts. Only the term's end (l.lost(): the
            // session expired, the node went) or an error that no retry mends ends it.
            if (zklock::is_retryable(rec) && !l.lost()) {
                co_await retry_pause();
                continue;
            }
            co_return rec;
        }
        int k = 0;
        std::from_chars(data.data(), data.data() + data.size(), k);
        if (k >= book.base + o.runs) {  // the last run was recorded by a write whose answer was lost
            book.done = true;
            co_return boost::system::error_code{};
        }
        const auto by = id + " " + l.token().to_string();
        // The job itself would run here; what makes it "once" is that only one leader records run k+1.
        // (Named before co_await: GCC 12 destroys a braced temporary inside a co_await expression twice.)
        std::vector<zklock::multi_op> record{zklock::op::set_data{last, std::to_string(k + 1), st.version},
                                             zklock::op::create{o.path + "/runs/" + run_name(k + 1), by}};
        auto [ec, results] = co_await l.async_guarded_multi(std::move(record), use_tuple);
        if (ec == zklock::error::outcome_unknown) {
            // Sent, and the answer lost (a connection loss): it may have been recorded. The term goes on if
            // it is intact: reading last-run again says whether it was (the next leader would do the
            // same), so the run is neither lost nor done twice; the audit at the end reads which it was.
            ++book.unknown;
            std::cout << id << ": run " << k + 1 << " unknown: " << ec.message() << "\n";
            if (l.lost()) co_return boost::system::error_code{};
            co_await retry_pause();
            continue;
        }
        if (ec) {
            ++book.refused;
            std::cout << id << ": run " << k + 1 << " refused: " << ec.message() << "\n";
            if (l.lost() || ec == zklock::error::lock_node_deleted) co_return boost::system::error_code{};
            if (zklock::is_retryable(ec)) co_await retry_pause();  // not sent, or refused unapplied: the term is intact
            continue;  // read again (a race with another write cannot happen while we lead)
        }
        ++book.recorded[k + 1];
        std::cout << "run " << k + 1 << " by " << by << "\n";
        if (k + 1 >= book.base + o.runs) book.done = true;
        period.expires_after(std::chrono::milliseconds(o.period_ms));
        co_await period.async_wait(use_tuple);
    }
    co_return boost::system::error_code{};
}

/// A process: campaigns, leads until its term ends, and starts a new session when its session ended.
asio::awaitable<void> candidate(std::string hosts, std::string id, const options& o, ledger& book)
{
    auto ex = co_await asio::this_coro::executor;
    while (!book.done) {
        zklock::session_config cfg;
        cfg.hosts = hosts;
        cfg.session_timeout = 4s;
        zklock::session s(ex, cfg);
        if (auto [ec] = co_await s.async_connect(use_tuple); ec) throw boost::system::system_error(ec, id + ": connect");
        book.sessions[id] = &s;
        zklock::election e(s, o.path + "/election", id);
        while (!book.done) {
            auto [ec, l] = co_await e.campaign(500ms, use_tuple);  // timed, to notice when all is done
            if (ec == zklock::error::timeout) continue;
            if (ec) {
                std::cout << id << ": campaign ended: " << ec.message() << "\n";
                break;  // the session ended: a new one
            }
            ++book.terms;
            std::cout << id << " leads, term " << l.token().to_string() << "\n";
            const auto ended_by = co_await lead(s, l, id, o, book);
            const bool session_over = ended_by == zklock::error::session_expired ||
                                      ended_by == zklock::error::session_closed || ended_by == zklock::error::auth_failed;
            if (auto why = l.lost()) std::cout << id << " was deposed: " << why.message() << "\n";
            else if (session_over)  // told by the read before the term's own loss signal: the same end
                std::cout << id << " was deposed: " << ended_by.message() << "\n";
            else if (!book.done) {
                ++book.abdications;
                std::cout << id << " gave its term up while still leading: " << ended_by.message() << "\n";
            }
            co_await l.resign(use_tuple);
        }
        book.sessions.erase(id);
        co_await s.async_close(use_tuple);
    }
}

/// What ZooKeeper holds at the end: each run's node says who recorded it, in which term.
struct audit {
    int runs = 0, missing = 0, by_deposed = 0;
};

asio::awaitable<audit> read_back(zklock::session& s, const options& o, int base)
{
    audit a;
    const auto dir = o.path + "/runs";
    co_await s.async_sync(dir, asio::use_awaitable);  // as recent as every leader's last write
    auto [names, st] = co_await s.async_get_children(dir, asio::use_awaitable);
    const std::set<std::string> present(names.begin(), names.end());
    zklock::fencing_token newest;
    for (int k = base + 1; k <= base + o.runs; ++k) {
        if (!present.count(run_name(k))) {
            ++a.missing;
            continue;
        }
        ++a.runs;
        auto [by, rst] = co_await s.async_get_data(dir + "/" + run_name(k), asio::use_awaitable);
        // "ID ZXID.LOCAL": a run recorded in an older term than an earlier run's was a deposed leader's.
        zklock::fencing_token t;
        const auto at = by.rfind(' ') + 1, dot = by.find('.', at);
        std::from_chars(by.data() + at, by.data() + dot, t.zxid);
        std::from_chars(by.data() + dot + 1, by.data() + by.size(), t.local);
        if (t < newest) ++a.by_deposed;
        else newest = t;
    }
    co_return a;
}

/// The faults: every runs/(faults+1) runs, the leader's session is ended on the server.
asio::awaitable<void> faults(zklock::session& observer, const options& o, ledger& book)
{
    asio::steady_timer t(co_await asio::this_coro::executor);
    for (int f = 1; f <= o.faults && !book.done; ++f) {
        while (!book.done && static_cast<int>(book.recorded.size()) < f * o.runs / (o.faults + 1)) {
            t.expires_after(5ms);
            co_await t.async_wait(use_tuple);
        }
        if (book.done) break;
        auto [ec, leader] = co_await zklock::async_leader(observer, o.path + "/election", use_tuple);
        const auto it = ec || !leader ? book.sessions.end() : book.sessions.find(leader.id);
        if (it == book.sessions.end()) continue;
        std::cout << "fault " << f << ": the session of " << leader.id << " (term " << leader.token.to_string() << ") ends\n";
        zklock::testing::kill_session(*it->second);
        ++book.faults_done;
    }
}

}  // namespace

int main(int argc, char** argv)
{
    const auto o = parse(argc, argv);
    std::unique_ptr<zklock::testing::server> local;
    auto hosts = o.hosts;
    if (hosts.empty()) {
        local = std::make_unique<zklock::testing::server>();
        hosts = local->connect_string();
    }
    asio::io_context ioc;
    ledger book;
    int status = 0;
    audit found;
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
        zklock::session_config cfg;
        cfg.hosts = hosts;
        zklock::session observer(ioc, cfg);
        co_await observer.async_connect(asio::use_awaitable);
        // PATH, PATH/runs and PATH/last-run (each one kept if it exists: a second run goes on counting).
        for (auto at = o.path.find('/', 1);; at = o.path.find('/', at + 1)) {
            co_await observer.async_create(o.path.substr(0, at), "", zklock::create_mode::persistent, use_tuple);
            if (at == std::string::npos) break;
        }
        co_await observer.async_create(o.path + "/runs", "", zklock::create_mode::persistent, use_tuple);
        co_await observer.async_create(o.path + "/last-run", "0", zklock::create_mode::persistent, use_tuple);
        auto [last, st] = co_await observer.async_get_data(o.path + "/last-run", asio::use_awaitable);
        std::from_chars(last.data(), last.data() + last.size(), book.base);
        for (int c = 0; c < o.candidates; ++c)
            asio::co_spawn(ioc, candidate(hosts, "scheduler-" + std::to_string(c + 1), o, book), asio::detached);
        co_await faults(observer, o, book);
        asio::steady_timer t(ioc);
        while (!book.done) {
            t.expires_after(10ms);
            co_await t.async_wait(use_tuple);
        }
        found = co_await read_back(observer, o, book.base);
        co_await observer.async_close(use_tuple);
    }, [&](std::exception_ptr e) {
        if (!e) return;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& x) {
            std::cerr << "leader_scheduler: " << x.what() << "\n";
        }
        status = 1;
        ioc.stop();
    });
    ioc.run();

    int twice = 0;  // from the leaders' logs: two leaders told they recorded one run
    for (const auto& [k, n] : book.recorded) twice += n > 1;
    std::cout << "runs                      " << found.runs << "\n"
              << "runs missing              " << found.missing << "\n"
              << "runs recorded twice       " << twice << "\n"
              << "runs by a deposed leader  " << found.by_deposed << "\n"
              << "refused writes            " << book.refused << "\n"
              << "answers lost              " << book.unknown << "\n"
              << "terms                     " << book.terms << "\n"
              << "terms given up            " << book.abdications << "\n"
              << "faults                    " << book.faults_done << "\n";
    if (status == 0 && (found.missing || twice || found.by_deposed || book.abdications ||
                        book.terms < book.faults_done + 1))
        status = 1;
    return status;
}
