// The election's candidate: a contender whose node's data is the participant id, named as the chosen
// peer's candidates are (Curator's LeaderSelector or LeaderLatch, kazoo's Election), every term a node
// of its own.
#include "../lock_queue.hpp"

#include "../core/node_data.hpp"

#include <zklock/election.hpp>

namespace zklock::detail {

std::shared_ptr<lock_queue> election_queue_for(const std::shared_ptr<session_impl>& s, const std::string& path,
                                               const std::string& id, const election_options& options,
                                               error_code& refusal)
{
    if (s && (refusal = lock_path_refusal(*s, path))) return nullptr;
    // The id is the node's whole data: one line, so that it reads back as itself (core/node_data.hpp).
    if (id.find_first_of("\r\n") != std::string::npos || id == revoke_request) {
        refusal = zklock::error::invalid_participant_id;
        return nullptr;
    }
    // No hand-off between this session's coroutines without a round trip, and no lingering: each term is
    // a node of its own, which observers and Curator's getLeader() see.
    const auto kind = options.style == election_style::latch ? contender_kind::latch : contender_kind::exclusive;
    lock_queue_options q{kind, {false, 0, false}, options.acl};
    q.node_data = id;
    q.kazoo_name = options.style == election_style::kazoo;
    // Every grant on a listing, which refuses a path where another recipe's candidates appeared while
    // this one waited (a LeaderLatch's would lead beside it): a round trip a term, not a hand-off's cost.
    q.grant_only_on_listing = true;
    return find_lock_queue(s, "election:" + path, path, q, refusal);
}

void async_observe_election(std::shared_ptr<lock_queue> q, error_code refusal, std::string dir,
                            std::optional<leader_info> known, handler<leader_info> h)
{
    if (!q) return complete_without_session(std::move(h), refusal, leader_info{});
    auto s = q->s;
    drop_on_executor(std::move(q));
    async_observe_leader(std::move(s), std::move(dir), std::move(known), std::move(h));
}

}  // namespace zklock::detail
