// The coroutines of one session waiting for, or holding, one lock node: a pure state machine.
//
// A session makes one contender node per lock path and side; its coroutines queue here and the lock
// passes between them without a round trip, up to `handoff_limit` times in a row (lock cohorting, Dice
// et al. 2012), so that other processes still get their turn. In shared mode (the read side of a
// read/write lock) every waiter may join a held node: freely while no writer queues behind it (the
// contender watches for followers while it holds a read node), within the same bound once one does. A mutex's
// node passes beyond the bound too, as long as no other process queues behind it (see within_bound). The shell
// (recipes/lock_queue.cpp) keeps the timers and completions, and performs the actions.
#pragma once

#include "id_queue.hpp"
#include "listener_index.hpp"

#include <boost/container/small_vector.hpp>
#include <boost/system/error_code.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <vector>

namespace zklock::detail {

using boost::system::error_code;

/// Whether a loss reason `next` replaces the one already reported (`current`, empty if none): never. One
/// reason per loss, the first one reported, so that async_wait_lost, the observer, the metrics and lost()
/// polled later all say the same (a node deleted when the server expired the session stays
/// `lock_node_deleted` if that was heard first; `ownership_uncertain` stays once reported).
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
        watch_followers,      ///< the contender should report another process queuing behind the held node
        watch_own,            ///< the contender should watch its own node (a loss or revocation listener)
        start_own_watch_clock,  ///< on_own_watch_due after own_watch_delay, if this node is still current
        confirm_touch,  ///< the loss clock ran out with a grant due: on_touch_confirmed once a sync is answered
        /// The node became ours while the session was away, and someone may have deleted it meanwhile:
        /// read it (behind a sync) and answer on_node_confirmed(seq, the read's error, no_node if gone).
        confirm_node,
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
    /// Inline for the few actions of a usual event: an event is stepped for every grant and release.
    using actions = boost::container::small_vector<queue_action, 6>;
    struct options {
        bool shared = false;            ///< waiters may hold together (readers)
        std::size_t handoff_limit = 10; ///< local grants per node after the first
        bool linger = false;            ///< keep an idle held node while nobody else queues
        friend bool operator==(const options&, const options&) = default;
    };

    explicit local_queue(options o) : opts_(o) {}

    /// Under steady contention, how many nodes go at the bound unasked before the contender is asked
    /// again whether anybody else still waits (see should_look).
    static constexpr std::size_t relook_every = 8;
    /// A held node is watched (for its deletion, and for revocation requests) at once when a holder listens
    /// for either, else once held this long: most holds of a busy server are shorter, and would pay a read
    /// and a watch each for nothing. A holder that only polls lost() hears of a deletion that much later.
    static constexpr auto own_watch_delay_ms = 1;

    /// What the shell knows of the session right now (set before every event): connected, the error of
    /// its end once final, and whether the loss clock has run out (core/loss_clock.hpp): no answer that
    /// passed the leader within the loss grace. A guard granted then would be lost at birth, so the
    /// grant waits (the waiter keeps its place) until a sync has been answered (confirm_touch).
    void observe(bool connected, error_code session_end, bool loss_clock_ran_out) noexcept
    {
        connected_ = connected;
        end_ = session_end;
        stale_ = loss_clock_ran_out;
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
    /// the new holder's id; or 0, with the reason in `why`, if `holder` does not hold or lost
    /// (`not_held`), or if the loss clock has run out (`ownership_uncertain`: the second hold would be
    /// lost at birth, as a grant would; the first one hears of it from the clock).
    std::uint64_t enter(std::uint64_t holder, error_code* why = nullptr);

    // From the current contender.
    actions on_acquired();
    actions on_queued();
    actions on_failed(error_code ec);
    actions on_lost(error_code ec);
    actions on_followers_waiting();
    actions on_followers_none();  ///< the contender looked: nobody queues behind the node (yet)
    /// The directory changed since that look: until the contender looks again, the node passes beyond the
    /// bound no more (a contender that just queued must not wait for a round trip's worth of local grants).
    actions on_followers_changed();
    actions on_revoke_requested();

    // From the session and the shell's timers.
    actions on_session_final(error_code ec);
    /// The session expired and a new one is being opened under it (session_config::on_expiry): the
    /// holders are told `error::session_expired` and cut off (each guard stays lost until released), the
    /// contender is given up, and the waiters wait on (`keep_waiters`, one looks excepted) for a node of
    /// the new session, made once connected, or fail with session_expired.
    actions on_session_renewed(bool keep_waiters);
    actions on_connected();
    actions on_uncertain();  ///< the loss clock ran out without a fresh answer
    /// The sync that confirm_touch asked for was answered (or failed): a grant held for it may go now.
    actions on_touch_confirmed();
    /// The read that confirm_node asked for (`node`: its seq) was answered: `ec` empty, the node is there
    /// and the grants held for it go; zk_errc::no_node, it is gone (as on_lost); a lost connection asks
    /// again once reconnected; any other error grants (the read cannot tell, and the node's own watch
    /// still will).
    actions on_node_confirmed(std::uint64_t node, error_code ec);
    /// The node has been held for own_watch_delay: watch it from now on, for holders that poll lost().
    actions on_own_watch_due();
    /// `holder`'s lease ran out: the lock passes on as if it had released, and it is told
    /// `error::lease_expired` (its guard still has to be released).
    actions on_lease_expired(std::uint64_t holder);
    actions teardown();      ///< the last handle of the lock is gone

    bool holds(std::uint64_t holder) const noexcept { return holders_.count(holder) != 0; }
    /// Whether `holder` was cut off from the node (its lease ran out, or its session was renewed) and
    /// has not released its guard yet.
    bool cut_off(std::uint64_t holder) const noexcept { return cut_off_.count(holder) != 0; }
    /// Empty while `holder` holds and nothing was lost.
    error_code lost(std::uint64_t holder) const noexcept;
    bool has_holders() const noexcept { return !holders_.empty(); }
    const std::set<std::uint64_t>& holder_ids() const noexcept { return holders_; }
    std::size_t waiting() const noexcept { return waiters_.size(); }
    std::uint64_t next_seq() const noexcept { return grants_; }

private:
    bool node_usable() const noexcept { return node_held_ && connected_; }
    /// Lock cohorting bounded by real contention: beyond `handoff_limit` grants the node stays only while
    /// nobody else queues behind it (another process, or for readers a writer). The contender is asked to
    /// watch for followers at a node's first join (readers) or first local hand-off (a mutex), not before:
    /// a lone holder would pay a listing and a watch for nothing. Readers beyond the bound join until a
    /// writer is seen; a mutex's node passes on only once the contender has looked and found nobody
    /// (followers_clear_). A limit of 0 stays strict.
    bool within_bound() const noexcept
    {
        if (grants_ <= opts_.handoff_limit || followers_waiting_) return grants_ <= opts_.handoff_limit;
        return opts_.shared || (opts_.handoff_limit > 0 && followers_clear_);
    }
    /// Beyond the bound with the contender's look at the current node still out.
    bool answer_pending() const noexcept
    {
        return !opts_.shared && opts_.handoff_limit > 0 && followers_watched_ && !followers_clear_ &&
               !followers_waiting_ && grants_ > opts_.handoff_limit;
    }
    /// Whether to ask the contender about followers at a node's first local hand-off: when the last answer
    /// said nobody else waits, or none was asked for `relook_every` nodes (so that a session whose rivals
    /// left learns it). Under steady contention the node goes at the bound without asking or waiting, as
    /// it always did; when asked, the hand-off beyond the bound waits for the answer (answer_pending).
    bool should_look() const noexcept { return !contended_ || unanswered_nodes_ >= relook_every; }

    bool may_join() const noexcept { return opts_.shared && within_bound() && !lost_reason_ && !end_; }
    void advance(actions& out);
    void grant_available(actions& out);
    void grant(actions& out);
    void fail_one_looks(actions& out);
    void fail_all(actions& out, error_code ec);
    void maybe_abandon(actions& out);
    void report_lost(actions& out, error_code ec);
    void node_lost(actions& out, error_code ec);  ///< on_lost's work
    void drop_contender() noexcept;
    /// holders_ keeps the node of the last hold that ended for the next one: a local hand-off then
    /// allocates nothing for its holder.
    void add_holder(std::uint64_t holder);
    bool remove_holder(std::uint64_t holder);

    options opts_;
    bool connected_ = false;
    error_code end_;
    id_queue<bool> waiters_;  // id -> one look; ids increase, so the front waited longest
    std::set<std::uint64_t> one_looks_;  // the one-look waiters among them (failing them walks only these)
    std::set<std::uint64_t> holders_;
    std::set<std::uint64_t>::node_type spare_holder_;
    std::map<std::uint64_t, error_code> cut_off_;  // holders cut off from the node, and why, until they release
    std::uint64_t holder_gen_ = 0;
    bool contender_ = false, node_held_ = false, queued_ = false;
    std::uint64_t grants_ = 0;      // grants since the current node became the head
    bool followers_waiting_ = false;  // another contender queues behind the node we hold
    bool followers_watched_ = false;  // the contender reports followers of the current node
    bool followers_clear_ = false;    // ... and its look found nobody behind it
    bool contended_ = false;          // the last answer heard: another process queued behind our node
    std::size_t unanswered_nodes_ = 0;  // nodes let go at the bound, unasked, since the last answer
    error_code lost_reason_;
    listener_index<> lost_waiters_;
    listener_index<> revoke_waiters_;
    bool stale_ = false;             // the loss clock has run out (observe)
    bool confirming_ = false;        // a confirm_touch is out
    bool held_while_away_ = false;   // the node became ours while disconnected: confirm_node before a grant
    bool confirming_node_ = false;   // a confirm_node is out
    std::uint64_t node_gen_ = 0;     // counts the nodes given up (drop_contender): a late confirmation's age
    bool revoke_requested_ = false;  // for the current node
    bool own_watch_asked_ = false;   // the current node's contender watches its own node
    void watch_own(actions& out);
    actions listen(listener_index<>& index, std::uint64_t id, std::uint64_t holder, bool holding, bool happened,
                   queue_action notify, queue_action::type aborted);
    actions unlisten(listener_index<>& index, std::uint64_t id, queue_action::type aborted);
};

}  // namespace zklock::detail
