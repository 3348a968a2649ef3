// The participants list: one listing of the lock directory (two for a semaphore), then one pipelined read
// per node for its owner, lease and creation time. The order and the holders come from core/schema, a
// semaphore's waiting leases from core/lease_waiters.
#include "core/lease_waiters.hpp"
#include "core/node_data.hpp"
#include "core/schema.hpp"

#include "../session/pending_op.hpp"

#include <zklock/detail/sequence.hpp>
#include <zklock/participants.hpp>

#include <algorithm>

namespace zklock::detail {

namespace {

using wall = std::chrono::system_clock;

/// One snapshot being read: the nodes in order, and the reads still out.
struct snapshot {
    std::shared_ptr<session_impl> s;
    /// The caller's completion; a cancellation (any type: the reads change nothing) answers it at once,
    /// and the reads still out finish into nothing.
    std::shared_ptr<pending_op<std::vector<participant>>> op;
    std::vector<participant> nodes;
    std::vector<bool> gone;
    std::vector<std::int64_t> czxids;
    std::size_t pending = 0;
    error_code failure;  // the first read that failed for another reason than the node's absence
    std::optional<node_origin> internal_lock_head;  // a semaphore's: the run under way, if any

    void finish(error_code ec)
    {
        if (!ec) mark_waiting_leases();
        std::vector<participant> out;
        if (!ec)
            for (std::size_t i = 0; i < nodes.size(); ++i)
                if (!gone[i]) out.push_back(std::move(nodes[i]));
        op->complete(ec, std::move(out));
    }

    // A semaphore's leases made by the run that holds its internal lock wait; the others hold.
    void mark_waiting_leases()
    {
        std::vector<node_origin> origins;
        std::vector<std::size_t> at;
        for (std::size_t i = 0; i < nodes.size(); ++i)
            if (nodes[i].role == "permit" && !gone[i]) {
                origins.push_back({czxids[i], nodes[i].session_id});
                at.push_back(i);
            }
        const auto holding = leases_holding(origins, internal_lock_head);
        for (std::size_t k = 0; k < at.size(); ++k) nodes[at[k]].holds = holding[k];
    }
};

void read_nodes(const std::shared_ptr<snapshot>& snap)
{
    snap->gone.assign(snap->nodes.size(), false);
    snap->czxids.assign(snap->nodes.size(), 0);
    snap->pending = snap->nodes.size();
    if (snap->pending == 0) return snap->finish({});
    for (std::size_t i = 0; i < snap->nodes.size(); ++i)
        snap->s->get_data(snap->nodes[i].node, nullptr, [snap, i](error_code ec, std::string data, stat st) {
            auto& p = snap->nodes[i];
            if (ec == zk_errc::no_node) snap->gone[i] = true;  // gone since the listing: left out
            else if (ec) {
                if (!snap->failure) snap->failure = ec;
            } else {
                const auto d = decode_node_data(data);
                p.owner = d.owner;
                p.revoke_requested = d.revoke_requested;
                p.max_permits = d.max_permits;
                if (d.lease_until_ms) p.lease_until = wall::time_point(std::chrono::milliseconds(*d.lease_until_ms));
                p.created = wall::time_point(std::chrono::milliseconds(st.ctime_ms));
                p.session_id = st.ephemeral_owner;
                snap->czxids[i] = st.czxid;
            }
            if (--snap->pending == 0) snap->finish(snap->failure);
        });
}

/// A node in the list, before its data is read.
participant entry(std::string node, std::string role, bool holds)
{
    return {.node = std::move(node),
            .role = std::move(role),
            .holds = holds,
            .owner = {},
            .lease_until = std::nullopt,
            .created = {},
            .revoke_requested = false,
            .session_id = 0,
            .max_permits = std::nullopt};
}

std::string role_of(const child_role& r)
{
    if (r.schema == lock_schema::read_write) return r.excludes_readers ? "write" : "read";
    if (r.schema == lock_schema::latch) return "latch";
    return "mutex";
}

void add_queue(snapshot& snap, const std::string& dir, const std::vector<std::string>& children, bool waiters)
{
    for (auto& q : queue_order(children))
        snap.nodes.push_back(entry(dir + "/" + q.name, waiters ? "waiter" : role_of(q.role), !waiters && q.holds));
}

// A semaphore: its leases in sequence order, then the sessions queued for its internal lock.
void read_semaphore(const std::shared_ptr<snapshot>& snap, const std::string& path)
{
    snap->s->get_children(path + "/leases", nullptr, [snap, path](error_code ec, std::vector<std::string> leases, stat) {
        if (ec && ec != zk_errc::no_node) return snap->finish(ec);
        std::sort(leases.begin(), leases.end(), [](const std::string& a, const std::string& b) {
            return static_cast<std::int32_t>(static_cast<std::uint32_t>(parse_sequence(a).value_or(0)) -
                                             static_cast<std::uint32_t>(parse_sequence(b).value_or(0))) < 0;
        });
        for (auto& l : leases)
            if (parse_sequence(l))
                snap->nodes.push_back(entry(path + "/leases/" + l, "permit", true));
        snap->s->get_children(path + "/locks", nullptr, [snap, path](error_code lec, std::vector<std::string> locks, stat) {
            if (lec && lec != zk_errc::no_node) return snap->finish(lec);
            const auto first_waiter = snap->nodes.size();
            add_queue(*snap, path + "/locks", locks, true);
            if (first_waiter == snap->nodes.size()) return read_nodes(snap);
            // The head of the internal lock: its run's leases wait (see mark_waiting_leases).
            auto head = snap->nodes[first_waiter].node;
            snap->s->exists(head, nullptr, [snap](error_code, std::optional<stat> st) {
                if (st) snap->internal_lock_head = node_origin{st->czxid, st->ephemeral_owner};
                read_nodes(snap);
            });
        });
    });
}

}  // namespace

void async_participants(const std::shared_ptr<session_impl>& s, std::string path, handler<std::vector<participant>> h)
{
    if (!s) return complete_without_session(std::move(h), error_code(zklock::error::no_session), std::vector<participant>{});
    auto op = pending_op<std::vector<participant>>::bind(s, std::move(h), op_nature::undoable);
    asio::dispatch(s->ex, [s, path = std::move(path), op = std::move(op)]() mutable {
        if (auto ec = below_root_refusal(*s, path))
            return op->complete(ec, std::vector<participant>{});
        if (!op->send_now()) return;
        auto snap = std::make_shared<snapshot>();
        snap->s = s;
        snap->op = std::move(op);
        s->get_children(path, nullptr, [snap, path](error_code ec, std::vector<std::string> children, stat) {
            if (ec == zk_errc::no_node) return snap->finish({});
            if (ec) return snap->finish(ec);
            const bool semaphore = std::any_of(children.begin(), children.end(), [](const std::string& c) {
                return c == "leases" || c == "locks";
            });
            if (semaphore) return read_semaphore(snap, path);
            add_queue(*snap, path, children, false);
            read_nodes(snap);
        });
    });
}

}  // namespace zklock::detail
