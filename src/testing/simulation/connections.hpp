// The model ensemble's client connections (issue 50): each session talks to one server at a time over a
// connection that keeps its order, and loses what is on it when it breaks. Pure, like replicas: the
// simulation chooses when a server takes a request, when a follower applies, when a message is read and
// when a connection drops.
//
// What it follows of ZooKeeper 3.8:
// - one connection, one order: the answers and the watches' events go out in the order the server made
//   them, and the client reads them in that order; a watch's event goes out when the client's server
//   applies the transaction that fires it, before the answer to the write that made it;
// - a write goes to the leader, which applies it at once (replicas), and is answered once the client's own
//   server has applied it; a read is answered from the client's server, once everything the session sent
//   before it is answered (the server keeps a session's order); a sync is answered once the client's
//   server has applied everything the leader had committed when it took the sync;
// - every answer carries the server's last applied zxid, and the client keeps the newest it read: a server
//   behind that refuses the client's connection (a client never sees time go back);
// - a broken connection loses the messages not yet read: a write the server applied stays applied while
//   its answer is lost (the client cannot tell), and the server forgets the connection's watches; the
//   client keeps its own (set when a read's answer is read, gone when their event is) and sends them again
//   when it reconnects (setWatches, relative to the last zxid it saw), so that it misses no event.
// Not modelled yet: the session's expiry (session_table), elections.
#pragma once

#include "replicas.hpp"

#include <deque>
#include <map>
#include <variant>

namespace zklock::testing::simulation {

/// The reads and the sync, as a client sends them; the writes are zklock's op::create, op::remove,
/// op::set_data, and a multi of them.
struct exists_request {
    std::string path;
    bool watch = false;
};
struct get_data_request {
    std::string path;
    bool watch = false;
};
struct get_children_request {
    std::string path;
    bool watch = false;
};
struct sync_request {
    std::string path;
};
struct multi_request {
    std::vector<multi_op> ops;
};
using request = std::variant<op::create, op::remove, op::set_data, multi_request, exists_request, get_data_request,
                             get_children_request, sync_request>;

/// A server's answer to one request, as the client reads it.
struct answer {
    std::uint64_t id = 0;  ///< the request's, as connections::send returned it
    boost::system::error_code ec;
    std::int64_t zxid = 0;  ///< the server's last applied zxid when it answered (the reply header's)
    /// A create's or set_data's result (one), or a multi's (one per operation).
    std::vector<multi_result> results;
    std::optional<zklock::stat> st;  ///< exists (none: no node), get_data, get_children
    std::string data;
    std::vector<std::string> children;
};

/// What a client reads next on its connection.
using message = std::variant<answer, watch_event>;

/// A request lost with its connection. `applied`: the server applied the write and its answer was lost,
/// so the client cannot tell whether it happened.
struct lost_request {
    std::uint64_t id = 0;
    bool applied = false;
};

class connections {
public:
    explicit connections(replicas& servers) : servers_(servers) {}

    /// Opens `session`'s connection to `server`, and sends the watches it holds again. False (refused)
    /// when that server has applied less than the session has seen, or the session is connected already.
    bool connect(session_id session, server_index server);
    /// The server `session` is connected to, if it is.
    std::optional<server_index> server_of(session_id session) const;
    /// Queues `r` on `session`'s connection, which must be open; returns its id.
    std::uint64_t send(session_id session, request r);
    /// `session`'s server takes its next request not yet taken. False if there is none, or it is a read
    /// behind a request not yet answered.
    bool serve(session_id session);
    /// `server` applies the leader's transactions up to `zxid` (all when unset): the events of the watches
    /// that fire there, and the answers that waited for it, go out to the sessions connected there.
    void apply(server_index server, std::optional<std::int64_t> zxid = {});
    /// The next message on `session`'s connection, if one has gone out.
    std::optional<message> receive(session_id session);
    /// Whether `session` has sent a request its server has not taken yet (serve may still wait: a read
    /// behind an unanswered request).
    bool has_unserved(session_id session) const;
    /// Whether a message has gone out to `session` and is not read yet.
    bool has_message(session_id session) const;
    /// The connection breaks: every request not yet answered, and every message not yet read, is lost.
    std::vector<lost_request> drop(session_id session);
    /// The newest zxid `session` has read in an answer.
    std::int64_t last_seen(session_id session) const;
    /// The watches `session` holds, as it would send them again.
    const data_tree::held_watches& watches(session_id session) const;

private:
    struct pending {
        std::uint64_t id;
        request r;
        bool served = false;
        std::int64_t needs = 0;  // the zxid its server must have applied before it is answered
        answer a;
    };
    struct outgoing {
        message m;
        bool applied_write = false;  // a write's answer: lost, the write stays
    };
    struct client {
        std::optional<server_index> server;
        std::deque<pending> requests;  // sent and not yet answered, in order
        std::deque<outgoing> out;      // gone out and not yet read
        std::int64_t last_seen = 0;
        data_tree::held_watches watches;
        std::map<std::uint64_t, request> watching;  // reads that set a watch once their answer is read
    };
    client& at(session_id session);
    static bool is_write(const request& r);
    answer read(data_tree& tree, session_id session, const request& r) const;
    /// The answers at the front of `c`'s requests whose server has applied what they wait for go out.
    void answer_ready(client& c);
    /// The events of the watches that fired on `server` go out, then the answers that waited for it.
    void harvest(server_index server);
    void hold_watch(client& c, const request& r, const answer& a);
    void drop_watch(client& c, const watch_event& e);

    replicas& servers_;
    std::map<session_id, client> clients_;
    std::uint64_t next_id_ = 1;
};

}  // namespace zklock::testing::simulation
