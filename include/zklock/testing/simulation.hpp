// A model ZooKeeper in virtual time, beneath the library's real sessions and recipes (issue 50).
#pragma once

#include <zklock/session.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace zklock::testing::simulation {

struct model_state;

/// What the model ensemble is made of.
struct model_options {
    /// The servers (at least 1); server 0 leads for good (no elections yet). Sessions connect to server 0.
    std::size_t servers = 1;
    /// ZooKeeper's tickTime: a session is given between 2 and 20 ticks of timeout, and expires in tick
    /// buckets, as the leader's ExpiryQueue does.
    std::chrono::milliseconds tick{200};
    /// Unset: every turn serves every request sent, applies every transaction everywhere and reads every
    /// message out, in the sessions' order, with no time passing (one order, the same every run). Set: the
    /// schedule is drawn from this seed, one step at a time: which session's request its server takes next,
    /// which follower applies the next transaction, which client reads its next message, which server a
    /// client connects to, and how much virtual time passes before the next step. The same seed, with the
    /// same program, gives the same schedule.
    std::optional<std::uint64_t> seed;
    /// With a seed: the longest virtual time between two steps (each draws 0 to this many ms).
    std::chrono::milliseconds max_step{3};
    /// With a seed: at each step, one chance in this many that a connected session's connection breaks
    /// (0: never), as drop_connection does.
    unsigned drop_one_in = 0;
    /// With a seed: at each step, one chance in this many that a connected client is cut off from every
    /// server for a drawn time up to max_cut_off (0: never): its connection breaks, it cannot reconnect
    /// until the time is up, and the leader expires its session if that is longer than the timeout (a
    /// partition, or a process paused).
    unsigned cut_off_one_in = 0;
    /// With a seed: the longest a client is cut off.
    std::chrono::milliseconds max_cut_off{3'000};
    /// With a seed: the drawn faults (drops and cut-offs, numbered from 0 in the order drawn, as the trace's
    /// "fault N" lines say) not to apply. The draws are made all the same, so the rest of the schedule is
    /// the seed's until what was skipped changes it: a failing seed's schedule shrinks by skipping the
    /// faults it does not need (scripts/simulate.sh does).
    std::set<std::size_t> skip_faults;
    /// Told each event of the model as it happens, one line each ("12 serve 2", "12 apply 1 zxid 9", "15 read
    /// 3", "15 connect 2 server 1", "20 fault 0", "20 drop 1", "40 expire 3", "41 learnt expired 3": the virtual time in
    /// ms since the model was made, the event, the session's id), inside the event: a request made there
    /// meets the client at that moment ("learnt expired": the client knows, the session not yet). The same
    /// seed and program give the same lines, byte for byte.
    std::function<void(const std::string&)> trace;
    /// Told the id of each session the leader expires because its timeout ran out (not model::expire's),
    /// when the leader decides it, before the session's ephemeral nodes go: where a test checks that the
    /// session's holders were told of their loss first (the loss clock's promise, docs/loss-and-fencing.md).
    /// It must not call the model.
    std::function<void(std::int64_t)> on_expiry;
};

/// A model ZooKeeper ensemble for a whole test on one thread, in virtual time: sessions made by
/// make_session run the library's real code (the session's in-flight table, keepalive and loss clock, and
/// every recipe above it) over a simulated client that talks to the model instead of a server: no thread,
/// no socket, no process. The model follows ZooKeeper 3.8's rules as docs/DESIGN.md lists them (sequential
/// names, ephemeral owners, one-shot watches in transaction order, multi, sync, session expiry by the
/// leader), each checked against a real server by simulation_conformance_tests.
///
/// Needs a virtual_time on the thread that runs `io` (construct it first), and runs there: run `io` with
/// virtual_time::run_until or run_for. Without a seed (model_options::seed), a request is served, and its
/// answer read, in the turn after it is sent, in the order the sessions sent them, and virtual time does
/// not move meanwhile; with one, the schedule is drawn from the seed.
///
/// Thread-safety: none; use it, and its sessions, on the thread that runs `io`.
class model {
public:
    /// An ensemble holding "/" alone, on `io`, which must outlive the model and its sessions.
    explicit model(boost::asio::io_context& io, model_options options = {});
    ~model();
    model(const model&) = delete;
    model& operator=(const model&) = delete;

    /// A session whose client talks to this model: connect it and use it as any other. `config.hosts`
    /// is not used (it may stay empty).
    zklock::session make_session(session_config config = {});

    /// Breaks `s`'s connection now, as a network fault would: what the server applied stays applied,
    /// the answers not yet read are lost (their requests fail with connection_loss), and the client
    /// reconnects in the next turn, sending its watches again.
    void drop_connection(const zklock::session& s);
    /// The leader expires `s`'s session now, as if it had not heard from it in time: its ephemeral nodes
    /// go, its connection is closed, and its client learns it when it reconnects (session_expired).
    void expire(const zklock::session& s);

    /// Cuts `s`'s client off from every server for `d` (a partition, or the process paused): its connection
    /// breaks now and it reconnects only after `d`; the leader expires the session if `d` runs past its
    /// timeout. Nothing happens if `s` is not connected.
    void cut_off(const zklock::session& s, std::chrono::milliseconds d);

    /// Whether `path` exists on the leader.
    bool exists(const std::string& path) const;
    /// The children of `path` on the leader, sorted by name (none if it does not exist).
    std::vector<std::string> children(const std::string& path) const;
    /// The number of sessions alive on the leader (not closed, not expired).
    std::size_t live_sessions() const;
    /// The number of ephemeral nodes the session `id` (zklock::session::id()) owns on the leader:
    /// what it would leave behind if it stopped now (a drain that succeeded leaves none).
    std::size_t ephemerals_of(std::int64_t id) const;

private:
    std::shared_ptr<model_state> state_;
};

}  // namespace zklock::testing::simulation
