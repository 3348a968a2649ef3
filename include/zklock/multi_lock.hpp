// Several locks taken all together or not at all, under one deadline, without deadlock.
#pragma once

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

/// One lock of a multi_lock: a mutex, one side of a shared_mutex, or one lease of a semaphore. It keeps a
/// copy of the lock object (a handle: copies share the session's state for the path).
class lock_item {
public:
    /// The mutex `m`; implicit, so that a multi_lock can be given mutexes as they are.
    lock_item(mutex m) : path_(m.path()), start_(starter(std::move(m))) {}  // NOLINT: implicit on purpose
    /// One lease of the semaphore `s`; implicit, as for a mutex.
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
        return d ? *d - std::chrono::steady_clock::now() : std::chrono::steady_clock::duration::max();
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
     * Cancellation: any type (a pure wait). Executor: completes on the handler's associated executor.
     * Thread safety: as for guard::async_wait_lost (the locks may belong to several sessions).
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

    /// Guarded writes over every lock at once (see guard::async_guarded_multi, whose errors, cancellation
    /// and `error::outcome_unknown` apply): one check per lock node, then `ops`, as one multi. The locks
    /// must belong to one session (else `error::not_held`). Signature `void(error_code, std::vector<multi_result>)`.
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
     * Cancellation (any type, as for guard::release): completes at once with `operation_aborted`; the
     * locks not yet released are released in the background. Executor: each step completes on the
     * handler's associated executor. Thread safety: as for guard::release.
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
                    self.reset_cancellation_state(asio::enable_total_cancellation());
                    guards = std::exchange(owner->guards_, {});
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
            if (hold_limit && taken.empty()) hold_ends = std::chrono::steady_clock::now() + *hold_limit;
            taken.push_back(std::move(g));
            break;
        }
        lease_length left = hold_limit;
        if (hold_limit && !taken.empty()) {
            left = hold_ends - std::chrono::steady_clock::now();
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
 * Several locks (mutexes, read or write sides of shared_mutexes, semaphore leases, of any sessions),
 * taken all together or not at all, under one deadline. They are always taken in one global order
 * (by path), so two multi_locks over overlapping sets never deadlock; a path may appear once.
 *
 * Unlike Curator's InterProcessMultiLock, the timeout covers the whole acquire (not each lock), and a
 * failure or cancellation releases what was taken before completing.
 *
 * @par Errors
 * The first lock's error (`error::timeout`, `error::session_expired`, ...), `operation_aborted` on
 * cancellation, `error::conflicting_options` when one path appears twice. Nothing is left held.
 *
 * @par Per-operation cancellation
 * Any type (terminal, partial, total), at any stage: it reaches the lock being acquired, which gives back
 * what it created (see mutex.hpp); the locks already taken are released in the background; the acquire
 * completes at once with `operation_aborted`. A signal after the completion does nothing.
 *
 * @par Executor, thread safety
 * Steps complete on the handler's associated executor. The lock objects follow their own rules (see
 * mutex.hpp): the acquire may be initiated and cancelled from any thread.
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

    /// All the locks within `timeout` (zero: one look at each). Completion `void(error_code, multi_guard)`.
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
    /// acquire with a zero timeout: one look at each lock, `error::timeout` if one is not free (nothing is
    /// left held). Completion `void(error_code, multi_guard)`.
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
        // A refusal of the lease is the first lock's, as it would be without a multi_lock.
        const bool bad_lease = l && *l <= l->zero() && !refusal_;
        return asio::async_compose<CompletionToken, void(error_code, multi_guard)>(
            detail::multi_acquire_op{items_, d, l, bad_lease ? error_code(zklock::error::invalid_lease) : refusal_, {}},
            token);
    }

    std::shared_ptr<const std::vector<lock_item>> items_;
    error_code refusal_;
};

}  // namespace zklock
