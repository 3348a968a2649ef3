// Leader election: `auto l = co_await e.campaign(30s);` leads until resigned or lost; `async_leader` and
// `async_wait_leader_change` observe without campaigning.
#pragma once

#include <zklock/leader_info.hpp>
#include <zklock/mutex.hpp>

#include <optional>
#include <string>

namespace zklock {

/// Whose candidates an election's nodes are like: zklock campaigns beside that peer on the same path.
/// One path holds one kind: observers and campaigns refuse a mixed one (`error::schema_mismatch`).
enum class election_style {
    selector,  ///< Curator's LeaderSelector: a mutex node "_c_<uuid>-lock-N" (the default)
    latch,     ///< Curator's LeaderLatch: "_c_<uuid>-latch-N"
    kazoo,     ///< kazoo's Election (a kazoo Lock): "<uuid hex>__lock__N"
};

/// Options of a candidate, taken by the zklock::election constructor; each field is explained below.
struct election_options {
    /// ACL of the candidate's node and of the parents created on demand.
    zklock::acl acl = open_acl();
    /// The peer whose candidates share the path. Each writes the participant id as its node's whole data.
    election_style style = election_style::selector;
};

namespace detail {
/// The session's candidate state for `path` with participant id `id`.
std::shared_ptr<lock_queue> election_queue_for(const std::shared_ptr<session_impl>&, const std::string& path,
                                               const std::string& id, const election_options&, error_code& refusal);
/// Reads the leader of `dir` (known: none), or waits until it differs from `known`.
void async_observe_leader(std::shared_ptr<session_impl> s, std::string dir, std::optional<leader_info> known,
                          handler<leader_info> h);
/// The same through a candidate's session (no candidate: completes with `refusal`).
void async_observe_election(std::shared_ptr<lock_queue> q, error_code refusal, std::string dir,
                            std::optional<leader_info> known, handler<leader_info> h);
}  // namespace detail

/**
 * Leadership of an election: a guard on the leader's node (see guard.hpp) that also resigns and
 * proclaims. `token()` is the term's fencing token (the creation zxid of its node: every later term has
 * a greater one); `async_wait_lost` tells the leader that it was deposed (its session expired, its node
 * was deleted, or no answer came through the ZooKeeper leader for the loss grace), before another
 * candidate can lead; guarded writes are refused by the server once it no longer leads.
 */
class leadership : public guard {
public:
    leadership() = default;
    /// What a campaign's acquire gave (a guard on a candidate's node).
    leadership(guard g) noexcept : guard(std::move(g)) {}  // NOLINT: implicit, so that an acquire completes with it

    /// The election's path (the directory of the leader's node).
    std::string election_path() const { return node().substr(0, node().rfind('/')); }

    /// Steps down: deletes the node, so that the next candidate leads at once (one round trip for it to
    /// hear). As guard::release: errors, cancellation, executor, thread safety.
    template <class CompletionToken = asio::deferred_t>
    auto resign(CompletionToken&& token = {})
    {
        return release(std::forward<CompletionToken>(token));
    }

    /**
     * Publishes `value` for observers as this term's (etcd's Proclaim): `async_leader` and
     * `async_wait_leader_change` report it in leader_info::value, and every observer waiting with the
     * old value is told. It is a guarded write (the check that this term's node still exists, and the
     * write of the election directory's data, as one multi), so a deposed leader cannot proclaim:
     * `error::lock_node_deleted`. The value is stored with the term's node name ("<node>\n<value>" in
     * the directory's data), so a later leader is never reported with it. Errors, cancellation,
     * executor, thread safety: as for guard::async_guarded_set_data. Signature `void(error_code)`.
     */
    template <class CompletionToken = asio::deferred_t>
    auto async_proclaim(std::string value, CompletionToken&& token = {})
    {
        const auto& n = node();
        return async_guarded_set_data(election_path(), n.substr(n.rfind('/') + 1) + "\n" + value, -1,
                                      std::forward<CompletionToken>(token));
    }
};

/**
 * The leader of the election at `path` now, read after a sync (so it is at least as recent as anything
 * this session has seen: never a leader already superseded in ZooKeeper's order). An empty leader_info
 * (false) when nobody leads or `path` does not exist. It reads any election that orders its candidates
 * by sequence: zklock's, Curator's LeaderSelector (its getLeader() names the same participant),
 * Curator's LeaderLatch, kazoo's Election; the id is the first line of the leader's node data.
 *
 * Completion `void(error_code, leader_info)`. Errors: `error::invalid_path`, `error::schema_mismatch`
 * (the path mixes candidates of two recipes: no client can agree who leads), the session's
 * (`error::not_connected`, `error::session_expired`, ...), ZooKeeper's (`zk_errc::no_auth`). A lost
 * connection is waited out: the reads start again once the session is connected.
 *
 * Cancellation: any type, at any stage, completes at once with `operation_aborted` (only reads are
 * made). Executor: completes on the handler's associated executor. Thread safety: may be initiated
 * from any thread and cancelled from the thread that owns the signal. Lifetimes: `s` and `path` are not
 * referred to after the initiation.
 */
template <class CompletionToken = asio::deferred_t>
auto async_leader(session& s, std::string path, CompletionToken&& token = {})
{
    return asio::async_initiate<CompletionToken, void(error_code, leader_info)>(
        [](auto h, std::shared_ptr<detail::session_impl> impl, std::string p) {
            detail::async_observe_leader(impl, std::move(p), std::nullopt, std::move(h));
        },
        token, s.impl(), std::move(path));
}

/**
 * Completes once the leader of `path` differs from `known` (another term, nobody, or a new proclaimed
 * value), with the new one: observe without a herd. Each round reads as async_leader does, then watches
 * only the leader's node and the election directory's data (or, while nobody leads, its children), so
 * observers are not woken by candidates joining or leaving behind the leader. Pass what the last call
 * returned to follow every change in order:
 *
 *     for (zklock::leader_info l;;) {
 *         l = co_await zklock::async_wait_leader_change(s, "/election/scheduler", l, asio::use_awaitable);
 *         std::cout << (l ? l.id : "nobody") << " leads\n";
 *     }
 *
 * Changes closer together than a round trip may be seen as one (the latest). Errors, cancellation,
 * executor, thread safety, lifetimes: as for async_leader; a session that ends fails it with the
 * session's error. Signature `void(error_code, leader_info)`.
 */
template <class CompletionToken = asio::deferred_t>
auto async_wait_leader_change(session& s, std::string path, leader_info known, CompletionToken&& token = {})
{
    return asio::async_initiate<CompletionToken, void(error_code, leader_info)>(
        [](auto h, std::shared_ptr<detail::session_impl> impl, std::string p, leader_info k) {
            detail::async_observe_leader(impl, std::move(p), std::move(k), std::move(h));
        },
        token, s.impl(), std::move(path), std::move(known));
}

/**
 * A candidate in the leader election at `path`, as participant `id`. By default it is compatible with
 * Curator's LeaderSelector on the same path: a candidate is a mutex node `PATH/_c_<uuid>-lock-N` whose
 * data is the participant id (LeaderSelector.setId), and the first node leads. zklock candidates and
 * Curator selectors take turns; Curator's getLeader() and zklock's async_leader name the same
 * participant. election_options::style makes its nodes those of Curator's LeaderLatch or of kazoo's
 * Election instead, to campaign beside those. A path that holds another recipe's nodes (a LeaderLatch's
 * `-latch-` for a selector, a read/write lock's, a semaphore's) is refused with `error::schema_mismatch`.
 * (A kazoo candidate that joins a path of selectors, or the reverse, is seen by observers, not by a
 * campaign: kazoo and Curator ignore each other's names, so give them one style per path.)
 *
 * One candidate per session and path: a second election object of the same session on the path with
 * another id completes its campaigns with `error::conflicting_options`; with the same id, its campaigns
 * queue behind this session's (each term is a node of its own, so observers see every term).
 *
 * @par campaign
 * Completes with a `leadership` when this candidate leads. Deadlines, cancellation (any type: the
 * candidate's node is deleted, none is left behind), errors, executor, thread safety and lifetimes are
 * as for mutex::acquire; in addition `error::invalid_participant_id` for an id that is not one line
 * of text. A leader that loses its session or node hears it through its leadership's async_wait_lost
 * before another candidate can lead; to run work only while leading, use
 * `zklock::while_held(l, work())`.
 */
class election {
public:
    /// Make it on the session's executor.
    election(session& s, std::string path, std::string id, election_options options = {})
        : path_(std::move(path)), id_(std::move(id)),
          queue_(detail::election_queue_for(s.impl(), path_, id_, options, refusal_))
    {
    }

    /// The election's path, as given to the constructor.
    const std::string& path() const noexcept { return path_; }
    /// This candidate's participant id, written as its node's data.
    const std::string& id() const noexcept { return id_; }

    /// Campaigns for at most `timeout` (zero: leads only if nobody else does). `void(error_code, leadership)`.
    template <class Rep, class Period, class CompletionToken = asio::deferred_t>
    auto campaign(std::chrono::duration<Rep, Period> timeout, CompletionToken&& token = {})
    {
        return initiate(detail::deadline_after(timeout), token);
    }

    /// Campaigns until it leads, fails or is cancelled. `void(error_code, leadership)`.
    template <class CompletionToken = asio::deferred_t>
        requires(!detail::is_duration<std::decay_t<CompletionToken>>::value)
    auto campaign(CompletionToken&& token = {})
    {
        return initiate(detail::deadline{}, token);
    }

    /// Campaigns until `deadline` on the steady clock. `void(error_code, leadership)`.
    template <class CompletionToken = asio::deferred_t>
    auto campaign_until(std::chrono::steady_clock::time_point deadline, CompletionToken&& token = {})
    {
        return initiate(deadline, token);
    }

    /// zklock::async_leader on this election's path (through this candidate's session).
    template <class CompletionToken = asio::deferred_t>
    auto async_leader(CompletionToken&& token = {})
    {
        return observe(std::nullopt, token);
    }

    /// zklock::async_wait_leader_change on this election's path (through this candidate's session).
    template <class CompletionToken = asio::deferred_t>
    auto async_wait_leader_change(leader_info known, CompletionToken&& token = {})
    {
        return observe(std::move(known), token);
    }

private:
    template <class CompletionToken>
    auto initiate(detail::deadline d, CompletionToken& token)
    {
        return asio::async_initiate<CompletionToken, void(error_code, leadership)>(
            [](auto h, detail::executor_owned<detail::lock_queue> qq, error_code why, detail::deadline dl) {
                // The acquire's guard becomes a leadership on the way out (an implicit conversion).
                detail::handler<guard> as_guard(detail::handler<leadership>(std::move(h)));
                if (qq.get()) detail::async_acquire(std::move(qq).take(), dl, {}, std::move(as_guard));
                else detail::refuse_acquire(why, std::move(as_guard));
            },
            token, queue_, refusal_, d);
    }

    template <class CompletionToken>
    auto observe(std::optional<leader_info> known, CompletionToken& token)
    {
        return asio::async_initiate<CompletionToken, void(error_code, leader_info)>(
            [](auto h, detail::executor_owned<detail::lock_queue> qq, error_code why, std::string p,
               std::optional<leader_info> k) {
                detail::async_observe_election(std::move(qq).take(), why, std::move(p), std::move(k), std::move(h));
            },
            token, queue_, refusal_, path_, std::move(known));
    }

    std::string path_, id_;
    error_code refusal_;
    detail::executor_owned<detail::lock_queue> queue_;
};

}  // namespace zklock
