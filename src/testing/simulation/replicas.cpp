#include "replicas.hpp"

#include "overloaded.hpp"

#include <stdexcept>

namespace zklock::testing::simulation {

replicas::replicas(std::size_t servers) : trees_(servers == 0 ? 1 : servers), next_(trees_.size(), 0) {}

void replicas::apply(data_tree& t, const logged& r)
{
    std::visit(overloaded{
                   [&](const create_txn& c) { t.create(c.session, c.request); },
                   [&](const op::remove& d) { t.remove(d); },
                   [&](const op::set_data& s) { t.set_data(s); },
                   [&](const multi_txn& m) { t.multi(m.session, m.ops); },
                   [&](const session_txn& s) { s.start ? t.start_session(s.session) : t.end_session(s.session); },
               },
               r);
}

// The leader has applied it already (its answer came from there): log it for the followers.
void replicas::commit(logged r)
{
    log_.push_back(txn{trees_[leader].last_zxid(), now_ms_, std::move(r)});
    next_[leader] = log_.size();
}

multi_result replicas::create(session_id session, const op::create& request)
{
    auto result = trees_[leader].create(session, request);
    commit(create_txn{session, request});
    return result;
}

boost::system::error_code replicas::remove(const op::remove& request)
{
    const auto ec = trees_[leader].remove(request);
    commit(request);
    return ec;
}

multi_result replicas::set_data(const op::set_data& request)
{
    auto result = trees_[leader].set_data(request);
    commit(request);
    return result;
}

std::vector<multi_result> replicas::multi(session_id session, const std::vector<multi_op>& ops)
{
    auto results = trees_[leader].multi(session, ops);
    commit(multi_txn{session, ops});
    return results;
}

void replicas::start_session(session_id session)
{
    trees_[leader].start_session(session);
    commit(session_txn{session, true});
}

void replicas::end_session(session_id session)
{
    trees_[leader].end_session(session);
    commit(session_txn{session, false});
}

void replicas::catch_up(server_index s, std::optional<std::int64_t> zxid)
{
    auto& tree = trees_.at(s);
    auto& next = next_.at(s);
    while (next < log_.size() && (!zxid || log_[next].zxid <= *zxid)) {
        const auto& t = log_[next++];
        tree.set_time(t.time_ms);
        apply(tree, t.what);
        // One history: the follower's zxid must be the leader's for the same transaction.
        if (tree.last_zxid() != t.zxid) throw std::logic_error("replicas: a follower's history left the leader's");
    }
}

}  // namespace zklock::testing::simulation
