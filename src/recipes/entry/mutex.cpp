// The mutex: one exclusive contender node per session and path ("_c_<uuid>-lock-N", Curator's
// InterProcessMutex naming), the session's coroutines queued locally behind it.
#include "../lock_queue.hpp"

#include <zklock/mutex.hpp>

namespace zklock::detail {

std::shared_ptr<lock_queue> lock_queue_for(const std::shared_ptr<session_impl>& s, const std::string& path,
                                           const mutex_options& o, error_code& refusal)
{
    if (s && (refusal = lock_path_refusal(*s, path))) return nullptr;
    lock_queue_options q{contender_kind::exclusive, {false, o.local_handoff_limit, o.linger}, o.acl};
    q.stats_label = o.stats_label;
    return find_lock_queue(s, "mutex:" + path, path, q, refusal);
}

}  // namespace zklock::detail
