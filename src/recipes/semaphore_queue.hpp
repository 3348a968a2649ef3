// The semaphore's per-session state for one path: the coroutines waiting for leases, the leases they
// hold, and the one protocol run (lease_run) that obtains leases from ZooKeeper at a time.
#pragma once

#include "core/listener_index.hpp"
#include "lock_queue.hpp"

#include <zklock/semaphore.hpp>

#include <set>
#include <variant>

namespace zklock::detail {

/// A lease node this session holds (or is about to hand to a coroutine).
struct lease_node {
    std::string node;
    std::int64_t czxid = 0;
    std::int32_t data_version = 0;  // as we last wrote it (a write with it never overwrites a revocation)
};

class lease_run;

class semaphore_queue : public lock_base, public std::enable_shared_from_this<semaphore_queue> {
public:
    using completion = std::variant<handler<guard>, handler<std::vector<guard>>>;

    semaphore_queue(std::shared_ptr<session_impl> session, std::string path, std::size_t max_leases,
                    semaphore_options o, std::shared_ptr<lock_queue> internal_lock);
    ~semaphore_queue() override;
    void subscribe();

    void acquire(std::uint64_t id, std::size_t n, deadline d, lease_length lease, completion h);
    void cancel_waiter(std::uint64_t id, error_code why);

    void release(std::uint64_t holder, std::shared_ptr<pending_release> done) override;
    void wait_lost(std::uint64_t id, std::uint64_t holder, handler<error_code> h) override;
    void cancel_lost(std::uint64_t id) override;
    error_code lost(std::uint64_t holder) const override;
    bool holds(std::uint64_t holder) const override { return held_.count(holder) != 0; }
    void wait_revoked(std::uint64_t id, std::uint64_t holder, handler<> h) override;
    void cancel_revoked(std::uint64_t id) override;

    /// From the current run: its leases, or why it failed (a retryable error: try again once connected).
    void on_run_done(const lease_run* run, error_code ec, std::vector<lease_node> leases);

protected:
    bool has_holders() const override { return !held_.empty(); }
    void grace_passed() override;
    void lease_ran_out(std::uint64_t holder) override;
    void leases_changed() override;
    std::weak_ptr<lock_base> weak_self() override { return weak_from_this(); }

public:

    const std::string path;
    const std::size_t max_leases;
    const semaphore_options opts;
    const std::shared_ptr<lock_queue> internal_lock;  ///< the mutex at PATH/locks
    bool schema_checked = false;                      ///< PATH's children were seen to be a semaphore's

private:
    struct waiter {
        std::size_t n = 1;
        bool one_look = false;
        deadline d;
        completion h;
        std::unique_ptr<asio::steady_timer> timer;
        lease_length lease;
    };
    struct held_lease {
        lease_node lease;
        std::uint64_t local = 0;
        std::unique_ptr<watch> own;  // tells of the node's deletion, and of a revocation request
        error_code lost;
        bool revoke_requested = false;
    };
    void advance();
    void complete(std::uint64_t id, error_code ec, std::vector<guard> leases);
    void grant(std::uint64_t id, std::vector<lease_node> leases, std::uint64_t local);
    /// Takes `it`'s lease out of the held ones (its listeners aborted, the loss clock and keepalive updated).
    held_lease take(std::map<std::uint64_t, held_lease>::iterator it);
    /// A lease node let go by its holder (released, or its lease ran out) goes to a local waiter, or is
    /// deleted; `done` (may be null) hears the outcome.
    void pass_on(lease_node l, std::uint64_t local, const std::shared_ptr<pending_release>& done);
    /// Writes `holder`'s lease deadline into its node's data (see core/node_data.hpp).
    void publish_lease(std::uint64_t holder);
    void watch_lease(std::uint64_t holder);
    void lose(std::uint64_t holder, error_code why);
    void end_run();
    /// Held leases need the session's keepalive (their loss clock counts from the newest answer).
    void update_keepalive();
    bool keepalive_ = false;

    std::map<std::uint64_t, waiter> waiters_;
    std::map<std::uint64_t, held_lease> held_;
    std::set<std::uint64_t> expired_;  // holders whose lease ran out, until they release
    std::set<std::uint64_t> singles_;  // the waiters that want one lease (a hand-off finds one in O(log n))
    listener_index<handler<error_code>> lost_waiters_;
    listener_index<handler<>> revoke_waiters_;
    void revoked(std::uint64_t holder);
    void drop_listeners(std::uint64_t holder);
    std::shared_ptr<lease_run> run_;
    std::uint64_t run_for_ = 0;
    std::size_t handoffs_ = 0;  // local hand-offs in a row
    // Cohorting bounded by real contention (semaphore_followers.cpp): while leases pass between our
    // coroutines, a children watch on the internal lock's PATH/locks says whether anybody else waits for one.
    void look_for_followers();
    bool looking_ = false;       // a look is out, or its watch armed
    bool nobody_waits_ = false;  // the last look found no waiter, and nothing changed since
    watch followers_;
    std::uint64_t holder_gen_ = 0;
    std::uint64_t listener_ = 0;
};

}  // namespace zklock::detail
