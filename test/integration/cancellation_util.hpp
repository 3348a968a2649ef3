// The cancellation tables' shared parts: the rows (a verb, a cancellation type, a stage, what must come of
// it), a handler that records what an operation completed with, and the stages' real faults.
#pragma once

#include "test_util.hpp"

#include <zklock/multi_lock.hpp>
#include <zklock/testing/faults.hpp>

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>

#include <functional>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <ostream>
#include <vector>

namespace test::cancel {

/// How far the operation got when the signal came.
enum class stage {
    before_send,   ///< initiated from outside the session's strand: the hop onto it has not run yet
    disconnected,  ///< accepted while the session is not connected (its server frozen, the connection dropped)
    queued,        ///< waiting behind a held lock, or for an event that has not come
    in_flight,     ///< its request sent to a server that is frozen, so no answer can come
    completed,     ///< already completed (granted): a late signal must do nothing
};

/// What the signal must do.
enum class expect {
    aborted,  ///< complete at once with operation_aborted
    ignored,  ///< nothing now: the operation completes later with its real result
    nothing,  ///< (a completed operation) nothing at all
};

/// A row of a table: the verb, the type emitted, the stage, the outcome required.
struct row {
    const char* verb;
    asio::cancellation_type type;
    stage at;
    expect outcome;
};

inline const char* name(asio::cancellation_type t)
{
    switch (t) {
    case asio::cancellation_type::terminal: return "terminal";
    case asio::cancellation_type::partial: return "partial";
    case asio::cancellation_type::total: return "total";
    default: return "all";
    }
}
inline const char* name(stage s)
{
    switch (s) {
    case stage::before_send: return "just started (not yet sent)";
    case stage::disconnected: return "not connected";
    case stage::queued: return "queued";
    case stage::in_flight: return "in flight";
    case stage::completed: return "completed";
    }
    return "?";
}
inline const char* name(expect e)
{
    switch (e) {
    case expect::aborted: return "operation_aborted at once";
    case expect::ignored: return "ignored, real result later";
    case expect::nothing: return "nothing";
    }
    return "?";
}
inline std::ostream& operator<<(std::ostream& o, const row& r)
{
    return o << r.verb << " / " << name(r.type) << " / " << name(r.at) << " -> " << name(r.outcome);
}

/// The rows for `verb` at `stages`, one per type: each type gets `outcome(type, stage)`.
template <class Outcome>
std::vector<row> rows_for(const char* verb, std::vector<stage> stages, Outcome outcome)
{
    std::vector<row> out;
    for (auto at : stages)
        for (auto t : {asio::cancellation_type::terminal, asio::cancellation_type::partial, asio::cancellation_type::total})
            out.push_back({verb, t, at, outcome(t, at)});
    return out;
}
/// An undoable operation's outcome: aborted at once, except after its completion.
inline expect as_undoable(asio::cancellation_type, stage at) { return at == stage::completed ? expect::nothing : expect::aborted; }
/// A write's: aborted before it is sent; after, terminal and partial only.
inline expect as_write(asio::cancellation_type t, stage at)
{
    if (at == stage::completed) return expect::nothing;
    if (at == stage::before_send) return expect::aborted;
    return t == asio::cancellation_type::total ? expect::ignored : expect::aborted;
}
/// A release's: it cannot be undone, so total is ignored at every stage (terminal and partial end the wait).
inline expect as_release(asio::cancellation_type t, stage at)
{
    if (at == stage::completed) return expect::nothing;
    return t == asio::cancellation_type::total ? expect::ignored : expect::aborted;
}
/// The rows of every verb of a table, `rows_of(verb)` each.
template <class Verbs, class RowsOf>
std::vector<row> table_rows(const Verbs& verbs, RowsOf rows_of)
{
    std::vector<row> out;
    for (const auto& v : verbs) {
        auto t = rows_of(v);
        out.insert(out.end(), t.begin(), t.end());
    }
    return out;
}
/// The verb of a table named `name` (a row names its verb).
template <class Verbs>
const auto& named(const Verbs& verbs, std::string_view name)
{
    for (const auto& v : verbs)
        if (name == v.name) return v;
    throw std::logic_error("no verb " + std::string(name));
}
template <class... Tables>
std::vector<row> join(Tables... tables)
{
    std::vector<row> out;
    (out.insert(out.end(), tables.begin(), tables.end()), ...);
    return out;
}

/// What an operation completed with (and, for acquires, what it holds).
struct outcome {
    bool done = false;
    error_code ec;
    std::vector<zklock::guard> guards;
    zklock::multi_guard multi;
};

/// A completion handler for any signature `void(error_code, ...)` that records into an outcome.
struct record {
    std::shared_ptr<outcome> o;
    template <class... A>
    void operator()(error_code ec, A&&... a) const
    {
        o->done = true;
        o->ec = ec;
        (keep(std::forward<A>(a)), ...);
    }
    void keep(zklock::guard g) const { o->guards.push_back(std::move(g)); }
    void keep(std::vector<zklock::guard> gs) const
    {
        for (auto& g : gs) o->guards.push_back(std::move(g));
    }
    void keep(zklock::multi_guard m) const { o->multi = std::move(m); }
    template <class T>
    void keep(T&&) const
    {
    }
};
using bound_record =
    asio::cancellation_slot_binder<asio::executor_binder<record, asio::io_context::executor_type>, asio::cancellation_slot>;

/// One operation under test: its signal and what it completed with.
struct probe {
    asio::io_context& ioc;
    asio::cancellation_signal signal;
    std::shared_ptr<outcome> result = std::make_shared<outcome>();
    explicit probe(asio::io_context& io) : ioc(io) {}
    /// The completion token to start the operation with (completes on `ioc`).
    bound_record handler() { return asio::bind_cancellation_slot(signal.slot(), asio::bind_executor(ioc.get_executor(), record{result})); }
    void emit(asio::cancellation_type t) { signal.emit(t); }
};

/// Runs what is ready on the executor a number of times: a cancellation's hop onto the session's executor
/// and the completion it posts have run after it. "At once" in these tables means "within this", without
/// any I/O.
inline asio::awaitable<void> settle()
{
    for (int i = 0; i < 16; ++i) co_await yield();
}

/// Checks what the signal did, right after it (see settle).
inline asio::awaitable<void> check_at_once(const row& r, const outcome& o)
{
    co_await settle();
    switch (r.outcome) {
    case expect::aborted:
        BOOST_TEST(o.done, r << ": not completed at once");
        BOOST_TEST(o.ec == asio::error::operation_aborted, r << ": " << o.ec.message());
        break;
    case expect::ignored: BOOST_TEST(!o.done, r << ": completed at once (" << o.ec.message() << ")"); break;
    case expect::nothing:
        BOOST_TEST(o.done, r);
        BOOST_TEST(!o.ec, r << ": " << o.ec.message());
        break;
    }
}

/// Waits for the operation to complete with its real result (success).
inline asio::awaitable<void> check_real_result(const row& r, const outcome& o)
{
    BOOST_TEST(co_await eventually([&]() -> asio::awaitable<bool> { co_return o.done; }), r << ": never completed");
    BOOST_TEST(!o.ec, r << ": " << o.ec.message());
}

/// Drops `s`'s connection while its server is frozen, and returns once the session knows (state
/// `connecting`): requests are now accepted and wait in the C client for the reconnect, which waits for thaw().
inline asio::awaitable<void> disconnect(zklock::session& s, zklock::testing::server& srv)
{
    srv.freeze();
    zklock::testing::drop_connection(s);
    if (s.state() == zklock::session_state::connected)
        co_await s.async_wait_state(zklock::session_state::connected, use_awaitable);
    BOOST_REQUIRE(s.state() == zklock::session_state::connecting);
}

/// Thaws the server and waits until `s` is connected again.
inline asio::awaitable<void> reconnect(zklock::session& s, zklock::testing::server& srv)
{
    srv.thaw();
    BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return s.state() == zklock::session_state::connected; }, 20s));
}

/// Whether `s` still works: a request of it is answered.
inline asio::awaitable<bool> works(zklock::session& s)
{
    auto [ec] = co_await s.async_sync("/", tuple_awaitable);
    BOOST_TEST(!ec, "the session does not work: " << ec.message());
    co_return !ec;
}

/// `co_await (op() || timer)` with a 100 ms timer, while `op` can get no answer: it must return at the
/// timer (`||` emits every type), not when ZooKeeper answers or the client gives up.
inline asio::awaitable<void> check_or_timer(const char* verb, std::function<asio::awaitable<void>()> op)
{
    using clock = std::chrono::steady_clock;
    struct race {
        bool done = false;
        std::size_t winner = 0;
        clock::time_point at;
    };
    auto st = std::make_shared<race>();
    auto ex = co_await asio::this_coro::executor;
    auto timer = std::make_shared<asio::steady_timer>(ex, 100ms);
    const auto start = clock::now();
    asio::co_spawn(
        ex,
        [st, timer, op]() -> asio::awaitable<void> {
            using namespace asio::experimental::awaitable_operators;
            auto r = co_await (op() || timer->async_wait(use_awaitable));
            st->winner = r.index();
            st->at = clock::now();
            st->done = true;
        },
        asio::detached);
    BOOST_REQUIRE_MESSAGE(co_await eventually([&]() -> asio::awaitable<bool> { co_return st->done; }, 5s),
                          verb << " || timer did not return");
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(st->at - start);
    BOOST_TEST(st->winner == 1u, verb);
    BOOST_TEST(took < 600ms, verb << " || timer returned after " << took.count() << " ms, not at the timer (100 ms)");
    BOOST_TEST_MESSAGE("measured: " << verb << " || timer (100 ms): returned after " << took.count() << " ms");
}

/**
 * Starts an operation (`start`) at the row's stage, emits the row's type, checks the completion at once,
 * and returns once the server answers again and, for a signal that must be ignored, the operation has
 * completed with its real result. For the queued and completed stages, `until` runs between the start
 * and the signal (it makes the operation queue, or complete); at the queued stage the operation must not
 * have completed by then, at the completed stage it must.
 */
inline asio::awaitable<void> emit_at_stage(const row& r, zklock::session& s, zklock::testing::server& srv, probe& p,
                                           std::function<void()> start, std::function<asio::awaitable<void>()> until = {})
{
    if (r.at == stage::in_flight) srv.freeze();
    if (r.at == stage::disconnected) co_await disconnect(s, srv);
    if (r.at == stage::before_send) {
        asio::post(p.ioc, [&] {  // outside the session's strand: the operation's hop onto it is still queued
            start();
            p.emit(r.type);
        });
    } else {
        start();
        if (until) co_await until();
        if (r.at == stage::completed)
            BOOST_REQUIRE(co_await eventually([&]() -> asio::awaitable<bool> { co_return p.result->done; }));
        if (r.at == stage::queued) {
            co_await settle();
            BOOST_REQUIRE_MESSAGE(!p.result->done, r << ": not queued");
        }
        p.emit(r.type);
    }
    co_await check_at_once(r, *p.result);
    if (r.at == stage::in_flight) srv.thaw();
    if (r.at == stage::disconnected) co_await reconnect(s, srv);
    if (r.outcome == expect::ignored) co_await check_real_result(r, *p.result);
}

/// The number of children of each directory.
inline asio::awaitable<std::vector<std::size_t>> counts(zklock::session& s, const std::vector<std::string>& dirs)
{
    std::vector<std::size_t> out;
    for (const auto& d : dirs) out.push_back((co_await children(s, d)).size());
    co_return out;
}

}  // namespace test::cancel
