// A model of ZooKeeper's data tree, for deterministic simulation (issue 50): the nodes, their stats and
// zxids, sequential names, ephemeral owners, one-shot watches and multi, as the Java server applies a
// transaction. Pure and single-threaded: no clock (the caller sets the time), no network, no Asio, so a
// scheduler drives it in virtual time and a table test checks it. It speaks zklock's public types
// (op::create, multi_result, stat, watch_event), as a simulated session will answer with them.
//
// What it follows of ZooKeeper 3.8 (DataTree, PrepRequestProcessor):
// - a sequential node's suffix, as %010d, counts the creates of children the parent has had, while its
//   cversion counts the creates and the deletes (ZooKeeper 3.8, with kazoo: after two creates and two
//   deletes cversion is 4 and the next name n-0000000002; the conformance test found the difference), so
//   a name is never handed out twice under one parent;
// - every write request is one transaction with the next zxid, a refused one too (the server logs it as an
//   error transaction: with ZooKeeper 3.8 and kazoo, /a created at zxid 2, a refused create and a refused
//   set_data, /b at 5); a multi is one transaction for all its operations, applied all or none, its
//   results the failing operation's code, runtime_inconsistency after it and ok before it; a session's
//   start is a transaction, and so is its end, which deletes all its ephemeral nodes;
// - a watch is one-shot and per session: a session set twice on a path fires once. exists() and
//   get_data() set a data watch (exists() also on a missing node: it fires when the node is created),
//   get_children() a child watch. Events are queued in the order of the transactions that fired them.
// Not modelled yet: ACLs, quotas, TTL nodes; containers are kept as persistent nodes (the server deletes
// an empty container later, on a timer of its own).
#pragma once

#include <zklock/multi.hpp>
#include <zklock/stat.hpp>
#include <zklock/watch_event.hpp>

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace zklock::testing::simulation {

using session_id = std::int64_t;

/// A watch that fired: the session it was set by, and what it reports.
struct fired_watch {
    session_id session = 0;
    watch_event event;
};

class data_tree {
public:
    /// The tree holds "/" alone, at zxid 0.
    data_tree();

    /// The time written into ctime and mtime from now on, in ms since the epoch.
    void set_time(std::int64_t ms) noexcept { now_ms_ = ms; }
    /// The zxid of the last transaction applied (0 before the first).
    std::int64_t last_zxid() const noexcept { return zxid_; }

    /// Creates a node for `session`. On success the result holds the created path (with its suffix for
    /// a sequential mode) and the new node's stat.
    multi_result create(session_id session, const op::create& request);
    boost::system::error_code remove(const op::remove& request);
    multi_result set_data(const op::set_data& request);
    /// All or none. One result per operation, as multi_result says.
    std::vector<multi_result> multi(session_id session, const std::vector<multi_op>& ops);
    /// A session starts (createSession): one transaction.
    void start_session(session_id session);
    /// The end of a session (closed or expired): one transaction, which deletes its ephemeral nodes; its
    /// watches are forgotten.
    void end_session(session_id session);

    /// The reads; `watcher`, when set, leaves a watch for that session.
    std::optional<zklock::stat> exists(const std::string& path, std::optional<session_id> watcher = {});
    /// no_node, or the data and stat.
    boost::system::error_code get_data(const std::string& path, std::string& data, zklock::stat& st,
                                       std::optional<session_id> watcher = {});
    /// no_node, or the children's names (sorted, as a std::map holds them: ZooKeeper's order is
    /// unspecified) and the parent's stat.
    boost::system::error_code get_children(const std::string& path, std::vector<std::string>& names,
                                           zklock::stat& st, std::optional<session_id> watcher = {});

    /// The server forgets `session`'s watches (its connection closed; the session lives on).
    void forget_watches(session_id session);
    /// The watches a client holds, by kind, as it sends them again when it reconnects.
    struct held_watches {
        std::vector<std::string> data;   // set by get_data, or by exists on a node that was there
        std::vector<std::string> exist;  // set by exists on a missing node
        std::vector<std::string> child;  // set by get_children
    };
    /// setWatches: a client that reconnects here with `held`, having seen every transaction up to
    /// `relative_zxid`. A watch whose event it missed fires now (a data watch: deleted if the node is gone,
    /// data_changed if its mzxid is newer; an exist watch: created if the node is there; a child watch:
    /// deleted, or children_changed if its pzxid is newer); every other one is set here.
    void set_watches(session_id session, std::int64_t relative_zxid, const held_watches& held);
    /// The watches fired since the last call, in the order of their transactions.
    std::vector<fired_watch> take_fired();
    /// How many nodes there are, "/" included (what a test checks is left).
    std::size_t size() const noexcept { return nodes_.size(); }
    /// How many ephemeral nodes `session` owns.
    std::size_t ephemerals_of(session_id session) const;

private:
    struct node {
        std::string data;
        zklock::stat st;
        std::set<std::string> children;  // names, not paths
        std::int32_t sequence = 0;       // the next sequential suffix: the creates of children so far
    };
    using node_map = std::map<std::string, node>;

    // One transaction's effects on a working copy; committed (with its events) only if every step held.
    struct txn {
        node_map nodes;
        std::int64_t zxid;
        std::vector<watch_event> events;  // in the order of the operations; fired at the commit
    };
    multi_result apply_create(txn& t, session_id session, const op::create& request) const;
    boost::system::error_code apply_remove(txn& t, const op::remove& request) const;
    multi_result apply_set(txn& t, const op::set_data& request) const;
    boost::system::error_code apply_check(txn& t, const op::check& request) const;
    // The node a write at `version` may touch: bad_arguments, no_node or bad_version otherwise (the checks
    // that remove, set_data and check share, in the server's order).
    static boost::system::error_code find_versioned(node_map& nodes, const std::string& path, int version,
                                                    node_map::iterator& found);
    // Every write takes the next zxid, applied or refused.
    txn begin() { return txn{nodes_, ++zxid_, {}}; }
    void commit(txn&& t);
    void fire(const watch_event& e);

    node_map nodes_;
    std::int64_t zxid_ = 0;
    std::int64_t now_ms_ = 0;
    std::map<std::string, std::set<session_id>> data_watches_;
    std::map<std::string, std::set<session_id>> child_watches_;
    std::vector<fired_watch> fired_;
};

}  // namespace zklock::testing::simulation
