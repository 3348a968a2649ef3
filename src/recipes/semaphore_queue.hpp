// The semaphore's per-session state for one path: the shell around core/lease_queue (who gets a lease),
// which keeps the waiters' completions, the leases held and their loss signals, and the one protocol run
// (lease_run) that obtains leases from ZooKeeper at a time. Deadlines and leases ring on lock_base's clock.
#pragma once

#include "core/id_queue.hpp"
#include "core/lease_queue.hpp"
#include "core/lease_run_machine.hpp"
#include "core/listener_index.hpp"
#include "lock_queue.hpp"

#include <zklock/semaphore.hpp>

#include <algorithm>
#include <set>
#include <variant>

namespace zklock::detail {

class lease_run;

class semaphore_queue : public lock_base, public std::enable_shared_from_this<semaphore_queue> {
public:
    using completion = std::variant<handler<guard>, handler<std::vector<guard>>>;

    semaphore_queue(std::shared_ptr<session_impl> session, std::string path, std::size_t max_permits,
                    semaphore_options o, std::shared_ptr<lock_queue> internal_lock);
    ~semaphore_queue() override;
    void subscribe();

    void acquire(std::uint64_t id, std::size_t n, deadline d, lease_length lease, completion h);
    void cancel_waiter(std::uint64_t id, error_code why);

    void release(std::uint64_t holder, release_completion done) override;
    void wait_lost(std::uint64_t id, std::uint64_t holder, handler<error_code> h) override;
    void cancel_lost(std::uint64_t id) override;
    error_code lost(std::uint64_t holder) const override;
    bool holds(std::uint64_t holder) const override { return held_.count(holder) != 0; }
    void wait_revoked(std::uint64_t id, std::uint64_t holder, handler<> h) override;
    void cancel_revoked(std::uint64_t id) override;
    void drain() override;

    /// From the current run: its leases, or why it failed (a retryable error: try again once connected).
    void on_run_done(const lease_run* run, error_code ec, std::vector<lease_node> leases);

    /// At most this many leases in one acquire_many: each is a node, and ZooKeeper answers a listing of
    /// the leases directory in one message of at most jute.maxbuffer (1 MiB by default).
    static constexpr std::size_t max_permits_at_once = 4096;

protected:
    /// A hold cut off by a session renewal is no holder any more (its node went with the old session),
    /// though its guard still has to be released: a drain does not wait for it, as for a mutex's.
    bool has_holders() const override
    {
        return std::any_of(held_.begin(), held_.end(), [](const auto& h) { return !h.second.cut_off; });
    }
    void grace_passed() override;
    void lease_ran_out(std::uint64_t holder) override;
    void leases_changed() override;
    void alarm_rang(const clock_alarm& a) override;
    std::weak_ptr<lock_base> weak_self() override { return weak_from_this(); }
    void add_gauges(lock_stats& into) const override;

public:

    const std::string path;
    const std::size_t max_permits;
    const semaphore_options opts;
    const std::shared_ptr<lock_queue> internal_lock;  ///< the mutex at PATH/locks
    bool schema_checked = false;                      ///< PATH's children were seen to be a semaphore's
    /// The last run held at its first count: the next run speculates (core/lease_run_machine.hpp),
    /// letting the internal lock go with its first requests.
    bool last_run_held_at_first_count = true;

private:
    struct waiter {
        completion h;
        lease_length lease;
        time_point started{};
    };
    /// Leases that would be born lost: the loss clock had run out when they were due. They wait for a
    /// sync's answer (confirm_touch), their waiter still waiting, and go once the touch is fresh again.
    struct held_back {
        std::uint64_t id = 0;
        std::vector<lease_node> leases;
        std::uint64_t local = 0;
    };
    std::vector<held_back> held_back_;
    bool confirming_ = false;
    /// Confirms the session's touch (once connected), then grants what was held back.
    void confirm_touch_for_held_back();
    void grant_held_back();
    struct held_lease {
        lease_node lease;
        std::uint64_t local = 0;
        std::unique_ptr<watch> own;  // tells of the node's deletion, and of a revocation request
        error_code lost;
        bool revoke_requested = false;
        bool watched = false;  // the node's watch is asked for (see ensure_watched)
        bool cut_off = false;  // its session was renewed: the node went with the old one
    };
    /// A lease let go by its holder, on its way to a local waiter or back to ZooKeeper.
    struct freed_lease {
        lease_node lease;
        std::uint64_t local = 0;
        error_code lost;                        // why it is not ours to pass on (empty: it is)
        std::shared_ptr<pending_release> done;  // the release that let it go (null: its lease ran out)
    };
    /// Sets the machine's view of the session before an event.
    lease_queue& machine();
    /// Performs the machine's actions; `freed` is the lease the event let go, if any.
    void perform(const lease_queue::actions& out, freed_lease* freed = nullptr);
    void complete(std::uint64_t id, error_code ec, std::vector<guard> leases, bool local_grant = false,
                  fencing_token token = {});
    void grant(std::uint64_t id, std::vector<lease_node> leases, std::uint64_t local);
    /// Takes `it`'s lease out of the held ones (its listeners aborted, the loss clock and keepalive updated).
    held_lease take(std::map<std::uint64_t, held_lease>::iterator it);
    /// `l` is free: a local waiter gets it, or its node is deleted (see lease_queue::lease_freed).
    void free_lease(freed_lease l);
    /// Writes `holder`'s lease deadline into its node's data (see core/node_data.hpp).
    void publish_lease(std::uint64_t holder);
    /// Watches `holder`'s lease node, once: when a listener comes, or once held for the mutex's
    /// own_watch_delay_ms (a shorter hold never pays a read and a watch for it: see local_queue).
    void ensure_watched(std::uint64_t holder);
    void watch_lease(std::uint64_t holder);
    void lose(std::uint64_t holder, error_code why);
    void end_run();
    /// Held leases need the session's keepalive (their loss clock counts from the newest answer).
    void update_keepalive();
    bool keepalive_ = false;

    lease_queue machine_;
    id_queue<waiter> waiters_;  // one buffer, not a node a waiter (core/id_queue.hpp)
    std::map<std::uint64_t, held_lease> held_;
    std::set<std::uint64_t> expired_;  // holders whose lease ran out, until they release
    listener_index<handler<error_code>> lost_waiters_;
    listener_index<handler<>> revoke_waiters_;
    void revoked(std::uint64_t holder);
    void drop_listeners(std::uint64_t holder);
    std::shared_ptr<lease_run> run_;
    std::vector<lease_node> run_leases_;  // a finished run's leases, until the machine says whose
    // Cohorting bounded by real contention: while leases pass between our coroutines, a children watch on
    // the internal lock's PATH/locks says whether anybody else waits for one (every waiter of another
    // process queues there, and holds that lock while its lease node waits). Our own run's node there is
    // ours: the lease passes to its waiter first.
    void look_for_followers();
    watch followers_;
    std::uint64_t holder_gen_ = 0;
    std::uint64_t listener_ = 0;
};

}  // namespace zklock::detail
