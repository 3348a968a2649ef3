// The entry points of zklock/guard.hpp: release, the loss and revocation waits, lease extension, and the
// guarded writes.
// Each entry point hops onto the session's executor (inline when already there), so that callers on other
// threads or strands are safe; the state is moved into the hop, so that the last reference to it is never
// dropped on the caller's thread.
#include "../drain.hpp"
#include "../lock_queue.hpp"

#include "../../session/pending_op.hpp"

#include <algorithm>

namespace zklock::detail {

void async_release(std::shared_ptr<lock_base> q, std::uint64_t holder, handler<> h)
{
    if (!q) {
        complete_without_session(std::move(h), error_code(zklock::error::not_held));
        return;
    }
    auto ex = q->s->ex;
    auto slot = asio::get_associated_cancellation_slot(h);
    release_completion done;
    // Terminal and partial complete the release at once; the node is deleted in the background all the
    // same. Total is ignored: a release cannot be undone, and total promises no side effect.
    if (slot.is_connected()) {
        auto shared = std::make_shared<pending_release>(std::move(h));
        slot.assign([w = std::weak_ptr<pending_release>(shared), s = std::weak_ptr<session_impl>(q->s), ex](asio::cancellation_type t) {
            if ((t & (asio::cancellation_type::terminal | asio::cancellation_type::partial)) == asio::cancellation_type::none)
                return;
            asio::post(ex, [w, s] {
                auto d = w.lock();
                auto ss = s.lock();
                if (d && ss) d->complete(*ss, asio::error::operation_aborted);
            });
        });
        done = release_completion(std::move(shared));
    } else {
        done = release_completion(std::move(h));  // shared later only if it must wait for ZooKeeper
    }
    asio::dispatch(ex, [q = std::move(q), holder, done = std::move(done)]() mutable {
        q->release(holder, std::move(done));
        note_release(*q->s);
    });
}

namespace {
/// A wait on what becomes of a hold (its loss, a revocation request): the caller's cancellation slot bound
/// here, then the hop onto the session's executor, where `wait(state, id, h)` starts it and `stop(state,
/// id)` ends it early.
template <class... Args, class Wait, class Stop>
void wait_on_hold(std::shared_ptr<lock_base> q, handler<Args...> h, Wait wait, Stop stop)
{
    if (!q) return complete_without_session(std::move(h), error_code(zklock::error::not_held), Args{}...);
    const auto id = q->new_id();
    bind_cancellation(h, q, [id, stop](lock_base& self) { stop(self, id); });
    auto ex = q->s->ex;
    asio::dispatch(ex, [q = std::move(q), id, h = std::move(h), wait]() mutable { wait(*q, id, std::move(h)); });
}
}  // namespace

void async_wait_lost(std::shared_ptr<lock_base> q, std::uint64_t holder, handler<error_code> h)
{
    wait_on_hold(
        std::move(q), std::move(h),
        [holder](lock_base& self, std::uint64_t id, handler<error_code> hh) { self.wait_lost(id, holder, std::move(hh)); },
        [](lock_base& self, std::uint64_t id) { self.cancel_lost(id); });
}

void async_wait_revoked(std::shared_ptr<lock_base> q, std::uint64_t holder, handler<> h)
{
    wait_on_hold(
        std::move(q), std::move(h),
        [holder](lock_base& self, std::uint64_t id, handler<> hh) { self.wait_revoked(id, holder, std::move(hh)); },
        [](lock_base& self, std::uint64_t id) { self.cancel_revoked(id); });
}

void async_extend_lease(std::shared_ptr<lock_base> q, std::uint64_t holder, std::chrono::steady_clock::duration length,
                        handler<> h)
{
    if (!q) return complete_without_session(std::move(h), error_code(zklock::error::not_held));
    if (length <= length.zero()) return complete_without_session(std::move(h), error_code(zklock::error::invalid_lease));
    auto ex = q->s->ex;
    asio::dispatch(ex, [q = std::move(q), holder, length, h = std::move(h)]() mutable {
        q->extend_lease(holder, length, std::move(h));
    });
}

void release_detached(std::shared_ptr<lock_base> q, std::uint64_t holder) noexcept
{
    try {
        auto ex = q->s->ex;
        asio::dispatch(ex, [q = std::move(q), holder] {
            q->release(holder, release_completion{});
            note_release(*q->s);
        });
    } catch (...) {  // out of memory in a destructor: nothing can be posted. The node still goes with the
                     // session; the reference goes here, off the executor, which is then the lesser harm.
    }
}

error_code lost_reason(const std::shared_ptr<lock_base>& q, std::uint64_t holder) noexcept { return q->losses.read(holder); }

namespace {
/// A guarded write, on the session's executor: one check per hold that its lock node still exists, then
/// `ops`, as one multi (ZooKeeper applies a multi's operations in order, all or none, so the writes land
/// only if every lock node exists at that moment). `done(ec, results of ops)` runs unless a cancellation
/// answered `pending` first; nothing is sent when it is over, a hold is known lost or the session has ended.
template <class Pending, class Done>
void send_guarded(Pending& pending, std::vector<hold_ref> holds, std::vector<multi_op> ops, Done done)
{
    const auto& s = pending->session();
    std::vector<multi_op> all;
    for (const auto& hr : holds) {
        error_code why = hr.state->lost(hr.holder);
        if (!why && !hr.state->holds(hr.holder)) why = zklock::error::not_held;
        if (why && why != zklock::error::ownership_uncertain)  // uncertain: the server decides
            return done(why, std::vector<multi_result>{});
        all.emplace_back(op::check{hr.node, -1});
    }
    for (auto& o : ops) all.push_back(std::move(o));
    // While a renewal opens the next session, every hold is of the one that expired (its holders are told
    // in a handler already posted): that loss, not the new session's "not connected".
    if (s->opening_renewed) return done(zklock::error::session_expired, std::vector<multi_result>{});
    if (auto ec = s->refusal()) return done(ec, std::vector<multi_result>{});  // nothing sent: not applied
    if (!pending->send_now()) return;
    auto never_sent = std::make_shared<bool>(false);
    s->refused_at_submit = false;
    s->multi(std::move(all), [s, n = holds.size(), never_sent, done = std::move(done)](error_code ec, std::vector<multi_result> r) mutable {
        for (std::size_t i = 0; i < n && i < r.size(); ++i)
            if (r[i].ec == zk_errc::no_node) ec = zklock::error::lock_node_deleted;
        if (answer_lost(ec) && !*never_sent) {  // sent, and no verdict came back: it may have been applied
            s->log->write(log_level::warning, "zklock: a guarded write's answer was lost (" + ec.message() +
                                                  "): it may or may not have been applied");
            ec = zklock::error::outcome_unknown;
        }
        r.erase(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(std::min(n, r.size())));
        done(ec, std::move(r));
    });
    *never_sent = s->refused_at_submit;  // before the answer runs: it is posted, never run inside multi()
}

/// The one session of `holds`, or null for an empty guard or locks of several sessions (one multi runs on
/// one session).
std::shared_ptr<session_impl> session_of(const std::vector<hold_ref>& holds)
{
    const bool one_session = !holds.empty() && holds.front().state &&
                             std::all_of(holds.begin(), holds.end(), [&](const hold_ref& hr) {
                                 return hr.state && hr.state->s == holds.front().state->s;
                             });
    return one_session ? holds.front().state->s : nullptr;
}
}  // namespace

void async_guarded_multi(std::vector<hold_ref> holds, std::vector<multi_op> ops, handler<std::vector<multi_result>> h)
{
    auto s = session_of(holds);
    if (!s) return complete_without_session(std::move(h), error_code(zklock::error::not_held), std::vector<multi_result>{});
    auto op = pending_op<std::vector<multi_result>>::bind(s, std::move(h), op_nature::write);
    asio::dispatch(s->ex, [op, holds = std::move(holds), ops = std::move(ops)]() mutable {
        send_guarded(op, std::move(holds), std::move(ops),
                     [op](error_code ec, std::vector<multi_result> r) { op->complete(ec, std::move(r)); });
    });
}

void async_guarded_set_data(hold_ref hold, std::string path, std::string data, int version, handler<> h)
{
    std::vector<hold_ref> holds;
    holds.push_back(std::move(hold));
    auto s = session_of(holds);
    if (!s) return complete_without_session(std::move(h), error_code(zklock::error::not_held));
    auto op = pending_op<>::bind(s, std::move(h), op_nature::write);
    std::vector<multi_op> ops;
    ops.emplace_back(op::set_data{std::move(path), std::move(data), version});
    asio::dispatch(s->ex, [op, holds = std::move(holds), ops = std::move(ops)]() mutable {
        send_guarded(op, std::move(holds), std::move(ops), [op](error_code ec, std::vector<multi_result>) { op->complete(ec); });
    });
}

}  // namespace zklock::detail
