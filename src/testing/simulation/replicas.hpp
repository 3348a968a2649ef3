// The model ensemble's servers (issue 50): the leader orders every write and applies it at once; each
// follower applies the leader's commits later, up to where the simulation says, so that a client connected
// to a lagging follower reads the past there and its watches fire only when that follower applies the
// transaction that fires them. Pure, like data_tree: the simulation chooses the lag.
//
// What it follows of ZooKeeper 3.8: every server applies the same transactions in the leader's zxid order
// (a follower's tree is the leader's as of some earlier zxid, never another history); a write is answered
// by the client's own server once that server has applied it (the caller catches the server up to the
// write's zxid before it delivers the answer: answered_at); a sync is answered once the client's server
// has applied everything the leader committed before it; watches live on the server the client is
// connected to (data_tree's per-session watches, one tree per server).
// Not modelled yet: elections (server 0 leads for good), uncommitted proposals lost with a leader,
// moving a session's watches to a new server (setWatches on reconnect).
#pragma once

#include "data_tree.hpp"

#include <cstddef>
#include <optional>
#include <variant>
#include <vector>

namespace zklock::testing::simulation {

using server_index = std::size_t;

class replicas {
public:
    /// `servers` servers (at least 1), each holding "/" alone; server 0 leads.
    explicit replicas(std::size_t servers);

    std::size_t size() const noexcept { return trees_.size(); }
    static constexpr server_index leader = 0;

    /// The time the leader writes into ctime and mtime from now on (ms since the epoch); followers apply
    /// each transaction with the time it was committed at.
    void set_time(std::int64_t ms) noexcept
    {
        now_ms_ = ms;
        trees_[leader].set_time(ms);
    }

    // Writes, ordered and applied by the leader; its result is the client's answer (deliver it once the
    // client's server has applied the write: catch_up(server, last_zxid())).
    multi_result create(session_id session, const op::create& request);
    boost::system::error_code remove(const op::remove& request);
    multi_result set_data(const op::set_data& request);
    std::vector<multi_result> multi(session_id session, const std::vector<multi_op>& ops);
    void start_session(session_id session);
    void end_session(session_id session);

    /// The zxid of the leader's last transaction.
    std::int64_t last_zxid() const noexcept { return trees_[leader].last_zxid(); }
    /// The zxid of the last transaction `s` applied.
    std::int64_t applied(server_index s) const { return trees_.at(s).last_zxid(); }
    /// `s` applies the leader's transactions up to `zxid` (every one committed, when unset).
    void catch_up(server_index s, std::optional<std::int64_t> zxid = {});
    /// `s`'s tree as it stands: what a client connected to `s` reads, where its watches are set, and
    /// whose take_fired() gives the watches that fired there.
    data_tree& server(server_index s) { return trees_.at(s); }

private:
    struct create_txn {
        session_id session;
        op::create request;
    };
    struct multi_txn {
        session_id session;
        std::vector<multi_op> ops;
    };
    struct session_txn {
        session_id session;
        bool start;
    };
    using logged = std::variant<create_txn, op::remove, op::set_data, multi_txn, session_txn>;
    struct txn {
        std::int64_t zxid;     // what the leader gave it (followers must give the same: checked)
        std::int64_t time_ms;  // when the leader applied it
        logged what;
    };
    static void apply(data_tree& t, const logged& r);
    void commit(logged r);

    std::vector<data_tree> trees_;
    std::vector<txn> log_;             // every transaction, in zxid order
    std::vector<std::size_t> next_;    // per server: the index in log_ of the next one to apply
    std::int64_t now_ms_ = 0;
};

}  // namespace zklock::testing::simulation
