// One run of Curator SemaphoreV2's protocol for one waiter of this session, as a pure state machine (the
// shell, recipes/lease_run.cpp, performs the requests and feeds their answers back):
//   1. the first run of a session on a path looks at PATH: another kind of lock's nodes there refuse it,
//      before anything is created (the internal lock would make PATH/locks);
//   2. take the internal lock, a mutex at PATH/locks;
//   3. create the lease nodes PATH/leases/_c_<uuid>-lease-N, and list PATH/leases with a watch right
//      behind them (ZooKeeper answers the listing after the creates);
//   4. while PATH/leases has more than max_permits children, wait for the watch and list again;
//   5. let the internal lock go; the leases are held.
// Requests carry a round: an answer of an earlier round is stale (its node, if made, is deleted).
//
// A speculating run lets the internal lock go right behind the creates and the listing, in the same
// pipelined round, instead of after the listing's answer. ZooKeeper serves a session's requests in order,
// so the listing still counts the leases after our creates and before our lock node goes: the same count
// Curator takes under the lock. Then the internal lock changes hands one write after it was taken, not
// two. If that count is over max_permits, the run would have to wait without the lock, which the protocol
// does not allow (the lock is what lets a waiter's count only shrink): it deletes its leases and takes the
// lock again, this time keeping it while it waits. The queue speculates when its last run held at its
// first count, so that a full semaphore is not asked twice for every lease. Any count taken after our
// creates is safe to hold on (the newest holder counted every older one); the lock only keeps waiters
// from crowding out each other.
#pragma once

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace zklock::detail {

using boost::system::error_code;

/// A lease node of this session.
struct lease_node {
    std::string node;               ///< its full path
    std::int64_t czxid = 0;
    std::int32_t data_version = 0;  ///< as we last wrote it (a write with it never overwrites a revocation)
};

struct run_action {
    enum class type {
        check_schema,     ///< list PATH (no watch); answer with on_schema
        schema_ok,        ///< PATH holds no other kind of lock: the session need not look again
        lock,             ///< take the internal lock (`one_look`: only if that needs no waiting)
        create_lease,     ///< create lease `index` of round `round`; answer with on_created
        list_leases,      ///< list PATH/leases with a watch (round `round`); answer with on_listed
        wait_leases,      ///< wait for that watch (round `round`); then on_leases_changed
        make_leases_dir,  ///< create the container PATH/leases; answer with on_dir_made
        delete_node,      ///< delete `node` in the background
        find_orphans,     ///< once connected, delete the leases of this run's name that a lost answer hid
        unlock,           ///< let the internal lock go (or stop waiting for it)
        done,             ///< the run is over: `ec` empty when its leases are held (take_leases)
    };
    type what{};
    std::uint64_t round = 0;
    std::size_t index = 0;
    bool one_look = false;
    std::string node{};
    error_code ec{};
};

class lease_run_machine {
public:
    using actions = std::vector<run_action>;

    /// `schema_known`: a run of this session already found PATH to be a semaphore's (step 1 is skipped).
    /// `speculate`: let the internal lock go with the first round's requests (see above).
    lease_run_machine(std::size_t n, std::size_t max_permits, bool one_look, bool schema_known, bool speculate = false)
        : n_(n), max_(max_permits), one_look_(one_look), schema_known_(schema_known), speculate_(speculate),
          held_at_first_count_(speculate)
    {
    }

    actions start();
    actions on_schema(error_code ec, const std::vector<std::string>& children);
    actions on_locked(error_code ec);
    actions on_created(std::uint64_t round, std::size_t index, error_code ec, std::string node, std::int64_t czxid);
    actions on_listed(std::uint64_t round, error_code ec, const std::vector<std::string>& leases);
    actions on_leases_changed(std::uint64_t round);
    actions on_dir_made(error_code ec);
    /// The waiter left: stop, and delete what was made (now, or when its create is answered).
    actions abandon();

    bool finished() const noexcept { return finished_; }
    /// The leases of a run that is done without error.
    std::vector<lease_node> take_leases() { return std::move(created_); }
    /// Whether the run held at its first count (a guess for the next run's `speculate`: the others'
    /// leases are often as many again); `speculate` if it took no count.
    bool held_at_first_count() const noexcept { return held_at_first_count_; }

private:
    void create_leases(actions& out);
    void lock(actions& out);
    void finish(actions& out, error_code ec);
    void delete_created(actions& out);

    std::size_t n_, max_;
    bool one_look_, schema_known_, speculate_;
    bool held_at_first_count_;
    bool locked_ = false;       // the internal lock was asked for (then given, or still awaited)
    bool speculating_ = false;  // the current round let the lock go with its requests
    bool waited_ = false;       // a count was over max_permits
    bool finished_ = false, succeeded_ = false, unknown_create_ = false;
    std::uint64_t round_ = 0;
    std::vector<lease_node> created_;
};

}  // namespace zklock::detail
