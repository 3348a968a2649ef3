// One run of Curator SemaphoreV2's protocol for one waiter: the shell around core/lease_run_machine, which
// decides every step. This class performs its requests, feeds their answers back, and tells the
// semaphore's queue the outcome.
#pragma once

#include "core/lease_run_machine.hpp"
#include "semaphore_queue.hpp"

namespace zklock::detail {

class lease_run : public std::enable_shared_from_this<lease_run> {
public:
    /// `one_look`: look once (take the internal lock and count the leases only if that needs no waiting).
    lease_run(std::shared_ptr<semaphore_queue> q, std::size_t n, bool one_look);
    void start();
    /// The waiter left: let the internal lock go, delete what was created (now or when its create lands).
    void abandon();

private:
    void perform(const lease_run_machine::actions& out);
    void find_orphans();

    std::weak_ptr<semaphore_queue> q_;
    std::shared_ptr<session_impl> s_;
    std::shared_ptr<lock_queue> internal_lock_;
    std::string path_, leases_dir_, prefix_;
    std::string node_data_;  // of each lease node: the owner, and the N others' `zklock ls` and --limit compare
    zklock::acl acl_;
    lease_run_machine machine_;
    std::uint64_t lock_waiter_ = 0;
    guard lock_;
    watch leases_watch_;
};

}  // namespace zklock::detail
