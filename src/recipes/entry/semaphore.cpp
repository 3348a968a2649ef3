// The entry points of zklock/semaphore.hpp: the session's semaphore state for a path, and the acquires,
// which bind the caller's cancellation slot on its thread and hop onto the session's executor.
#include "../lease_run.hpp"

namespace zklock::detail {

std::shared_ptr<semaphore_queue> semaphore_queue_for(const std::shared_ptr<session_impl>& s, const std::string& path,
                                                     std::size_t max_permits, const semaphore_options& o,
                                                     error_code& refusal)
{
    if (s && (refusal = lock_path_refusal(*s, path))) return nullptr;
    if (s && max_permits == 0) {
        refusal = zklock::error::invalid_permit_count;
        return nullptr;
    }
    auto same = [&](const semaphore_queue& q) { return q.opts == o && q.max_permits == max_permits; };
    auto make = [&]() -> std::shared_ptr<semaphore_queue> {
        // The internal lock only ever has one coroutine of this session (the run's): no hand-off.
        lock_queue_options internal{contender_kind::exclusive, {false, 0, false}, o.acl};
        internal.stats_label.reset();  // its acquires are the semaphore's, counted there
        auto lock = find_lock_queue(s, "semaphore-lock:" + path, path + "/locks", internal, refusal);
        if (!lock) return nullptr;
        return std::make_shared<semaphore_queue>(s, path, max_permits, o, std::move(lock));
    };
    return shared_state_for<semaphore_queue>(s, "semaphore:" + path, same, make, refusal);
}

namespace {
void start_acquire(std::shared_ptr<semaphore_queue> q, std::size_t n, deadline d, lease_length lease,
                   semaphore_queue::completion h)
{
    const auto id = q->new_id();
    std::visit([&](auto& hh) {
        bind_cancellation(hh, q, [id](semaphore_queue& self) { self.cancel_waiter(id, asio::error::operation_aborted); });
    }, h);
    auto ex = q->s->ex;
    asio::dispatch(ex, [q = std::move(q), id, n, d, lease, h = std::move(h)]() mutable {
        q->acquire(id, n, d, lease, std::move(h));
    });
}
}  // namespace

void async_acquire_leases(std::shared_ptr<semaphore_queue> q, std::size_t n, deadline d, lease_length lease,
                          handler<std::vector<guard>> h)
{
    start_acquire(std::move(q), n, d, lease, std::move(h));
}

void async_acquire_lease(std::shared_ptr<semaphore_queue> q, deadline d, lease_length lease, handler<guard> h)
{
    start_acquire(std::move(q), 1, d, lease, std::move(h));
}

void refuse_leases(error_code why, handler<std::vector<guard>> h)
{
    complete_without_session(std::move(h), why, std::vector<guard>{});
}

void drop_on_executor(std::shared_ptr<semaphore_queue> q) noexcept { drop_state_on_executor(std::move(q)); }

}  // namespace zklock::detail
