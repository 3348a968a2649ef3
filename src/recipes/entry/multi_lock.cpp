// The entry point of zklock/multi_lock.hpp: the first loss among several locks, which may belong to
// several sessions (and so complete on several threads).
#include "../lock_base.hpp"

#include <zklock/multi_lock.hpp>

#include <mutex>

namespace zklock::detail {

namespace {
/// The waits of async_wait_any_lost. They may complete on several sessions' threads: a mutex orders them.
/// The last reference to this state may go on any of those threads, so it holds the locks' states only
/// weakly: a lock of one session is never dropped on another's thread.
struct any_lost {
    struct part {
        std::weak_ptr<lock_base> state;
        asio::any_io_executor ex;
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
        for (auto& p : parts)
            asio::dispatch(p.ex, [w = p.state, id = p.id] {
                if (auto st = w.lock()) st->cancel_lost(id);
            });
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
        if (hr.state) st->parts.push_back({hr.state, hr.state->s->ex, hr.holder, hr.state->new_id()});
    if (st->parts.empty()) return complete_without_session(std::move(h), error_code(zklock::error::not_held), error_code{});
    st->remaining = st->parts.size();
    // Any cancellation type ends the wait. The handler hops onto the first lock's session before it
    // reaches the state, so that it never holds the last reference to it on the signal's thread.
    if (auto slot = asio::get_associated_cancellation_slot(h); slot.is_connected())
        slot.assign([w = std::weak_ptr<any_lost>(st), home = st->parts.front().ex](asio::cancellation_type) {
            asio::post(home, [w] {
                if (auto s = w.lock()) s->cancel_all();
            });
        });
    st->h = std::move(h);
    for (const auto& p : st->parts) {
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
        // `holds` keeps every state alive until this returns; the strong reference goes onto its executor.
        asio::dispatch(p.ex, [q = p.state.lock(), holder = p.holder, id = p.id, one = std::move(one)]() mutable {
            q->wait_lost(id, holder, std::move(one));
        });
    }
}

}  // namespace zklock::detail
