// Several locks taken all together or not at all, under one deadline, without deadlock.
#pragma once

#include <zklock/clock.hpp>
#include <zklock/mutex.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/shared_mutex.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

namespace zklock {

namespace detail {
/// Completes `h` successfully with the first loss among `holds`, or with operation_aborted once every one
/// was released or it was cancelled (not_held if there are none). Not parallel_group: see docs/DESIGN.md.
void async_wait_any_lost(std::vector<hold_ref> holds, handler<error_code> h);
}  // namespace detail

/// One lock of a multi_lock: a mutex, one side of a shared_mutex, or one permit of a semaphore. It keeps a
/// copy of the lock object (a handle: copies share the session's state for the path).
class lock_item {
public:
    /// The mutex `m`; implicit, so that a multi_lock can be given mutexes as they are.
    lock_item(mutex m) : path_(m.path()), start_(starter(std::move(m))) {}  // NOLINT: implicit on purpose
    /// One permit of the semaphore `s`; implicit, as for a mutex.
    lock_item(semaphore s) : path_(s.path()), rank_(2), start_(starter(std::move(s))) {}  // NOLINT
    /// The write side of `rw`.
    static lock_item exclusive(shared_mutex rw)
    {
        auto path = rw.path();  // before rw is moved into the starter
        return lock_item(std::move(path), 0, starter(std::move(rw), false));
    }
    /// The read side of `rw`.
    static lock_item shared(shared_mutex rw)
    {
        auto path = rw.path();
        return lock_item(std::move(path), 1, starter(std::move(rw), true));
    }

    /// The lock's path, by which multi_lock orders the locks and finds a path given twice.
    const std::string& path() const noexcept { return path_; }
    /// The global order every multi_lock takes its locks in: by path, then kind.
    friend bool operator<(const lock_item& a, const lock_item& b)
    {
        return a.path_ != b.path_ ? a.path_ < b.path_ : a.rank_ < b.rank_;
    }
    /// Starts one acquire, until `d` (none: no deadline).
    void start(detail::deadline d, detail::handler<guard> h) const { start_(d, std::nullopt, std::move(h)); }
    /// Starts one acquire, until `d` (none: no deadline), held at most for `l` once granted (none: no lease).
    void start(detail::deadline d, detail::lease_length l, detail::handler<guard> h) const
    {
        start_(d, l, std::move(h));
    }

private:
    using start_fn = std::function<void(detail::deadline, detail::lease_length, detail::handler<guard>)>;
    /// What is left until `d`, for the recipes' acquire with a lease (none: more than the clock can count,
    /// which they take as no deadline).
    static std::chrono::steady_clock::duration left(detail::deadline d)
    {
        return d ? *d - zklock::clock::now() : std::chrono::steady_clock::duration::max();
    }
    lock_item(std::string path, int rank, start_fn fn) : path_(std::move(path)), rank_(rank), start_(std::move(fn)) {}
    template <class Lock>
    static start_fn starter(Lock l)
    {
        return [l = std::move(l)](detail::deadline d, detail::lease_length len, detail::handler<guard> h) mutable {
            if (len) l.acquire(left(d), lease(*len), std::move(h));
            else if (d) l.acquire_until(*d, std::move(h));
            else l.acquire(std::move(h));
        };
    }
    static start_fn starter(shared_mutex rw, bool read)
    {
        return [rw = std::move(rw), read](detail::deadline d, detail::lease_length len, detail::handler<guard> h) mutable {
            if (len && read) rw.acquire_shared(left(d), lease(*len), std::move(h));
            else if (len) rw.acquire(left(d), lease(*len), std::move(h));
            else if (read && d) rw.acquire_shared_until(*d, std::move(h));
            else if (read) rw.acquire_shared(std::move(h));
            else if (d) rw.acquire_until(*d, std::move(h));
            else rw.acquire(std::move(h));
        };
    }

    std::string path_;
    int rank_ = 0;
    start_fn start_;
};

/**
 * The guards of a multi_lock, in the order they were taken. Move-only; destroying it releases every
 * lock in the background.
 */
class multi_guard {
public:
    multi_guard() = default;
    /// Holds the guards `g` as one; they count as taken in the order of `g` (release() lets go in reverse).
    explicit multi_guard(std::vector<guard> g) : guards_(std::move(g)) {}

    /// True until released (it stays true after a loss, as for guard::owns_lock).
    bool owns_lock() const noexcept { return !guards_.empty(); }
    /// The same as owns_lock().
    explicit operator bool() const noexcept { return owns_lock(); }
    /// The guard of each lock, in the order they were taken (for each one's node() or token()).
    const std::vector<guard>& guards() const noexcept { return guards_; }

    /// The first loss among the locks (see guard::lost); on the sessions' executor.
    error_code lost() const noexcept
    {
        for (const auto& g : guards_)
            if (auto why = g.lost()) return why;
        return {};
    }

    /**
     * Completes successfully with the reason when any of the locks is lost (see guard::async_wait_lost),
     * with `operation_aborted` when all were released or it was cancelled. Signature
     * `void(error_code, error_code reason)`.
     *
     * @par Executor
     * One loss wait per lock, each on its lock's session's executor (the locks may belong to several
     * sessions); the completion runs on the handler's associated executor, never inside this call.
     *
     * @par Per-operation cancellation
     * Terminal, partial and total alike (a pure wait): every lock's wait is stopped, and it completes with
     * `operation_aborted` once they have all answered (at once, but for the hops). The holds are not
     * affected. A signal after the completion does nothing.
     *
     * @par Errors
     * Success, with the first loss's reason as result (as guard::async_wait_lost: `error::lock_node_deleted`,
     * `error::ownership_uncertain`, `error::session_expired`, `error::session_closed`, `error::auth_failed`,
     * `error::lease_expired`); a loss already known completes it at once. `operation_aborted` when every
     * lock was released first (released ones stop being watched, the others still are), or when cancelled.
     * `error::not_held` on an empty multi_guard.
     *
     * @par Thread safety
     * May be initiated from any thread or strand (the initiation only reads this multi_guard; nobody may
     * modify it meanwhile), and cancelled from the thread or strand that owns the signal.
     *
     * @par Object lifetimes
     * The holds are copied when this is called: the multi_guard may be moved meanwhile, and releasing or
     * destroying it completes the wait with `operation_aborted`. Nothing else needs to be kept; the
     * sessions' io_contexts and the handler's must run until it completes.
     */
    template <class CompletionToken = asio::deferred_t>
    auto async_wait_lost(CompletionToken&& token = {})
    {
        std::vector<detail::hold_ref> holds;
        for (const auto& g : guards_) holds.push_back(hold_of(g));
        return asio::async_initiate<CompletionToken, void(error_code, error_code)>(
            [](auto h, std::vector<detail::hold_ref> hs) { detail::async_wait_any_lost(std::move(hs), std::move(h)); },
            token, std::move(holds));
    }

    /**
     * Guarded writes over every lock at once (see guard::async_guarded_multi, whose errors, cancellation
     * and `error::outcome_unknown` apply): one check per lock node, then `ops`, as one multi. The locks
     * must belong to one session (else `error::not_held`). Signature
     * `void(error_code, std::vector<multi_result>)`: the results of `ops` (the checks' are left out).
     *
     * @par Executor
     * The initiation hops onto the locks' session's executor (inline when already there), where the multi
     * is sent; the completion runs on the handler's associated executor, never inside this call.
     *
     * @par Per-operation cancellation
     * As guard::async_guarded_multi: before the multi is sent, any type (terminal, partial, total)
     * completes it at once with `operation_aborted` and nothing is sent. Once sent, terminal and partial
     * complete it at once with `operation_aborted`, and the write may still be applied (resolve it as for
     * `error::outcome_unknown`); total is ignored then: it completes with its real result. A signal after
     * the completion does nothing.
     *
     * @par Errors
     * Success: every operation was applied. `error::outcome_unknown`: sent, and its answer lost (it may or
     * may not have been applied). Nothing applied: `error::lock_node_deleted` when a check failed (one of
     * the lock nodes is gone); a lock's loss reason when it is already known (nothing is sent;
     * `error::ownership_uncertain` is left to the server to decide); the session's end when it had ended
     * before (`error::session_expired`, `error::session_closed`, `error::auth_failed`, or
     * `error::not_connected`; nothing is sent); `error::not_held` for an empty multi_guard, a released
     * lock, or locks of several sessions; else the first failing operation's code (e.g.
     * `zk_errc::bad_version`, `zk_errc::no_node`). `operation_aborted` when cancelled (above).
     *
     * @par Thread safety
     * May be initiated from any thread or strand (the initiation only reads this multi_guard), and cancelled
     * from the thread or strand that owns the signal.
     *
     * @par Object lifetimes
     * The holds and `ops` are copied when this is called: the multi_guard may be released or destroyed
     * meanwhile (the write then meets the server's checks like any other). The session's io_context and the
     * handler's must run until it completes.
     */
    template <class CompletionToken = asio::deferred_t>
    auto async_guarded_multi(std::vector<multi_op> ops, CompletionToken&& token = {})
    {
        std::vector<detail::hold_ref> holds;
        for (const auto& g : guards_) holds.push_back(hold_of(g));
        return asio::async_initiate<CompletionToken, void(error_code, std::vector<multi_result>)>(
            [](auto h, std::vector<detail::hold_ref> hs, std::vector<multi_op> o) {
                detail::async_guarded_multi(std::move(hs), std::move(o), std::move(h));
            },
            token, std::move(holds), std::move(ops));
    }

    /**
     * Releases every lock, in the reverse order of acquisition; completes with the first error (e.g. a
     * loss reason) once all are released. Signature `void(error_code)`. The multi_guard is empty once the
     * operation is initiated; a deferred release dropped unawaited leaves it holding (as guard::release),
     * so the multi_guard must outlive the initiation.
     *
     * @par Executor
     * One guard::release after another, each on its lock's session's executor; each step, and the
     * completion, runs on the handler's associated executor, never inside this call (an empty multi_guard
     * too, which has no step to take). A handler with no executor of its own (a plain callback) runs on
     * `asio::system_executor`'s threads, as Asio's composed operations do: bind yours
     * (`asio::bind_executor`) to be called on it.
     *
     * @par Per-operation cancellation
     * Terminal and partial (as for guard::release; the operation lets both through): the release under
     * way completes at once with `operation_aborted`, and so does the whole; that lock and those not yet
     * released are released in the background all the same. Total is ignored, as by guard::release: the
     * release completes with its real result. A signal after the completion does nothing.
     *
     * @par Errors
     * Success when every lock was released cleanly; else the first error met in the order of release (the
     * last-taken lock first), as guard::release reports it: a loss reason (`error::lock_node_deleted`,
     * `error::session_expired`, `error::lease_expired`, ...), the session's end, a ZooKeeper code. Every
     * lock is released all the same. `operation_aborted` when cancelled. An empty multi_guard completes
     * with success (where guard::release says `error::not_held`).
     *
     * @par Thread safety
     * May be initiated from any thread or strand, while no other thread uses this multi_guard (the
     * initiation empties it); the locks may belong to several sessions. Cancel from the thread or strand
     * that owns the signal, which should be the handler's executor: the steps bind each release's slot
     * there.
     *
     * @par Object lifetimes
     * The multi_guard must outlive the initiation (a deferred release refers to it until it is awaited);
     * after that it is empty and may go. The sessions' io_contexts and the handler's must run until it
     * completes.
     */
    template <class CompletionToken = asio::deferred_t>
    auto release(CompletionToken&& token = {})
    {
        return asio::async_compose<CompletionToken, void(error_code)>(
            // The guards move out at initiation (the first step), not when release() is called: a deferred
            // release dropped unawaited leaves them held, as guard::release does.
            [owner = this, guards = std::vector<guard>{}, first = error_code{}, started = false](
                auto& self, error_code ec = {}) mutable {
                if (!started) {
                    // Terminal and partial reach each guard::release; total is filtered out, as there.
                    self.reset_cancellation_state(asio::enable_partial_cancellation());
                    guards = std::exchange(owner->guards_, {});
                    if (guards.empty()) {  // nothing to release: complete, but never inside the initiating call
                        started = true;
                        return asio::post(asio::append(std::move(self), error_code{}));
                    }
                }
                if (started && ec && !first) first = ec;
                const bool cancelled = started && self.get_cancellation_state().cancelled() != asio::cancellation_type::none;
                started = true;
                if (cancelled) {
                    guards.clear();  // released in the background
                    return self.complete(error_code(asio::error::operation_aborted));
                }
                if (guards.empty()) return self.complete(first);
                auto g = std::move(guards.back());
                guards.pop_back();
                g.release(std::move(self));
            },
            token);
    }

private:
    std::vector<guard> guards_;
};

namespace detail {
/// The multi_lock's acquire: one lock after another in the global order, each until the one deadline;
/// on the first failure the ones taken are released (in the background) and the error is reported.
struct multi_acquire_op {
    std::shared_ptr<const std::vector<lock_item>> items;
    deadline until;
    lease_length hold_limit;  // for all the locks together, from the first grant
    error_code refusal;
    std::vector<guard> taken;
    std::chrono::steady_clock::time_point hold_ends{};  // with a hold_limit, once the first lock is held
    enum { starting, answered_at_once, acquiring } state = starting;

    template <class Self>
    void operator()(Self& self, error_code ec = {}, guard g = {})
    {
        switch (state) {
        case starting:
            // async_compose lets only terminal cancellation through: let every type reach the inner acquire
            // (each gives back what it took), as Boost.Redis's exec_fsm does in its setup_cancellation step.
            self.reset_cancellation_state(asio::enable_total_cancellation());
            if (refusal || items->empty()) {
                // Never complete inside the initiating call: through the handler's executor instead.
                state = answered_at_once;
                auto ex = asio::get_associated_executor(self, asio::system_executor());
                return asio::post(ex, asio::append(std::move(self), refusal, guard{}));
            }
            state = acquiring;
            break;
        case answered_at_once: return self.complete(ec, multi_guard{});
        case acquiring:
            if (!ec && self.get_cancellation_state().cancelled() != asio::cancellation_type::none)
                ec = asio::error::operation_aborted;
            if (ec) {
                taken.clear();  // released in the background
                return self.complete(ec, multi_guard{});
            }
            if (hold_limit && taken.empty()) {
                // From the first grant, where that lock's own lease started; not from now, which may be
                // long after it when the handler's executor was busy.
                const auto granted = granted_at(g);
                hold_ends = (granted == std::chrono::steady_clock::time_point{} ? zklock::clock::now() : granted) +
                            *hold_limit;
            }
            taken.push_back(std::move(g));
            // A lock taken before may have been lost meanwhile (its node deleted, its session ended): no
            // lost guard is handed out, as no single-lock acquire hands one out.
            for (const auto& t : taken)
                if (auto why = t.lost()) {
                    taken.clear();  // released in the background
                    return self.complete(why, multi_guard{});
                }
            break;
        }
        lease_length left = hold_limit;
        if (hold_limit && !taken.empty()) {
            left = hold_ends - zklock::clock::now();
            if (*left <= left->zero()) {  // the first lock's lease ran out before the others were held
                taken.clear();             // released in the background
                return self.complete(error_code(zklock::error::lease_expired), multi_guard{});
            }
        }
        if (taken.size() == items->size()) return self.complete(error_code{}, multi_guard(std::move(taken)));
        (*items)[taken.size()].start(until, left, handler<guard>(std::move(self)));
    }
};
}  // namespace detail

/**
 * Several locks (mutexes, read or write sides of shared_mutexes, semaphore permits, of any sessions),
 * taken all together or not at all, under one deadline. They are always taken in one global order
 * (by path), so two multi_locks over overlapping sets never deadlock; a path may appear once.
 *
 * Unlike Curator's InterProcessMultiLock, the timeout covers the whole acquire (not each lock), and a
 * failure or cancellation releases what was taken before completing.
 *
 * The acquires below say in their own paragraphs on which executor they run and complete, which
 * cancellation types they support, their errors, their thread safety and what must outlive them. In
 * short: any cancellation type, at any stage, gives back what was taken; on any error nothing is left
 * held; steps complete on the handler's associated executor (a plain callback's: asio::system_executor,
 * as for any composed operation of Asio); the lock objects follow their own rules
 * (see mutex.hpp).
 */
class multi_lock {
public:
    /// `zklock::multi_lock both(zklock::mutex{s, "/a"}, zklock::lock_item::shared(rw));`
    template <class... Lock>
        requires(sizeof...(Lock) > 0 && (std::is_convertible_v<Lock, lock_item> && ...))
    explicit multi_lock(Lock... locks) : multi_lock(list(std::move(locks)...))
    {
    }
    /// The locks of `items`, in any order (they are sorted into the global order); for a list built at run
    /// time. A path given twice makes every acquire fail with `error::conflicting_options`.
    explicit multi_lock(std::vector<lock_item> items)
    {
        std::sort(items.begin(), items.end());
        for (std::size_t i = 1; i < items.size(); ++i)
            if (items[i].path() == items[i - 1].path()) refusal_ = zklock::error::conflicting_options;
        items_ = std::make_shared<const std::vector<lock_item>>(std::move(items));
    }

    /**
     * All the locks within `timeout` (zero: one look at each; too long for the clock: no deadline).
     * Completion `void(error_code, multi_guard)`. These paragraphs hold for the overloads below (with a
     * lease, with no deadline).
     *
     * @par Executor
     * Each lock's acquire runs on its session's executor (the locks may belong to several sessions). The
     * operation's own steps, which start each next acquire, run on the handler's associated executor, and
     * so does the completion, never inside this call (a refusal is posted there).
     *
     * @par Per-operation cancellation
     * Terminal, partial and total alike, at any stage (the operation lets every type through to the lock
     * being acquired): that acquire gives back what it created (see mutex::acquire), the locks already
     * taken are released in the background, and the acquire completes at once with `operation_aborted`,
     * nothing left held. A signal after the completion does nothing.
     *
     * @par Errors
     * `error::conflicting_options` when one path appears twice (nothing is tried); `error::invalid_lease`
     * for a lease of zero or less; `error::lease_expired` when the lease ran out before all the locks were
     * held; `error::timeout` when the one deadline passed first (or, for a one look, a lock was not free).
     * Else the error of the lock that failed, as its own acquire reports it (mutex::acquire,
     * shared_mutex::acquire, shared_mutex::acquire_shared, semaphore::acquire): the session's end
     * (`error::session_expired`, `error::session_closed`, `error::auth_failed`), `error::not_connected`,
     * `error::invalid_path`, `error::schema_mismatch`, `error::draining`, the ACL's refusals, a lock object's
     * own `error::conflicting_options` or `error::no_session`, a semaphore's `error::invalid_permit_count`,
     * ZooKeeper's codes. A lock taken before the last one and lost meanwhile fails the acquire with its loss
     * reason (`error::lock_node_deleted`, `error::session_expired`, `error::ownership_uncertain`, ...):
     * no lost lock is handed out. `operation_aborted` when cancelled. On any error nothing is left held. With no locks
     * at all (an empty list), success with an empty multi_guard.
     *
     * @par Thread safety
     * May be initiated from any thread or strand: the initiation only reads this multi_lock (it shares its
     * list of locks). Cancel from the thread or strand that owns the signal, which should be the handler's
     * executor: the steps bind each lock acquire's slot there.
     *
     * @par Object lifetimes
     * The operation shares the list of locks (copies of the lock objects, which keep each path's state
     * alive): this multi_lock may go right after the call. Destroying a session meanwhile closes it: a lock
     * of it not yet taken fails the acquire with `error::session_closed` (what was taken is released), one
     * already taken is lost (see multi_guard::lost). The sessions' io_contexts and the handler's must run
     * until the acquire completes.
     */
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
        requires(!std::is_same_v<std::decay_t<CompletionToken>, lease>)
    auto acquire(std::chrono::duration<Rep, Period> timeout, CompletionToken&& token = {})
    {
        return initiate(detail::deadline_after(timeout), token);
    }
    /// As above, holding all the locks at most for `l` (see zklock::lease) from the moment the first one is
    /// held: each later lock takes what is left of `l`, so that all run out together; the loss signals
    /// (multi_guard::async_wait_lost) then say `error::lease_expired`. If the others are not all held before
    /// `l` has run out, the acquire fails with `error::lease_expired` and nothing is left held. A lease of
    /// zero or less fails with `error::invalid_lease`. Completion `void(error_code, multi_guard)`.
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
    auto acquire(std::chrono::duration<Rep, Period> timeout, lease l, CompletionToken&& token = {})
    {
        return initiate(detail::deadline_after(timeout), token, l.length);
    }
    /// All the locks with no deadline, holding them at most for `l` as above.
    /// Completion `void(error_code, multi_guard)`.
    template <class CompletionToken = asio::deferred_t>
    auto acquire(lease l, CompletionToken&& token = {})
    {
        return initiate(detail::deadline{}, token, l.length);
    }
    /// All the locks, with no deadline: waits as long as it takes. Completion `void(error_code, multi_guard)`.
    template <class CompletionToken = asio::deferred_t>
        requires(!detail::is_duration<std::decay_t<CompletionToken>>::value &&
                 !std::is_same_v<std::decay_t<CompletionToken>, lease>)
    auto acquire(CompletionToken&& token = {})
    {
        return initiate(detail::deadline{}, token);
    }
    /**
     * acquire with a zero timeout: one look at each lock, `error::timeout` if one is not free (nothing is
     * left held). Completion `void(error_code, multi_guard)`.
     *
     * @par Executor
     * As acquire: each look on its lock's session's executor; the steps and the completion on the
     * handler's associated executor, never inside this call.
     *
     * @par Per-operation cancellation
     * As acquire: terminal, partial and total alike, at any stage, complete it at once with
     * `operation_aborted`; what was taken is given back. A signal after the completion does nothing.
     *
     * @par Errors
     * `error::timeout` when a lock was not free (or ZooKeeper did not answer within its one look's limit).
     * Otherwise as acquire: `error::conflicting_options` for a path given twice, the failing lock's own
     * error, `operation_aborted` when cancelled. Nothing is left held.
     *
     * @par Thread safety
     * As acquire: from any thread or strand; cancelled from the thread or strand that owns the signal.
     *
     * @par Object lifetimes
     * As acquire: the operation shares the list of locks; this multi_lock may go right after the call.
     */
    template <class CompletionToken = asio::deferred_t>
    auto try_acquire(CompletionToken&& token = {})
    {
        return acquire(std::chrono::steady_clock::duration::zero(), std::forward<CompletionToken>(token));
    }

    /// The locks in the order they are taken.
    const std::vector<lock_item>& items() const noexcept { return *items_; }

private:
    template <class... Lock>
    static std::vector<lock_item> list(Lock... locks)
    {
        std::vector<lock_item> v;
        (v.push_back(lock_item(std::move(locks))), ...);
        return v;
    }
    template <class CompletionToken>
    auto initiate(detail::deadline d, CompletionToken& token, detail::lease_length l = std::nullopt)
    {
        // A lease of zero or less is refused before any lock is tried, as each recipe would refuse it (and as
        // an empty list, which has no recipe to ask, must too). The items' own refusal comes first.
        const bool bad_lease = l && *l <= l->zero() && !refusal_;
        return asio::async_compose<CompletionToken, void(error_code, multi_guard)>(
            detail::multi_acquire_op{items_, d, l, bad_lease ? error_code(zklock::error::invalid_lease) : refusal_, {}},
            token);
    }

    std::shared_ptr<const std::vector<lock_item>> items_;
    error_code refusal_;
};

}  // namespace zklock
