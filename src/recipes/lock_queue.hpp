// The shell around local_queue: the waiters' completions and deadlines, the loss clock, the contender.
// One per session, lock path and side ("mutex:/locks/a", "read:/locks/a"), shared by every lock object
// of that session on that path.
#pragma once

#include "contender.hpp"
#include "core/local_queue.hpp"
#include "sequence_memo.hpp"

#include <zklock/watch.hpp>

#include <map>
#include <optional>

namespace zklock::detail {

using deadline = std::optional<std::chrono::steady_clock::time_point>;
/// A hold-time limit asked for by an acquire (none: hold until released).
using lease_length = std::optional<std::chrono::steady_clock::duration>;

struct lock_queue_options {
    contender_kind kind = contender_kind::exclusive;
    local_queue::options queue;
    zklock::acl acl = open_acl();
    /// A child of the directory that does not count as ahead of our node: the write node of a downgrade.
    std::string passed_over{};
    /// The node's data, exactly (an election candidate's id); none: the owner, and the lease once held
    /// (core/node_data.hpp). With it no lease is published: the data never changes.
    std::optional<std::string> node_data{};
    /// The node is named as kazoo's Lock names it ("<hex>__lock__N", for an exclusive kind): kazoo's
    /// Election ignores Curator's names.
    bool kazoo_name = false;
    /// Counted in the session's statistics under this stats label (zklock/stats.hpp); none: not counted
    /// (a semaphore's internal lock, whose acquires are the semaphore's).
    std::optional<std::string> stats_label = std::string();
    /// Hold only on a listing (contender_machine::grant_only_on_listing): an election's candidate.
    bool grant_only_on_listing = false;
    /// A queue for one hold under a key of its own (a downgrade's read node): no sequence memo is kept
    /// for its key, which no later lock object looks up.
    bool one_off = false;
    friend bool operator==(const lock_queue_options&, const lock_queue_options&) = default;
};

class lock_queue : public lock_base, public contender_owner, public std::enable_shared_from_this<lock_queue> {
public:
    lock_queue(std::shared_ptr<session_impl> session, std::string key, std::string lock_path, lock_queue_options o);
    /// The last lock object and guard of this path are gone: waiters are aborted, the node given up.
    ~lock_queue() override;
    void subscribe();
    /// The session expired and is being renewed (see local_queue::on_session_renewed).
    void on_renewal();

    void acquire(std::uint64_t id, deadline d, lease_length lease, handler<guard> h);
    void cancel_waiter(std::uint64_t id, error_code why);
    /// A second hold of `holder`'s node (see local_queue::enter): an empty guard if it does not hold.
    guard enter(std::uint64_t holder, error_code& why);

    void release(std::uint64_t holder, release_completion done) override;
    void wait_lost(std::uint64_t id, std::uint64_t holder, handler<error_code> h) override;
    void cancel_lost(std::uint64_t id) override;
    error_code lost(std::uint64_t holder) const override;
    bool holds(std::uint64_t holder) const override { return machine_.holds(holder); }
    void wait_revoked(std::uint64_t id, std::uint64_t holder, handler<> h) override;
    void cancel_revoked(std::uint64_t id) override;
    void drain() override;
    /// Completes `h` with this session's place in the queue once it differs from `known`.
    void wait_place(std::uint64_t id, std::size_t known, handler<std::size_t> h);
    void cancel_place(std::uint64_t id);
    /// Ends every place wait with `why`: the session is over, so no place will change again.
    void end_place_waits(error_code why);

    void on_contender(const contender* c, const contender_action& report) override;
    bool created(const contender* c, const std::string& node, std::uint64_t sent_on) override;
    /// The name (last path element) of this session's current node on the path; empty if none.
    std::string node_name() const
    {
        if (!current_) return {};
        const auto& n = current_->node();
        return n.substr(n.rfind('/') + 1);
    }

protected:
    bool has_holders() const override { return machine_.has_holders(); }
    void grace_passed() override;
    void alarm_rang(const clock_alarm& a) override;
    void lease_ran_out(std::uint64_t holder) override;
    void leases_changed() override { publish_lease(); }
    void add_gauges(lock_stats& into) const override;
    std::weak_ptr<lock_base> weak_self() override { return weak_from_this(); }

public:

    const std::string key, path;
    const lock_queue_options opts;

private:
    struct waiter {
        handler<guard> h;
        lease_length lease;
        time_point started{};
    };
    /// Runs `event` on the machine with the session's state as it is at `at` (the event's one reading
    /// of the clock), and performs its actions.
    template <class Event>
    void step(Event event, release_completion* done = nullptr, time_point at = now());
    /// Tells the machine what it knows of the session (connected, final, loss clock run out) as of `at`.
    void observe_session(time_point at);
    /// ... at `now`, the clock's one reading for the event.
    void perform(const local_queue::actions& actions, release_completion* done, time_point at);
    /// Completes waiter `id`, if it still waits (taken out of waiters_ here, or by the caller: `w`).
    void complete_waiter(std::uint64_t id, error_code ec, guard g, time_point at);
    void complete_waiter(std::uint64_t id, waiter w, error_code ec, guard g, time_point at, bool local_grant = false,
                         fencing_token token = {});
    /// Counts the holds that lost the lock since the last step (once each, at their first reason).
    void count_losses();
    error_code counted_loss_;  // why every holder lost, as last counted (empty: none has)
    std::shared_ptr<contender> drop_contender();
    /// Writes the holders' lease deadline into the node's data when it changed (see core/node_data.hpp).
    void publish_lease();

    local_queue machine_;
    id_queue<waiter> waiters_;
    std::map<std::uint64_t, handler<error_code>> lost_waiters_;
    std::map<std::uint64_t, handler<>> revoke_waiters_;
    // The session's node's place: contenders ahead of it at its last listing (0: it holds, or none yet).
    void set_place(std::size_t place);
    /// While someone waits for the place, a child watch on the directory keeps it current (an opt-in
    /// herd: only sessions that ask for their place are told of every change).
    void watch_queue();
    /// local_queue's confirm_node: reads the current node (seq `node_seq`) and steps on_node_confirmed.
    void confirm_node(std::uint64_t node_seq);
    std::size_t place_ = 0;
    bool queued_behind_ = false;  // the current node waited behind others' nodes
    bool watching_queue_ = false;
    watch queue_watch_;
    std::map<std::uint64_t, std::pair<std::size_t, handler<std::size_t>>> place_waiters_;
    std::shared_ptr<contender> current_;
    /// The current node's name, shared by the guards granted on it (made at its first grant).
    const std::shared_ptr<const std::string>& granted_node();
    std::shared_ptr<const std::string> granted_node_;
    std::uint32_t granted_changes_ = 0;  // the contender's node_changes() when granted_node_ was made
    /// The sequence number of the current node, if it has one yet.
    std::optional<std::int32_t> current_sequence() const;
    // A key taken again and again creates its next node without the listing when the create's
    // sequence proves it first (core/sequence_proof.hpp); the proof needs a watch on the directory,
    // asked for once a node of ours on the key has gone back to ZooKeeper (a key used once never pays
    // for it). Kept in the session, for the next lock object on the key (sequence_memo.hpp).
    void watch_directory();
    std::shared_ptr<sequence_memo> memo_;
    std::uint64_t listener_ = 0;
    // The current node's data as we last wrote it: its version, and the lease deadline in it (ms since
    // the epoch, none: no line). Someone else's write (a revocation request) stops further writes.
    std::int32_t data_version_ = 0;
    std::optional<std::int64_t> published_;
    bool data_foreign_ = false;
    bool writing_ = false, rewrite_ = false;  // one write at a time: each needs the version of the last
};

/// The session's queue for `key` (made on first use), or null with `refusal` set: a moved-from session,
/// or another lock object of this session on the same path with other options.
std::shared_ptr<lock_queue> find_lock_queue(const std::shared_ptr<session_impl>& s, const std::string& key,
                                            const std::string& path, const lock_queue_options& o, error_code& refusal);

}  // namespace zklock::detail
