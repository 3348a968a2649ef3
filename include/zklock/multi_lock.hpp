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
    lock_item(mutex m) : path_(m.path()), start_(starter(std::move(m))) {}  // NOLINT: implicit on purpose
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

    const std::string& path() const noexcept { return path_; }
    /// The global order every multi_lock takes its locks in: by path, then kind.
    friend bool operator<(const lock_item& a, const lock_item& b)
    {
        return a.path_ != b.path_ ? a.path_ < b.path_ : a.rank_ < b.rank_;
    }
    /// Starts one acquire, until `d` (none: no deadline).
    void start(detail::deadline d, detail::handler<guard> h) const { start_(d, std::move(h)); }

private:
    using start_fn = std::function<void(detail::deadline, detail::handler<guard>)>;
    lock_item(std::string path, int rank, start_fn fn) : path_(std::move(path)), rank_(rank), start_(std::move(fn)) {}
    template <class Lock>
    static start_fn starter(Lock l)
    {
        return [l = std::move(l)](detail::deadline d, detail::handler<guard> h) mutable {
            if (d) l.acquire_until(*d, std::move(h));
            else l.acquire(std::move(h));
        };
    }
    static start_fn starter(shared_mutex rw, bool read)
    {
        return [rw = std::move(rw), read](detail::deadline d, detail::handler<guard> h) mutable {
            if (read && d) rw.acquire_shared_until(*d, std::move(h));
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
    explicit multi_guard(std::vector<guard> g) : guards_(std::move(g)) {}

    bool owns_lock() const noexcept { return !guards_.empty(); }
    explicit operator bool() const noexcept { return owns_lock(); }
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
    error_code refusal;
    std::vector<guard> taken;
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
            taken.push_back(std::move(g));
            break;
        }
        if (taken.size() == items->size()) return self.complete(error_code{}, multi_guard(std::move(taken)));
        (*items)[taken.size()].start(until, handler<guard>(std::move(self)));
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
    explicit multi_lock(std::vector<lock_item> items)
    {
        std::sort(items.begin(), items.end());
        for (std::size_t i = 1; i < items.size(); ++i)
            if (items[i].path() == items[i - 1].path()) refusal_ = zklock::error::conflicting_options;
        items_ = std::make_shared<const std::vector<lock_item>>(std::move(items));
    }

    /// All the locks within `timeout` (zero: one look at each). Completion `void(error_code, multi_guard)`.
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
    auto acquire(std::chrono::duration<Rep, Period> timeout, CompletionToken&& token = {})
    {
        return initiate(detail::deadline_after(timeout), token);
    }
    template <class CompletionToken = asio::deferred_t>
        requires(!detail::is_duration<std::decay_t<CompletionToken>>::value)
    auto acquire(CompletionToken&& token = {})
    {
        return initiate(detail::deadline{}, token);
    }
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
    auto initiate(detail::deadline d, CompletionToken& token)
    {
        return asio::async_compose<CompletionToken, void(error_code, multi_guard)>(
            detail::multi_acquire_op{items_, d, refusal_, {}}, token);
    }

    std::shared_ptr<const std::vector<lock_item>> items_;
    error_code refusal_;
};

}  // namespace zklock
