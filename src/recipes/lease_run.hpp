// One run of Curator SemaphoreV2's protocol for one waiter: take the internal lock (PATH/locks), create
// the lease nodes under PATH/leases, wait (watching PATH/leases) until it has at most max_leases
// children, then let the internal lock go. Decisions are the pure lease_holds and foreign_to_semaphore
// (core/schema.hpp); this class performs the requests around them.
#pragma once

#include "semaphore_queue.hpp"

namespace zklock::detail {

class lease_run : public std::enable_shared_from_this<lease_run> {
public:
    lease_run(std::shared_ptr<semaphore_queue> q, std::size_t n, deadline d);
    void start();
    /// The waiter left: let the internal lock go, delete what was created (now or when its create lands).
    void abandon();

private:
    void on_locked(error_code ec, guard g);
    void create_leases();
    void on_created(std::uint64_t r, std::size_t i, error_code ec, const std::string& path, const stat& st);
    void on_listed(std::uint64_t r, error_code ec, const std::vector<std::string>& names);
    void on_schema(std::uint64_t r, error_code ec, const std::vector<std::string>& names);
    void finish(error_code ec, std::vector<lease_node> leases);
    void delete_created();

    std::weak_ptr<semaphore_queue> q_;
    std::shared_ptr<session_impl> s_;
    std::string path_, leases_dir_, prefix_;
    zklock::acl acl_;
    std::size_t n_, max_;
    deadline d_;
    bool one_look_;
    std::uint64_t lock_waiter_ = 0;
    guard lock_;
    bool finished_ = false, unknown_create_ = false;
    std::uint64_t round_ = 0;
    std::vector<lease_node> created_;
    watch leases_watch_;
};

}  // namespace zklock::detail
