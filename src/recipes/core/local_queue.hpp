// The coroutines of one session waiting for, or holding, one lock node: a pure state machine.
//
// A session makes one contender node per lock path and side; its coroutines queue here and the lock
// passes between them without a round trip, up to `handoff_limit` times in a row (lock cohorting, Dice
// et al. 2012), so that other processes still get their turn. In shared mode (the read side of a
// read/write lock) every waiter may join a held node: freely while no writer queues behind it (the
// contender watches for followers while it holds a read node), within the same bound once one does. The shell
// (recipes/lock_queue.cpp) keeps the timers and completions, and performs the actions.
#pragma once

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <vector>

namespace zklock::detail {

using boost::system::error_code;

/// Whether a loss reason `next` replaces the one already reported (`current`, empty if none): a definitive
/// reason replaces "ownership uncertain", and the session's end replaces the deletion of our node that
/// the server made when it expired the session; otherwise the first reason stands.
bool loss_replaces(error_code current, error_code next) noexcept;

struct queue_action {
    enum class type {
        grant,              ///< waiter `id` holds the lock as `holder`; `seq`: grants on this node before it
        fail_waiter,        ///< waiter `id` completes with `ec`
        start_contender,    ///< make a contender node and start it
        abandon_contender,  ///< give the contender up (its node is deleted if it exists)
        release_contender,  ///< delete the held node; `answer`: the pending release completes on the answer
        forget_contender,   ///< the contender failed and gave itself up: just let go of it
        release_done,       ///< the pending release completes now with `ec`
        notify_lost,        ///< loss listener `id` completes with the reason `ec`
        abort_lost_waiter,  ///< loss listener `id` completes with operation_aborted
        arm_loss_clock,     ///< (re)start the loss clock for the holders
        cancel_loss_clock,
        notify_revoked,     ///< revocation listener `id` completes: someone asked the holders to let go
        abort_revoke_waiter,  ///< revocation listener `id` completes with operation_aborted
    };
    type what{};
    std::uint64_t id = 0;
    std::uint64_t holder = 0;
    std::uint64_t seq = 0;
    error_code ec{};
    bool answer = false;
};

class local_queue {
public:
    using actions = std::vector<queue_action>;
    struct options {
        bool shared = false;            ///< waiters may hold together (readers)
        std::size_t handoff_limit = 10; ///< local grants per node after the first
        bool linger = false;            ///< keep an idle held node while nobody else queues
        friend bool operator==(const options&, const options&) = default;
    };

    explicit local_queue(options o) : opts_(o) {}

    /// What the shell knows of the session right now (set before every event): connected, and the
    /// error of its end once final.
    void observe(bool connected, error_code session_end) noexcept
    {
        connected_ = connected;
        end_ = session_end;
    }

    // From the coroutines (through the shell).
    actions acquire(std::uint64_t id, bool one_look);
    actions cancel(std::uint64_t id, error_code why);  ///< cancellation or the waiter's deadline
    actions release(std::uint64_t holder, bool wants_answer);
    actions wait_lost(std::uint64_t id, std::uint64_t holder);
    actions cancel_lost(std::uint64_t id);
    /// Waits for a revocation request on `holder`'s node (cooperative: the holder decides to release).
    actions wait_revoked(std::uint64_t id, std::uint64_t holder);
    actions cancel_revoked(std::uint64_t id);
    /// A holder takes a second hold on its node (re-entry, or a writer's downgrade to the read side):
    /// the new holder's id, or 0 if `holder` does not hold (or lost).
    std::uint64_t enter(std::uint64_t holder);

    // From the current contender.
    actions on_acquired();
    actions on_queued();
    actions on_failed(error_code ec);
    actions on_lost(error_code ec);
    actions on_followers_waiting();
    actions on_revoke_requested();

    // From the session and the shell's timers.
    actions on_session_final(error_code ec);
    actions on_connected();
    actions on_uncertain();  ///< the loss clock ran out without a fresh answer
    /// `holder`'s lease ran out: the lock passes on as if it had released, and it is told
    /// `error::lease_expired` (its guard still has to be released).
    actions on_lease_expired(std::uint64_t holder);
    actions teardown();      ///< the last handle of the lock is gone

    bool holds(std::uint64_t holder) const noexcept { return holders_.count(holder) != 0; }
    /// Whether `holder` lost its hold to its lease (and has not released its guard yet).
    bool expired(std::uint64_t holder) const noexcept { return expired_.count(holder) != 0; }
    /// Empty while `holder` holds and nothing was lost.
    error_code lost(std::uint64_t holder) const noexcept;
    bool has_holders() const noexcept { return !holders_.empty(); }
    const std::set<std::uint64_t>& holder_ids() const noexcept { return holders_; }
    std::size_t waiting() const noexcept { return waiters_.size(); }
    std::uint64_t next_seq() const noexcept { return grants_; }

private:
    bool node_usable() const noexcept { return node_held_ && connected_; }
    /// Readers join a held read node freely while no writer queues behind it; once one does, only within
    /// the hand-off bound, so that the writer gets its turn.
    bool within_bound() const noexcept { return grants_ <= opts_.handoff_limit || (opts_.shared && !followers_waiting_); }
    bool may_join() const noexcept { return opts_.shared && within_bound() && !lost_reason_ && !end_; }
    void advance(actions& out);
    void grant_available(actions& out);
    void grant(actions& out);
    void fail_one_looks(actions& out);
    void fail_all(actions& out, error_code ec);
    void maybe_abandon(actions& out);
    void report_lost(actions& out, error_code ec);
    void drop_contender() noexcept;

    options opts_;
    bool connected_ = false;
    error_code end_;
    std::map<std::uint64_t, bool> waiters_;  // id -> one look; ids increase, so begin() waited longest
    std::set<std::uint64_t> one_looks_;      // the one-look waiters among them (failing them walks only these)
    std::set<std::uint64_t> holders_;
    std::set<std::uint64_t> expired_;  // holders whose lease ran out, until they release
    std::uint64_t holder_gen_ = 0;
    bool contender_ = false, node_held_ = false, queued_ = false;
    std::uint64_t grants_ = 0;      // grants since the current node became the head
    bool followers_waiting_ = false;  // another contender queues behind the node we hold
    error_code lost_reason_;
    std::map<std::uint64_t, std::uint64_t> lost_waiters_;  // listener id -> holder
    std::map<std::uint64_t, std::uint64_t> revoke_waiters_;  // listener id -> holder
    bool revoke_requested_ = false;  // for the current node
};

}  // namespace zklock::detail
