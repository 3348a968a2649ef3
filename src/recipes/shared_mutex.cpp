// The read/write lock: two lock queues per session and path, a read side whose coroutines share one
// "__READ__" node and a write side queued behind one "__WRIT__" node (Curator's naming and order).
#include "lock_queue.hpp"

#include <zklock/shared_mutex.hpp>

namespace zklock::detail {

std::shared_ptr<lock_queue> rw_queue_for(const std::shared_ptr<session_impl>& s, const std::string& path, bool readers,
                                         const mutex_options& o, error_code& refusal)
{
    if (s && (refusal = lock_path_refusal(*s, path))) return nullptr;
    const lock_queue_options q{readers ? contender_kind::reader : contender_kind::writer,
                               {readers, o.local_handoff_limit, o.linger}, o.acl};
    return find_lock_queue(s, (readers ? "read:" : "write:") + path, path, q, refusal);
}

}  // namespace zklock::detail
