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
asio::awaitable<void> settle();

/// Checks what the signal did, right after it (see settle).
asio::awaitable<void> check_at_once(const row& r, const outcome& o);

/// Waits for the operation to complete with its real result (success).
asio::awaitable<void> check_real_result(const row& r, const outcome& o);

/// Drops `s`'s connection while its server is frozen, and returns once the session knows (state
/// `connecting`): requests are now accepted and wait in the C client for the reconnect, which waits for thaw().
asio::awaitable<void> disconnect(zklock::session& s, zklock::testing::server& srv);

/// Thaws the server and waits until `s` is connected again.
asio::awaitable<void> reconnect(zklock::session& s, zklock::testing::server& srv);

/// Whether `s` still works: a request of it is answered.
asio::awaitable<bool> works(zklock::session& s);

/// `co_await (op() || timer)` with a 100 ms timer, while `op` can get no answer: it must return at the
/// timer (`||` emits every type), not when ZooKeeper answers or the client gives up.
asio::awaitable<void> check_or_timer(const char* verb, std::function<asio::awaitable<void>()> op);

/**
 * Starts an operation (`start`) at the row's stage, emits the row's type, checks the completion at once,
 * and returns once the server answers again and, for a signal that must be ignored, the operation has
 * completed with its real result. For the queued and completed stages, `until` runs between the start
 * and the signal (it makes the operation queue, or complete); at the queued stage the operation must not
 * have completed by then, at the completed stage it must.
 */
asio::awaitable<void> emit_at_stage(const row& r, zklock::session& s, zklock::testing::server& srv, probe& p,
                                    std::function<void()> start, std::function<asio::awaitable<void>()> until = {});

/// The number of children of each directory.
asio::awaitable<std::vector<std::size_t>> counts(zklock::session& s, const std::vector<std::string>& dirs);

}  // namespace test::cancel
