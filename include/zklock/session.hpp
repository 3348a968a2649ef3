// One ZooKeeper session, driven by an Asio executor, and the typed operations the recipes build on.
#pragma once

#include <zklock/acl.hpp>
#include <zklock/config.hpp>
#include <zklock/create_mode.hpp>
#include <zklock/detail/handler.hpp>
#include <zklock/error.hpp>
#include <zklock/multi.hpp>
#include <zklock/session_state.hpp>
#include <zklock/stat.hpp>
#include <zklock/stats.hpp>
#include <zklock/watch.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zklock {

namespace asio = boost::asio;

namespace testing::simulation {
class model;
}
using boost::system::error_code;

namespace detail {
class session_impl;

// The compiled side of every operation (src/session/session.cpp, src/session/session_impl.cpp); the templates below only erase the token.
void async_connect(const std::shared_ptr<session_impl>&, handler<>);
void async_close(const std::shared_ptr<session_impl>&, handler<>);
void async_drain(const std::shared_ptr<session_impl>&, std::chrono::steady_clock::duration grace, handler<>);
void async_wait_state(const std::shared_ptr<session_impl>&, session_state from, handler<session_state>);
void async_stats(const std::shared_ptr<session_impl>&, handler<session_stats>);
void async_create(const std::shared_ptr<session_impl>&, op::create, handler<std::string, stat>);
void async_remove(const std::shared_ptr<session_impl>&, std::string path, int version, handler<>);
void async_sync(const std::shared_ptr<session_impl>&, std::string path, handler<>);
void async_exists(const std::shared_ptr<session_impl>&, std::string path, watch*, handler<std::optional<stat>>);
void async_get_data(const std::shared_ptr<session_impl>&, std::string path, watch*, handler<std::string, stat>);
void async_get_children(const std::shared_ptr<session_impl>&, std::string path, watch*,
                        handler<std::vector<std::string>, stat>);
void async_set_data(const std::shared_ptr<session_impl>&, std::string path, std::string data, int version,
                    handler<stat>);
void async_multi(const std::shared_ptr<session_impl>&, std::vector<multi_op>, handler<std::vector<multi_result>>);
}  // namespace detail

/**
 * A ZooKeeper session whose single-threaded C client is pumped by the executor itself: no thread of its
 * own, every completion and watch goes through `get_executor()` (a completion then runs on its handler's
 * associated executor, see Operations).
 *
 * @par Thread safety
 * A session and the locks made from it belong to one executor: run the io_context on one thread, or give
 * the session a strand, and start the session's operations there. A cancellation signal may be emitted
 * from the thread that owns it: the cancellation hops onto the session's executor before it touches the
 * session.
 *
 * @par Operations
 * Every asynchronous operation takes a completion token (default `asio::deferred`, so `co_await` works
 * bare; callbacks, `use_future`, `as_tuple` work too) and completes on the handler's associated executor,
 * never inside the initiating call. Errors are ZooKeeper's return codes in `zookeeper_category()` or
 * zklock's own `error`s. Connection loss is not final: the C client reconnects and the operation reports
 * `zk_errc::connection_loss`; retrying after reconnect is the caller's call (the lock recipes do it
 * themselves). For a write, `zk_errc::connection_loss`, `zk_errc::operation_timeout`,
 * `zk_errc::runtime_inconsistency` and a session end reported while the request was out mean that the
 * answer was lost, not that the write failed: it may or may not have been applied. Read it back
 * (`async_sync`, then a read) before writing again. (These are ZooKeeper's own codes and meanings, kept
 * here for code that handles them as Curator and kazoo users do; a guard's writes report
 * `error::outcome_unknown` instead, see guard.hpp.)
 *
 * @par Per-operation cancellation
 * A request is handed to ZooKeeper's client when the operation starts (the client sends it as soon as it
 * is connected) and cannot be taken back, so:
 * - reads (`async_exists`, `async_get_data`, `async_get_children`, `async_sync`) and the waits
 *   (`async_wait_state`, `async_close`, `watch::async_wait`): any type (terminal, partial, total)
 *   completes at once with `operation_aborted`. A cancelled read's watch is dropped (it stays unarmed).
 * - writes (`async_create`, `async_remove`, `async_set_data`, `async_multi`): terminal and partial complete
 *   at once with `operation_aborted`, and the write may still be applied; total is not supported (it
 *   promises no side effect, which a sent request cannot keep): the write completes with its real result.
 * - `async_connect`: terminal only, which closes the session; partial and total are not supported.
 * A signal that comes after the completion does nothing.
 *
 * @par Lifetime
 * Destroying the session closes it: pending operations complete with `error::session_closed` (the waits
 * of async_wait_state and async_close complete normally, see each), and the server is told in the
 * background. The io_context must outlive that close (run it until it returns).
 */
class session {
public:
    /// The type of the executor that drives the session (see get_executor()).
    using executor_type = asio::any_io_executor;

    /// Makes an idle session on `ex` (a strand if several threads run its io_context) with `config`;
    /// nothing is sent until async_connect.
    session(executor_type ex, session_config config);
    /// The same on `ioc`'s executor.
    session(asio::io_context& ioc, session_config config) : session(ioc.get_executor(), std::move(config)) {}
    /// Takes over the other object's session. The moved-from object is left without one: destroy it or assign
    /// to it. Its async_stats still works (it reports zeros), lock objects made from it fail with
    /// `error::no_session`, and nothing else may be called on it.
    session(session&&) noexcept = default;
    /// Closes this object's own session, as the destructor does, then takes over the other's; the moved-from
    /// object is left without a session, as after a move construction.
    session& operator=(session&&) noexcept;
    ~session();

    /// The executor the session runs on, as given to the constructor.
    executor_type get_executor() const noexcept;
    /// The configuration the session was made with (an empty session_config::owner filled in as "hostname:pid").
    const session_config& config() const noexcept;
    /// Where the session is in its life now (see session_state; async_wait_state waits for a change).
    session_state state() const noexcept;
    /// The server's id for this session (0 until the first connect, and while a renewed session connects).
    std::int64_t id() const noexcept;
    /// The session timeout the server agreed to (0 until the first connect).
    std::chrono::milliseconds negotiated_timeout() const noexcept;
    /// The host list without the chroot (for messages).
    std::string hosts() const;
    /// A snapshot of the session's counters and of its locks' (zklock/stats.hpp). Call it on the session's
    /// executor; from elsewhere, use async_stats.
    session_stats stats() const;

    /**
     * Takes a snapshot of the session's counters and of its locks' (zklock/stats.hpp) on the session's
     * executor, and completes with it. Completion signature `void(error_code, session_stats)`.
     *
     * @par Executor
     * The snapshot is taken on `get_executor()`; the completion runs on the handler's associated executor.
     * @par Per-operation cancellation
     * None: it completes at once (as soon as the executor runs it); a signal of any type is ignored.
     * @par Errors
     * Always success; a closed session still reports its figures, and a moved-from one reports zeros.
     * @par Thread safety
     * May be started from any thread (it hops onto the session's executor first): the way to read a
     * session's figures from a thread that does not run it, e.g. a metrics endpoint's. (Not while another
     * thread moves or destroys the session object.)
     * @par Object lifetimes
     * It keeps the session's state alive until it completes: the session object may be destroyed meanwhile.
     * The session's executor must be run for it to complete.
     */
    template <class CompletionToken = asio::deferred_t>
    auto async_stats(CompletionToken&& token = {})
    {
        return asio::async_initiate<CompletionToken, void(error_code, session_stats)>(
            [](auto h, std::shared_ptr<detail::session_impl> s) { detail::async_stats(s, std::move(h)); }, token,
            impl_);
    }

    /// Opens the session. Completes once connected. A failed or cancelled connect leaves the session closed
    /// (but for `already_started`, below). Completion signature `void(error_code)`.
    /// @par Executor
    /// Runs on `get_executor()` (the host names are resolved and the C client's handle made on a helper
    /// thread); the completion runs on the handler's associated executor.
    /// @par Per-operation cancellation
    /// Terminal only: completes at once with `operation_aborted`, and the session is closed. Partial and
    /// total are not supported: ignored, the connect goes on.
    /// @par Errors
    /// `error::connect_timeout` (no server answered within `config().connect_timeout`),
    /// `error::invalid_hosts`, `error::unresolvable_host`, `error::auth_failed`, `error::invalid_config`,
    /// `error::already_closed` (closed or expired before the call); `error::session_closed` when the session
    /// is closed meanwhile; `asio::error::already_started` when it is connecting or connected already (the
    /// session is left as it is); a system error when the C client cannot make its handle;
    /// `operation_aborted` when cancelled.
    /// @par Thread safety
    /// Start it on the session's executor; the cancellation signal may be emitted from the thread that owns
    /// it (the close hops onto the session's executor).
    /// @par Object lifetimes
    /// The session object may be destroyed before the connect completes: that closes the session, and the
    /// connect completes with `error::session_closed`.
    template <class CompletionToken = asio::deferred_t>
    auto async_connect(CompletionToken&& token = {})
    {
        return asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto h, std::shared_ptr<detail::session_impl> s) { detail::async_connect(s, std::move(h)); },
            token, impl_);
    }

    /// Completes as soon as `state() != from` (at once if it already differs), with the new state.
    /// A session that renews on expiry (session_config::on_expiry) reports `expired` to the waiters of
    /// that moment, though state() is already `connecting` by the time they run; `connected` follows,
    /// with the new id().
    /// Completion `void(error_code, session_state)`.
    /// @par Executor
    /// The wait is registered on `get_executor()`; the completion runs on the handler's associated executor.
    /// @par Per-operation cancellation
    /// Any type (terminal, partial, total): completes at once with `operation_aborted` and the current state.
    /// @par Errors
    /// `operation_aborted`; the session's end is a state like the others (`closed`, `expired`,
    /// `auth_failed`). A wait for a change from the final state the session is already in completes at once
    /// with `error::already_closed` and that state: nothing can change any more.
    /// @par Thread safety
    /// Start it on the session's executor; the cancellation signal may be emitted from the thread that owns
    /// it (it hops onto the session's executor).
    /// @par Object lifetimes
    /// The session object may be destroyed meanwhile: that closes the session, and the wait completes with
    /// `session_state::closed` (success).
    template <class CompletionToken = asio::deferred_t>
    auto async_wait_state(session_state from, CompletionToken&& token = {})
    {
        return asio::async_initiate<CompletionToken, void(error_code, session_state)>(
            [](auto h, std::shared_ptr<detail::session_impl> s, session_state f) {
                detail::async_wait_state(s, f, std::move(h));
            },
            token, impl_, from);
    }

    /// Closes the session without blocking: pending operations fail with `error::session_closed` now,
    /// the server is told on a helper thread.
    void close() noexcept;

    /// Closes the session (at once, as close() does) and completes once the server has ended it (its
    /// ephemeral nodes are gone). Completion `void(error_code)`.
    /// @par Executor
    /// The close is made on `get_executor()` when the operation starts, the server is told on a helper
    /// thread; the completion runs on the handler's associated executor.
    /// @par Per-operation cancellation
    /// Any type (terminal, partial, total) ends the wait at once with `operation_aborted`; the close itself
    /// was done when the operation started, and the server is told in the background all the same (keep
    /// running the io_context until it returns).
    /// @par Errors
    /// Success (at once if the close was confirmed before, or the session never opened); `operation_aborted`
    /// when cancelled.
    /// @par Thread safety
    /// Start it on the session's executor; the cancellation signal may be emitted from the thread that owns
    /// it (it hops onto the session's executor).
    /// @par Object lifetimes
    /// It keeps the io_context busy until the server has confirmed. Destroying the session object meanwhile
    /// completes the wait at once with success, without waiting for the server's confirmation.
    template <class CompletionToken = asio::deferred_t>
    auto async_close(CompletionToken&& token = {})
    {
        return asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto h, std::shared_ptr<detail::session_impl> s) { detail::async_close(s, std::move(h)); },
            token, impl_);
    }

    /// Hands this session's locks over and closes it, for a planned stop (SIGTERM, a rolling restart): the
    /// next holders get the locks at once instead of after a session timeout.
    /// 1. From now on the session takes no new lock: every acquire (mutex, read/write lock, semaphore,
    ///    multi-lock, election) fails at once with `error::draining`, and every waiter does too. A holder's
    ///    re-entry (`mutex::acquire(guard)`) still works: it holds already.
    /// 2. Holders are asked to let go, as a revocation asks (`guard::async_wait_revoked` completes), and get
    ///    until `grace` has passed to release. Each release is answered as usual.
    /// 3. Once nothing is held, or the grace is over, the session is closed (what is still held goes with
    ///    it, and its holders are told `error::session_closed`), and the drain completes once the server
    ///    has ended the session.
    /// Completion `void(error_code)`. Plain operations (`async_get_data`, ...) keep working until the
    /// close. A second drain joins the first, and the earlier deadline counts.
    /// @par Executor
    /// Runs on the session's executor; completes on the handler's associated executor.
    /// @par Per-operation cancellation
    /// Terminal and partial: the grace is cut short: the session is closed now and this drain completes at
    /// once with `operation_aborted` (the server is told in the background; keep running the io_context).
    /// Total: not supported (the waiters were already failed); ignored, the drain goes on.
    /// @par Errors
    /// Success when every holder released in time and nothing of the locks is left on the server (the
    /// releases were confirmed by the server, or it ended the session at the close); `error::timeout` when
    /// the grace ran out first (the session is closed all the same), when another caller's cancellation
    /// closed it with locks still held, or when neither the releases nor the close reached a server (no
    /// quorum: the nodes stay until the session expires); `error::already_closed` when the session was closed or expired before the call; the session's
    /// end (`error::session_expired`, `error::auth_failed`, or `error::session_closed` when something else
    /// closed it) if it ended during the drain; `operation_aborted` when cancelled.
    /// @par Thread safety
    /// May be started from any thread (it hops onto the session's executor first), e.g. the one that waits
    /// for SIGTERM; not while another thread moves or destroys the session object. The cancellation signal
    /// may be emitted from the thread that owns it (it hops onto the session's executor).
    /// @par Object lifetimes
    /// It keeps the session's state alive until it completes. Destroying the session object closes the
    /// session: a drain not yet closing it then completes with `error::session_closed`.
    template <class CompletionToken = asio::deferred_t>
    auto async_drain(std::chrono::steady_clock::duration grace, CompletionToken&& token = {})
    {
        return asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto h, std::shared_ptr<detail::session_impl> s, std::chrono::steady_clock::duration g) {
                detail::async_drain(s, g, std::move(h));
            },
            token, impl_, grace);
    }

    /// Creates a node with the open ACL. Completion `void(error_code, std::string created_path, stat)`;
    /// the created path carries the sequence suffix for sequential modes.
    /// @par Executor
    /// The request is handed to the C client on `get_executor()` when the operation starts (it is sent once
    /// connected); the completion runs on the handler's associated executor.
    /// @par Per-operation cancellation
    /// Terminal and partial: completes at once with `operation_aborted`, and the node may still be created.
    /// Total: not supported (a sent request cannot be taken back): ignored, the real result comes.
    /// @par Errors
    /// `error::invalid_path`; the session's state (`error::not_connected`, `error::session_expired`,
    /// `error::session_closed`, `error::auth_failed`: at once, or the session ended while it was out);
    /// ZooKeeper's `zk_errc::node_exists`, `zk_errc::no_node` (no parent), `zk_errc::no_children_for_ephemerals`,
    /// `zk_errc::invalid_acl`, `zk_errc::no_auth`; the lost answers `zk_errc::connection_loss`,
    /// `zk_errc::operation_timeout`, `zk_errc::runtime_inconsistency` (the node may exist: see Operations).
    /// @par Thread safety
    /// Start it on the session's executor; the cancellation signal may be emitted from the thread that owns
    /// it (it hops onto the session's executor).
    /// @par Object lifetimes
    /// `path` and `data` are taken by value (the operation keeps its own copies). The request keeps the
    /// session's state alive until answered; destroying the session object closes it, and a request still
    /// out completes with `error::session_closed` (the node may exist).
    template <class CompletionToken = asio::deferred_t>
    auto async_create(std::string path, std::string data, create_mode mode, CompletionToken&& token = {})
    {
        return async_create(op::create{std::move(path), std::move(data), mode, open_acl()},
                            std::forward<CompletionToken>(token));
    }

    /// As above, with every field of the request, the ACL among them (taken by value, as are its strings).
    /// (With GCC 12, name the request before `co_await`ing: a braced temporary inside a co_await expression
    /// is destroyed twice.)
    template <class CompletionToken = asio::deferred_t>
    auto async_create(op::create request, CompletionToken&& token = {})
    {
        return asio::async_initiate<CompletionToken, void(error_code, std::string, stat)>(
            [](auto h, std::shared_ptr<detail::session_impl> s, op::create r) {
                detail::async_create(s, std::move(r), std::move(h));
            },
            token, impl_, std::move(request));
    }

    /// Deletes a node if its data version matches (-1: any). Completion `void(error_code)`.
    /// @par Executor
    /// Made on `get_executor()` when the operation starts; the completion runs on the handler's associated
    /// executor. Without a connected cancellation slot, the deletes of one turn of the executor (and those
    /// made while the previous batch is out) go as one multi, each still answered on its own; with one, the
    /// delete is handed to the C client alone, at once.
    /// @par Per-operation cancellation
    /// Terminal and partial: completes at once with `operation_aborted`, and the node may still be deleted.
    /// Total: not supported (a sent request cannot be taken back): ignored, the real result comes.
    /// @par Errors
    /// `error::invalid_path`; the session's state (`error::not_connected`, `error::session_expired`,
    /// `error::session_closed`, `error::auth_failed`: at once, or the session ended while it was out);
    /// ZooKeeper's `zk_errc::no_node`, `zk_errc::bad_version`, `zk_errc::not_empty`, `zk_errc::no_auth`;
    /// the lost answers `zk_errc::connection_loss`, `zk_errc::operation_timeout`,
    /// `zk_errc::runtime_inconsistency` (the node may be gone: see Operations).
    /// @par Thread safety
    /// Start it on the session's executor; the cancellation signal may be emitted from the thread that owns
    /// it (it hops onto the session's executor).
    /// @par Object lifetimes
    /// `path` is taken by value. The session object may be destroyed meanwhile: that closes the session (a
    /// delete held for a batch is sent first), and a delete still out completes with `error::session_closed`.
    template <class CompletionToken = asio::deferred_t>
    auto async_remove(std::string path, int version = -1, CompletionToken&& token = {})
    {
        return asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto h, std::shared_ptr<detail::session_impl> s, std::string p, int v) {
                detail::async_remove(s, std::move(p), v, std::move(h));
            },
            token, impl_, std::move(path), version);
    }

    /// Makes the server this session talks to catch up with the leader, so that the reads after it see
    /// every write the leader had applied when it was answered (ZooKeeper's `sync`): the way to read
    /// back a write whose answer was lost. Completion `void(error_code)`.
    /// @par Executor
    /// The request is handed to the C client on `get_executor()` when the operation starts; the completion
    /// runs on the handler's associated executor.
    /// @par Per-operation cancellation
    /// Any type (terminal, partial, total): completes at once with `operation_aborted` (the late answer is
    /// dropped).
    /// @par Errors
    /// `error::invalid_path`; the session's state (`error::not_connected`, `error::session_expired`,
    /// `error::session_closed`, `error::auth_failed`: at once, or the session ended while it was out);
    /// ZooKeeper's `zk_errc::connection_loss`, `zk_errc::operation_timeout`.
    /// @par Thread safety
    /// Start it on the session's executor; the cancellation signal may be emitted from the thread that owns
    /// it (it hops onto the session's executor).
    /// @par Object lifetimes
    /// `path` is taken by value. The request keeps the session's state alive until answered; destroying the
    /// session object closes it, and a request still out completes with `error::session_closed`.
    template <class CompletionToken = asio::deferred_t>
    auto async_sync(std::string path, CompletionToken&& token = {})
    {
        return asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto h, std::shared_ptr<detail::session_impl> s, std::string p) {
                detail::async_sync(s, std::move(p), std::move(h));
            },
            token, impl_, std::move(path));
    }

    /// Completion `void(error_code, std::optional<stat>)`: empty when the node does not exist.
    /// @par Executor
    /// The request is handed to the C client on `get_executor()` when the operation starts; the completion
    /// runs on the handler's associated executor.
    /// @par Per-operation cancellation
    /// Any type (terminal, partial, total): completes at once with `operation_aborted`; the late answer is
    /// dropped, and so is a watch `w` (it stays unarmed; its wait completes with `operation_aborted`).
    /// @par Errors
    /// `error::invalid_path`; the session's state (`error::not_connected`, `error::session_expired`,
    /// `error::session_closed`, `error::auth_failed`: at once, or the session ended while it was out);
    /// ZooKeeper's `zk_errc::connection_loss`, `zk_errc::operation_timeout`. A missing node is no error.
    /// @par Thread safety
    /// Start it on the session's executor; the cancellation signal may be emitted from the thread that owns
    /// it (it hops onto the session's executor).
    /// @par Object lifetimes
    /// `path` is taken by value; destroying the session object closes it (a read still out completes with
    /// `error::session_closed`). A watch `w` (the overload below) must exist when the operation starts (with
    /// `asio::deferred`, when it is awaited) and is not used after that: it is reset then (what it watched
    /// before is dropped; a read refused at once, e.g. `error::not_connected`, leaves it as it was), and armed
    /// once the read succeeds; a read that fails leaves it unarmed.
    template <class CompletionToken = asio::deferred_t>
    auto async_exists(std::string path, CompletionToken&& token = {})
    {
        return initiate_read<std::optional<stat>>(&detail::async_exists, std::move(path), nullptr, token);
    }
    /// As above, arming `w` to fire when the node is created, changed or deleted (armed whether the node
    /// exists or not).
    template <class CompletionToken = asio::deferred_t>
    auto async_exists(std::string path, watch& w, CompletionToken&& token = {})
    {
        return initiate_read<std::optional<stat>>(&detail::async_exists, std::move(path), &w, token);
    }

    /// Completion `void(error_code, std::string data, stat)`.
    /// @par Executor
    /// The request is handed to the C client on `get_executor()` when the operation starts; the completion
    /// runs on the handler's associated executor.
    /// @par Per-operation cancellation
    /// Any type (terminal, partial, total): completes at once with `operation_aborted`; the late answer is
    /// dropped, and so is a watch `w` (it stays unarmed; its wait completes with `operation_aborted`).
    /// @par Errors
    /// `error::invalid_path`; the session's state (`error::not_connected`, `error::session_expired`,
    /// `error::session_closed`, `error::auth_failed`: at once, or the session ended while it was out);
    /// ZooKeeper's `zk_errc::no_node`, `zk_errc::no_auth`, `zk_errc::connection_loss`,
    /// `zk_errc::operation_timeout`.
    /// @par Thread safety
    /// Start it on the session's executor; the cancellation signal may be emitted from the thread that owns
    /// it (it hops onto the session's executor).
    /// @par Object lifetimes
    /// As async_exists: `path` is taken by value; a watch `w` must exist when the operation starts (it is not
    /// used after that).
    template <class CompletionToken = asio::deferred_t>
    auto async_get_data(std::string path, CompletionToken&& token = {})
    {
        return initiate_read<std::string, stat>(&detail::async_get_data, std::move(path), nullptr, token);
    }
    /// As above, arming `w` (if the node exists) to fire when it changes or is deleted.
    template <class CompletionToken = asio::deferred_t>
    auto async_get_data(std::string path, watch& w, CompletionToken&& token = {})
    {
        return initiate_read<std::string, stat>(&detail::async_get_data, std::move(path), &w, token);
    }

    /// Completion `void(error_code, std::vector<std::string> names, stat)`; names are unsorted.
    /// @par Executor
    /// The request is handed to the C client on `get_executor()` when the operation starts; the completion
    /// runs on the handler's associated executor.
    /// @par Per-operation cancellation
    /// Any type (terminal, partial, total): completes at once with `operation_aborted`; the late answer is
    /// dropped, and so is a watch `w` (it stays unarmed; its wait completes with `operation_aborted`).
    /// @par Errors
    /// `error::invalid_path`; the session's state (`error::not_connected`, `error::session_expired`,
    /// `error::session_closed`, `error::auth_failed`: at once, or the session ended while it was out);
    /// ZooKeeper's `zk_errc::no_node`, `zk_errc::no_auth`, `zk_errc::connection_loss`,
    /// `zk_errc::operation_timeout`.
    /// @par Thread safety
    /// Start it on the session's executor; the cancellation signal may be emitted from the thread that owns
    /// it (it hops onto the session's executor).
    /// @par Object lifetimes
    /// As async_exists: `path` is taken by value; a watch `w` must exist when the operation starts (it is not
    /// used after that).
    template <class CompletionToken = asio::deferred_t>
    auto async_get_children(std::string path, CompletionToken&& token = {})
    {
        return initiate_read<std::vector<std::string>, stat>(&detail::async_get_children, std::move(path),
                                                             nullptr, token);
    }
    /// As above, arming `w` (if the node exists) to fire when a child is created or deleted, or the node is
    /// deleted.
    template <class CompletionToken = asio::deferred_t>
    auto async_get_children(std::string path, watch& w, CompletionToken&& token = {})
    {
        return initiate_read<std::vector<std::string>, stat>(&detail::async_get_children, std::move(path), &w,
                                                             token);
    }

    /// Sets a node's data if its version matches (-1: any). Completion `void(error_code, stat)`.
    /// @par Executor
    /// The request is handed to the C client on `get_executor()` when the operation starts; the completion
    /// runs on the handler's associated executor.
    /// @par Per-operation cancellation
    /// Terminal and partial: completes at once with `operation_aborted`, and the data may still be set.
    /// Total: not supported (a sent request cannot be taken back): ignored, the real result comes.
    /// @par Errors
    /// `error::invalid_path`; the session's state (`error::not_connected`, `error::session_expired`,
    /// `error::session_closed`, `error::auth_failed`: at once, or the session ended while it was out);
    /// ZooKeeper's `zk_errc::no_node`, `zk_errc::bad_version`, `zk_errc::no_auth`; the lost answers
    /// `zk_errc::connection_loss`, `zk_errc::operation_timeout`, `zk_errc::runtime_inconsistency` (the data
    /// may be set: see Operations).
    /// @par Thread safety
    /// Start it on the session's executor; the cancellation signal may be emitted from the thread that owns
    /// it (it hops onto the session's executor).
    /// @par Object lifetimes
    /// `path` and `data` are taken by value. The request keeps the session's state alive until answered;
    /// destroying the session object closes it, and a request still out completes with `error::session_closed`.
    template <class CompletionToken = asio::deferred_t>
    auto async_set_data(std::string path, std::string data, int version = -1, CompletionToken&& token = {})
    {
        return asio::async_initiate<CompletionToken, void(error_code, stat)>(
            [](auto h, std::shared_ptr<detail::session_impl> s, std::string p, std::string d, int v) {
                detail::async_set_data(s, std::move(p), std::move(d), v, std::move(h));
            },
            token, impl_, std::move(path), std::move(data), version);
    }

    /// All operations or none. Completion `void(error_code, std::vector<multi_result>)`: on failure the
    /// error is the first failing operation's, and each result says which one it was.
    /// @par Executor
    /// The request is handed to the C client on `get_executor()` when the operation starts (an empty `ops`
    /// completes with success and no request); the completion runs on the handler's associated executor.
    /// @par Per-operation cancellation
    /// Terminal and partial: completes at once with `operation_aborted`, and the transaction may still be
    /// applied. Total: not supported (a sent request cannot be taken back): ignored, the real result comes.
    /// @par Errors
    /// `error::invalid_path` for any operation's path (nothing is sent, no results); the session's state
    /// (`error::not_connected`, `error::session_expired`, `error::session_closed`, `error::auth_failed`: at
    /// once, or the session ended while it was out); the failing operation's ZooKeeper code
    /// (`zk_errc::node_exists`, `zk_errc::no_node`, `zk_errc::bad_version`, `zk_errc::not_empty`,
    /// `zk_errc::no_auth`, ...); the lost answers `zk_errc::connection_loss`, `zk_errc::operation_timeout`,
    /// `zk_errc::runtime_inconsistency` (it may have been applied: see Operations).
    /// @par Thread safety
    /// Start it on the session's executor; the cancellation signal may be emitted from the thread that owns
    /// it (it hops onto the session's executor).
    /// @par Object lifetimes
    /// `ops` is taken by value (the request keeps its own copies of the paths and data until answered). The
    /// request keeps the session's state alive; destroying the session object closes it, and a request still
    /// out completes with `error::session_closed`.
    template <class CompletionToken = asio::deferred_t>
    auto async_multi(std::vector<multi_op> ops, CompletionToken&& token = {})
    {
        return asio::async_initiate<CompletionToken, void(error_code, std::vector<multi_result>)>(
            [](auto h, std::shared_ptr<detail::session_impl> s, std::vector<multi_op> o) {
                detail::async_multi(s, std::move(o), std::move(h));
            },
            token, impl_, std::move(ops));
    }

    /// For the recipes: the shared state behind this handle.
    const std::shared_ptr<detail::session_impl>& impl() const noexcept { return impl_; }

private:
    template <class... Results, class Fn, class CompletionToken>
    auto initiate_read(Fn fn, std::string path, watch* w, CompletionToken& token)
    {
        return asio::async_initiate<CompletionToken, void(error_code, Results...)>(
            [](auto h, Fn f, std::shared_ptr<detail::session_impl> s, std::string p, watch* wp) {
                f(s, std::move(p), wp, std::move(h));
            },
            token, fn, impl_, std::move(path), w);
    }

    /// A session whose client is the model's (testing::simulation::model::make_session).
    friend class testing::simulation::model;
    explicit session(std::shared_ptr<detail::session_impl> impl) noexcept : impl_(std::move(impl)) {}

    std::shared_ptr<detail::session_impl> impl_;
};

}  // namespace zklock
