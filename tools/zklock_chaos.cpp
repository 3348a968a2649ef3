// zklock_chaos: a chaos test of the mutex on a three-member ensemble whose leader is killed and restarted,
// frozen and thawed, while sessions x coroutines increment a shared counter under the lock.
//
//   zklock_chaos [--seconds N] [--sessions N] [--coroutines N] [--seed N] [--no-cut-short]
//
// All workers share one event loop, so "at the same time" is exact. It checks mutual exclusion (nobody
// enters while an un-warned holder is inside; no lost update of the counter), strictly increasing fencing
// tokens, the loss signal (a warned holder takes no further step: `work() || g.async_wait_lost()` cuts it
// short) and that no lock node is left at the end. One summary line on stdout; exit 0 only if all holds.
// --no-cut-short makes holders ignore the cut: a self-check that late_loss_warnings then appear.
#include "zklock_chaos_injector.hpp"

#include <zklock/mutex.hpp>
#include <zklock/session.hpp>
#include <zklock/testing/server.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
using namespace boost::asio::experimental::awaitable_operators;
using namespace std::chrono_literals;
using boost::system::error_code;
using clk = std::chrono::steady_clock;
using ull = unsigned long long;
using asio::use_awaitable;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);
using zklock_chaos::injector;

const std::string lock_path = "/chaos/counter";  // the cluster is this run's own: a fixed path is fine
constexpr auto acquire_timeout = 10s;
constexpr auto injector_deadline = 180s;  // the last fault, then healing every member (JVM starts)
constexpr auto drain_deadline = 60s;      // > acquire_timeout + a reconnect: a worker past it is wedged
constexpr auto orphan_deadline = 30s;     // nodes of expired or closed sessions go once the server ends them

struct options {
    long seconds = 20, sessions = 4, coroutines = 4;
    ull seed = std::random_device{}();
    bool cut_short = true;
};

// A session slot: its workers share one session, replaced by a new one (same io_context) once it expired.
struct slot {
    explicit slot(asio::io_context& ioc) : changed(ioc, clk::time_point::max()) {}
    std::shared_ptr<zklock::session> s;
    bool replacing = false;
    asio::steady_timer changed;  // cancelled when `s` was replaced: wakes the slot's workers
};

struct chaos {
    chaos(asio::io_context& i, options opt, std::string h) : ioc(i), o(opt), hosts(std::move(h)) {}
    asio::io_context& ioc;
    options o;
    std::string hosts;
    std::vector<std::unique_ptr<slot>> slots;
    // The protected resource, and who is using it (a section id; 0: nobody).
    ull counter = 0, increments = 0, inside = 0, next_id = 1;
    zklock::fencing_token last_token{};
    ull sections = 0, violations = 0, token_regressions = 0, late = 0, loss_warnings = 0, errors = 0,
        lost_at_entry = 0, replaced = 0, orphans = 0, wedged = 0;
    std::map<std::string, ull> error_kinds;
    std::optional<clk::time_point> last_entry;
    clk::duration longest_stall{};
    bool stop = false;  // tells the workers to finish
    long running = 0;   // workers not finished yet

    std::shared_ptr<zklock::session> make_session() const
    {
        zklock::session_config cfg;
        cfg.hosts = hosts;
        cfg.session_timeout = 4s;
        cfg.connect_timeout = 30s;  // an election after a kill can take seconds
        return std::make_shared<zklock::session>(ioc, std::move(cfg));
    }
    void count_error(const std::string& what)
    {
        ++errors;
        ++error_kinds[what];
    }
};

asio::awaitable<void> pause(clk::duration d)
{
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(tuple_awaitable);
}

// Suspends until done() or the limit (checking every 20 ms, as test_util's eventually()); false on the limit.
asio::awaitable<bool> wait_for(std::function<bool()> done, clk::duration limit)
{
    for (const auto deadline = clk::now() + limit; !done(); co_await pause(20ms))
        if (clk::now() >= deadline) co_return false;
    co_return true;
}

// The critical section proper: read-modify-write of the counter with a suspension in between, `steps` times.
asio::awaitable<void> work(chaos& c, const bool& warned, int steps)
{
    // The self-check (--no-cut-short): a holder deaf to cancellation keeps working past its warning.
    if (!c.o.cut_short) co_await asio::this_coro::reset_cancellation_state(asio::disable_cancellation());
    asio::steady_timer t(co_await asio::this_coro::executor);
    bool counted_late = false;
    for (int i = 0; i < steps; ++i) {
        const auto v = c.counter;
        t.expires_after(1ms);
        co_await t.async_wait(use_awaitable);
        // A timer whose completion was already queued when `||` cancelled us resumes us with success: a
        // careful section looks at its cancellation state whenever it resumes.
        if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) co_return;
        if (warned && !counted_late) {  // a step after the warning: the cut did not happen
            counted_late = true;
            ++c.late;
        }
        if (c.counter != v) ++c.violations;  // someone else wrote meanwhile: a lost update
        c.counter = v + 1;
        ++c.increments;
    }
}

// The other branch of `||`: completes (successfully) only when the lock is lost. The warning is recorded
// at the moment the holder learns it, and the holder stops using the resource at that moment.
asio::awaitable<void> watch_loss(chaos& c, zklock::guard& g, ull id, bool& warned)
{
    co_await g.async_wait_lost(use_awaitable);  // throws when released or cancelled (work finished first)
    warned = true;
    ++c.loss_warnings;
    if (c.inside == id) c.inside = 0;
}

asio::awaitable<void> critical_section(chaos& c, zklock::guard& g, int steps)
{
    if (g.lost()) {  // lost before we even resumed: the holder knows before it begins, and does not begin
        ++c.lost_at_entry;
        co_return;
    }
    const auto now = clk::now();
    if (c.last_entry) c.longest_stall = std::max(c.longest_stall, now - *c.last_entry);
    c.last_entry = now;
    ++c.sections;
    // A holder still inside is un-warned (a warning empties `inside`): two holders, and a warning too late.
    if (c.inside != 0) {
        ++c.violations;
        ++c.late;
    }
    // Tenures begin in entry order on this one thread, so each token must exceed every one before it.
    if (!(c.last_token < g.token())) ++c.token_regressions;
    c.last_token = std::max(c.last_token, g.token());
    const auto id = c.next_id++;
    c.inside = id;
    bool warned = false;
    co_await (work(c, warned, steps) || watch_loss(c, g, id, warned));
    if (c.inside == id) c.inside = 0;
}

// After an expiry (or a close) the slot gets a new session; workers that come later find it replaced.
asio::awaitable<void> replace(chaos& c, slot& sl, const std::shared_ptr<zklock::session>& old)
{
    if (sl.s != old || sl.replacing) co_return;
    sl.replacing = true;
    while (!c.stop) {
        auto fresh = c.make_session();
        auto [ec] = co_await fresh->async_connect(tuple_awaitable);
        if (!ec) {
            sl.s = std::move(fresh);  // the old one is closed when its last user lets go of it
            ++c.replaced;
            break;
        }
        c.count_error("reconnect: " + ec.message());
        co_await pause(200ms);
    }
    sl.replacing = false;
    sl.changed.cancel();
}

asio::awaitable<void> worker(chaos& c, slot& sl, ull seed)
{
    std::mt19937_64 rng(seed);
    while (!c.stop) {
        if (sl.replacing) {
            co_await sl.changed.async_wait(tuple_awaitable);
            continue;
        }
        const auto sp = sl.s;
        zklock::mutex m(*sp, lock_path, {.local_handoff_limit = 3});
        auto [ec, g] = co_await m.acquire(acquire_timeout, tuple_awaitable);
        if (ec) {
            c.count_error("acquire: " + ec.message());
            if (ec == zklock::error::session_expired || ec == zklock::error::session_closed || is_final(sp->state()))
                co_await replace(c, sl, sp);
            else if (ec != zklock::error::timeout)
                co_await pause(100ms);  // no busy loop on an error that comes at once
            continue;
        }
        // Mostly three steps; one section in twenty takes 0.5-4 s of them, so that faults land inside
        // sections: a holder is warned only after loss_grace (T/2 = 2 s) without answers, and only a
        // section that outlasts that can show whether the warning cuts it short.
        const int steps = rng() % 20 == 0 ? std::uniform_int_distribution(500, 4000)(rng) : 3;
        co_await critical_section(c, g, steps);
        auto [rec] = co_await g.release(tuple_awaitable);  // after a loss: the reason
        if (rec) c.count_error("release: " + rec.message());
    }
}

asio::awaitable<void> run_chaos(chaos& c, injector& inj)
{
    const auto ex = co_await asio::this_coro::executor;
    for (auto& sl : c.slots) {
        sl->s = c.make_session();
        co_await sl->s->async_connect(use_awaitable);
    }
    ull n = 0;
    for (auto& sl : c.slots) {
        for (long j = 0; j < c.o.coroutines; ++j) {
            ++c.running;
            asio::co_spawn(ex, worker(c, *sl, c.o.seed * 1000003 + ++n), [&c](std::exception_ptr e) {
                if (e) c.count_error("worker ended by an exception");
                --c.running;
            });
        }
    }
    inj.t = std::thread([&inj] { inj.loop(); });
    co_await pause(std::chrono::seconds(c.o.seconds));

    // The end: the last fault ends and every member runs again, while the workers go on (recovery).
    inj.stop = true;
    if (!co_await wait_for([&] { return inj.done.load(); }, injector_deadline))
        throw std::runtime_error("the fault injector did not finish (a member does not start?)");
    if (c.last_entry) c.longest_stall = std::max(c.longest_stall, clk::now() - *c.last_entry);
    c.stop = true;
    for (auto& sl : c.slots) sl->changed.cancel();
    if (!co_await wait_for([&] { return c.running == 0; }, drain_deadline)) {
        c.wedged = static_cast<ull>(c.running);   // an acquire or release that ignores its deadline
        for (auto& sl : c.slots) sl->s->close();  // fails what is pending, so that the loop can end
        if (!co_await wait_for([&] { return c.running == 0; }, 10s)) {
            c.ioc.stop();  // main() exits without destroying the stuck frames
            co_return;
        }
    }

    // Every guard is released and the workers' sessions are still open: children now are leaks, unless
    // they belong to expired or closed sessions, which the server removes in its own time: hence the polling.
    auto checker = c.make_session();
    co_await checker->async_connect(use_awaitable);
    std::vector<std::string> left;
    for (const auto deadline = clk::now() + orphan_deadline;;) {
        auto [ec, names, st] = co_await checker->async_get_children(lock_path, tuple_awaitable);
        const bool listed = !ec || ec == zklock::zk_errc::no_node;  // no_node: no children
        if (listed) left = names;
        if (listed && (left.empty() || clk::now() >= deadline)) break;
        if (clk::now() >= deadline) throw std::runtime_error("cannot list " + lock_path + ": " + ec.message());
        co_await pause(200ms);
    }
    c.orphans = left.size();
    for (const auto& name : left) std::fprintf(stderr, "chaos: orphan %s/%s\n", lock_path.c_str(), name.c_str());
    checker->close();
    for (auto& sl : c.slots) sl->s->close();
}

long number(const std::string& s)
{
    std::size_t end = 0;
    long v = -1;
    try {
        v = std::stol(s, &end);
    } catch (const std::logic_error&) {  // not a number, or out of range
    }
    if (v < 0 || end != s.size()) throw std::invalid_argument(s);
    return v;
}

}  // namespace

int main(int argc, char** argv)
{
    options o;
    try {
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            const bool v = i + 1 < argc;
            if (a == "--seconds" && v) o.seconds = number(argv[++i]);
            else if (a == "--sessions" && v) o.sessions = std::max(1L, number(argv[++i]));
            else if (a == "--coroutines" && v) o.coroutines = std::max(1L, number(argv[++i]));
            else if (a == "--seed" && v) o.seed = static_cast<ull>(number(argv[++i]));
            else if (a == "--no-cut-short") o.cut_short = false;
            else throw std::invalid_argument(a);
        }
    } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "zklock_chaos: bad argument '%s'\nusage: zklock_chaos [--seconds N] [--sessions N] "
                             "[--coroutines N] [--seed N] [--no-cut-short]\n", e.what());
        return 2;
    }
    std::fprintf(stderr, "chaos: seed=%llu\n", o.seed);
    try {
        zklock::testing::server_options so;
        so.tick_ms = 200;  // sessions of 4 s are allowed (2..20 ticks)
        std::optional<zklock::testing::cluster> cl(std::in_place, 3, so);
        asio::io_context ioc;  // run on this thread only
        chaos c(ioc, o, cl->connect_string());
        for (long i = 0; i < o.sessions; ++i) c.slots.push_back(std::make_unique<slot>(ioc));
        injector inj(*cl, o.seed);
        std::exception_ptr failure;
        asio::co_spawn(ioc, run_chaos(c, inj), [&](std::exception_ptr e) {
            if (!e) return;
            failure = e;  // end the workers too, so that the loop ends
            c.stop = true;
            for (auto& sl : c.slots) {
                sl->changed.cancel();
                if (sl->s) sl->s->close();
            }
        });
        ioc.run();
        inj.stop = true;
        if (inj.t.joinable()) inj.t.join();
        for (const auto& p : inj.problems) std::fprintf(stderr, "chaos: fault injector: %s\n", p.c_str());
        for (const auto& [kind, count] : c.error_kinds) std::fprintf(stderr, "chaos: error %s x%llu\n", kind.c_str(), count);
        std::fprintf(stderr, "chaos: counter=%llu increments=%llu sessions_replaced=%llu lost_at_entry=%llu wedged=%llu\n",
                     c.counter, c.increments, c.replaced, c.lost_at_entry, c.wedged);
        if (failure) std::rethrow_exception(failure);
        std::printf("chaos seconds=%ld sessions=%ld coroutines=%ld sections=%llu violations=%llu token_regressions=%llu "
                    "late_loss_warnings=%llu loss_warnings=%llu orphans=%llu longest_stall_ms=%lld faults=%llu errors=%llu\n",
                    o.seconds, o.sessions, o.coroutines, c.sections, c.violations, c.token_regressions, c.late,
                    c.loss_warnings, c.orphans,
                    static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(c.longest_stall).count()),
                    inj.faults.load(), c.errors);
        std::fflush(stdout);
        if (c.running > 0) {  // coroutine frames stuck in the stopped loop: do not run their destructors
            cl.reset();
            std::_Exit(1);
        }
        const bool ok = c.violations == 0 && c.token_regressions == 0 && c.late == 0 && c.orphans == 0 &&
                        c.sections > 0 && c.wedged == 0;
        return ok ? 0 : 1;
    } catch (const std::exception& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "zklock_chaos: error: %s\n", e.what());
        return 1;
    }
}
