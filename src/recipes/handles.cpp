// The entry points behind lock objects and guards. Each hops onto the session's executor (inline when
// already there), so that callers on other threads or strands are safe; the state is moved into the hop,
// so that the last reference to it is never dropped on the caller's thread.
#include "core/node_data.hpp"
#include "lock_queue.hpp"

#include "../session/pending_op.hpp"

#include <zklock/multi_lock.hpp>
#include <zklock/revoke.hpp>

#include <algorithm>
#include <mutex>

namespace zklock::detail {

static_assert(revoke_message == revoke_request, "the public revocation message is the one the holders hear");

void refuse_acquire(error_code why, handler<guard> h) { complete_without_session(std::move(h), why, guard{}); }

void async_acquire(std::shared_ptr<lock_queue> q, deadline d, lease_length lease, handler<guard> h)
{
    const auto id = q->new_id();
    bind_cancellation(h, q, [id](lock_queue& self) { self.cancel_waiter(id, asio::error::operation_aborted); });
    auto ex = q->s->ex;
    asio::dispatch(ex, [q = std::move(q), id, d, lease, h = std::move(h)]() mutable {
        q->acquire(id, d, lease, std::move(h));
    });
}

void async_wait_place(std::shared_ptr<lock_queue> q, error_code refusal, std::size_t known, handler<std::size_t> h)
{
    if (!q) return complete_without_session(std::move(h), refusal, std::size_t{0});
    const auto id = q->new_id();
    bind_cancellation(h, q, [id](lock_queue& self) { self.cancel_place(id); });
    auto ex = q->s->ex;
    asio::dispatch(ex, [q = std::move(q), id, known, h = std::move(h)]() mutable {
        q->wait_place(id, known, std::move(h));
    });
}

void drop_on_executor(std::shared_ptr<lock_queue> q) noexcept { drop_state_on_executor(std::move(q)); }

void async_reenter(std::shared_ptr<lock_queue> q, hold_ref held, handler<guard> h)
{
    if (!q || held.state != q) {  // no queue, an empty guard, or another lock's guard
        complete_without_session(std::move(h), error_code(zklock::error::not_held), guard{});
        return;
    }
    auto ex = q->s->ex;
    asio::dispatch(ex, [q = std::move(q), holder = held.holder, h = std::move(h)]() mutable {
        auto g = q->enter(holder);
        const error_code ec = g ? error_code{} : error_code(zklock::error::not_held);
        q->s->post_completion(std::move(h), ec, std::move(g));
    });
}

void async_release(std::shared_ptr<lock_base> q, std::uint64_t holder, handler<> h)
{
    if (!q) {
        complete_without_session(std::move(h), error_code(zklock::error::not_held));
        return;
    }
    auto ex = q->s->ex;
    auto slot = asio::get_associated_cancellation_slot(h);
    auto done = std::make_shared<pending_release>(std::move(h));
    // Cancellation completes the release at once; the node is deleted in the background all the same.
    if (slot.is_connected())
        slot.assign([w = std::weak_ptr<pending_release>(done), s = std::weak_ptr<session_impl>(q->s), ex](asio::cancellation_type) {
            asio::post(ex, [w, s] {
                auto d = w.lock();
                auto ss = s.lock();
                if (d && ss) d->complete(*ss, asio::error::operation_aborted);
            });
        });
    asio::dispatch(ex, [q = std::move(q), holder, done = std::move(done)]() mutable { q->release(holder, std::move(done)); });
}

void async_wait_lost(std::shared_ptr<lock_base> q, std::uint64_t holder, handler<error_code> h)
{
    if (!q) {
        complete_without_session(std::move(h), error_code(zklock::error::not_held), error_code{});
        return;
    }
    const auto id = q->new_id();
    bind_cancellation(h, q, [id](lock_base& self) { self.cancel_lost(id); });
    auto ex = q->s->ex;
    asio::dispatch(ex, [q = std::move(q), id, holder, h = std::move(h)]() mutable {
        q->wait_lost(id, holder, std::move(h));
    });
}

void async_wait_revoked(std::shared_ptr<lock_base> q, std::uint64_t holder, handler<> h)
{
    if (!q) {
        complete_without_session(std::move(h), error_code(zklock::error::not_held));
        return;
    }
    const auto id = q->new_id();
    bind_cancellation(h, q, [id](lock_base& self) { self.cancel_revoked(id); });
    auto ex = q->s->ex;
    asio::dispatch(ex, [q = std::move(q), id, holder, h = std::move(h)]() mutable {
        q->wait_revoked(id, holder, std::move(h));
    });
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
        asio::dispatch(ex, [q = std::move(q), holder] { q->release(holder, nullptr); });
    } catch (...) {  // allocation failure in a destructor: the session's end still frees the node
    }
}

error_code lost_reason(const std::shared_ptr<lock_base>& q, std::uint64_t holder) noexcept { return q->losses.read(holder); }

namespace {
/// The waits of async_wait_any_lost. They may complete on several sessions' threads: a mutex orders them.
struct any_lost {
    struct part {
        std::shared_ptr<lock_base> state;
        std::uint64_t holder, id;
    };
    std::mutex mu;
    std::vector<part> parts;
    std::size_t remaining = 0;
    bool decided = false;
    error_code reason;
    handler<error_code> h;

    /// Asks every wait still pending to stop (on its session's executor).
    void cancel_all()
    {
        for (auto& p : parts) asio::dispatch(p.state->s->ex, [st = p.state, id = p.id] { st->cancel_lost(id); });
    }
    /// The user's handler, on its own executor, its slot cleared there. (Called from a part's completion,
    /// never from the initiating function, so dispatch may run it at once.)
    static void finish(handler<error_code> h, error_code ec, error_code why)
    {
        auto ex = asio::get_associated_executor(h);
        asio::dispatch(ex, [h = std::move(h), ec, why]() mutable {
            if (auto slot = asio::get_associated_cancellation_slot(h); slot.is_connected()) slot.clear();
            std::move(h)(ec, why);
        });
    }
};
}  // namespace

void async_wait_any_lost(std::vector<hold_ref> holds, handler<error_code> h)
{
    auto st = std::make_shared<any_lost>();
    for (auto& hr : holds)
        if (hr.state) st->parts.push_back({hr.state, hr.holder, hr.state->new_id()});
    if (st->parts.empty()) return complete_without_session(std::move(h), error_code(zklock::error::not_held), error_code{});
    st->remaining = st->parts.size();
    // Any cancellation type ends the wait. The handler hops onto the first lock's session before it
    // reaches the state, so that it never holds the last reference to it on the signal's thread.
    if (auto slot = asio::get_associated_cancellation_slot(h); slot.is_connected())
        slot.assign([w = std::weak_ptr<any_lost>(st), home = st->parts.front().state->s->ex](asio::cancellation_type) {
            asio::post(home, [w] {
                if (auto s = w.lock()) s->cancel_all();
            });
        });
    st->h = std::move(h);
    for (auto& p : st->parts) {
        handler<error_code> one = [st](error_code ec, error_code why) {
            std::unique_lock<std::mutex> lock(st->mu);
            const bool first_loss = !ec && !st->decided;
            if (first_loss) st->decided = true, st->reason = why;
            const bool last = --st->remaining == 0;
            lock.unlock();
            if (first_loss) st->cancel_all();  // the others answer operation_aborted
            if (!last) return;
            const auto result = st->decided ? error_code{} : error_code(asio::error::operation_aborted);
            any_lost::finish(std::move(st->h), result, st->reason);
        };
        asio::dispatch(p.state->s->ex, [q = p.state, holder = p.holder, id = p.id, one = std::move(one)]() mutable {
            q->wait_lost(id, holder, std::move(one));
        });
    }
}

}  // namespace zklock::detail

namespace zklock::detail {

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
    if (auto ec = s->refusal()) return done(ec, std::vector<multi_result>{});  // nothing sent: not applied
    if (!pending->send_now()) return;
    s->multi(std::move(all), [s, n = holds.size(), done = std::move(done)](error_code ec, std::vector<multi_result> r) mutable {
        for (std::size_t i = 0; i < n && i < r.size(); ++i)
            if (r[i].ec == zk_errc::no_node) ec = zklock::error::lock_node_deleted;
        if (answer_lost(ec)) {  // sent, and no verdict came back: it may have been applied
            s->log->write(log_level::warning, "zklock: a guarded write's answer was lost (" + ec.message() +
                                                  "): it may or may not have been applied");
            ec = zklock::error::outcome_unknown;
        }
        r.erase(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(std::min(n, r.size())));
        done(ec, std::move(r));
    });
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

void async_request_revoke(const std::shared_ptr<session_impl>& s, std::string node, handler<> h)
{
    if (!s) return complete_without_session(std::move(h), error_code(zklock::error::no_session));
    auto op = pending_op<>::bind(s, std::move(h), op_nature::write);
    asio::dispatch(s->ex, [op, node = std::move(node)]() mutable {
        const auto& ss = op->session();
        if (auto ec = ss->refusal(node)) return op->complete(ec);
        if (!op->send_now()) return;
        ss->set_data(std::move(node), std::string(revoke_message), -1, [op](error_code ec, stat) { op->complete(ec); });
    });
}

}  // namespace zklock::detail
