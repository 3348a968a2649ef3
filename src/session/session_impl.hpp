// The session's shared state: the C client's handle, the pump that drives it from the executor, the
// requests in flight and the watches. Internal; never includes <zookeeper/zookeeper.h>.
#pragma once

#include "client_port.hpp"

#include <zklock/detail/timer.hpp>
#include <zklock/session.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/system_executor.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <memory>
#include <unordered_map>
#include <vector>

#include <sys/types.h>

struct _zhandle;
struct Stat;

namespace zklock::detail {

/// Where log lines of one session go; shared with the helper threads that open and close the handle.
struct log_target {
    log_sink sink;
    log_level threshold = log_level::warning;
    void write(log_level level, std::string_view text) const
    {
        if (sink && level <= threshold) sink(level, text);
    }
};

/// What the helper threads (which open and close the handle) may reach of the session: its executor, for
/// as long as the session wants to hear from them. They never hold the session itself, so that they never
/// touch an io_context that is being destroyed.
class helper_link {
public:
    explicit helper_link(asio::any_io_executor e) : ex_(std::move(e)) {}
    /// Posts `fn` to the session's executor; false (and `fn` dropped) once the session let go.
    template <class Fn>
    bool post(Fn&& fn)
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (detached_) return false;
        asio::post(ex_, std::forward<Fn>(fn));
        return true;
    }
    /// Whether the session let go (detach).
    bool detached()
    {
        std::lock_guard<std::mutex> lock(mu_);
        return detached_;
    }
    /// The session lets go: later posts are dropped.
    void detach()
    {
        std::lock_guard<std::mutex> lock(mu_);
        detached_ = true;
        // Let go of the executor here, on the session's side: a helper thread may hold the link until
        // after the io_context is gone, and a strand must not be destroyed after its io_context.
        ex_ = asio::any_io_executor{};
    }

private:
    std::mutex mu_;
    bool detached_ = false;
    asio::any_io_executor ex_;
};

/// One request handed to the C client. Its completion frees it; the session keeps it in a set so that
/// closing can answer the waiting handler at once and leave the C completion nothing but the free.
class watch_state;
class request_base {
public:
    virtual ~request_base() = default;
    /// Completes the handler (if still there) with `ec` and no result.
    virtual void fail(error_code ec) = 0;
    /// Completes the handler (if still there) with the server's answer, converted to its arguments.
    virtual void answer(client_answer&& a) = 0;
    /// Connects the handler's cancellation slot to the request, by id (once it is in the in-flight table).
    virtual void bind_cancellation() = 0;
    std::shared_ptr<session_impl> owner;  ///< null once the session let go of it (closed)
    std::uint64_t id = 0;                 ///< key in the session's in-flight table
    const char* kind = "";                ///< "create", "get_data", ... (for fault injection)
    /// When it was handed to the C client: the server touched the session no earlier than this.
    clock::time_point sent_at{};
    std::shared_ptr<watch_state> watch;  ///< the watch this read may arm
};

/// The state behind a zklock::watch.
class watch_state {
public:
    enum class phase { registering, armed, fired, failed, dropped };
    std::weak_ptr<session_impl> session;
    std::uint64_t id = 0;
    std::string path;
    watch_kind kind = watch_kind::data;
    phase at = phase::registering;
    watch_event event{};
    error_code error;
    handler<watch_event> waiter;
    std::uint64_t waiter_seq = 0;  ///< tells a waiter's cancellation slot from a later waiter's
};

class session_impl : public std::enable_shared_from_this<session_impl> {
public:
    using executor_type = asio::any_io_executor;

    /// Makes the client beneath a session (the C client's unless a simulation gives another).
    using port_maker = std::function<std::unique_ptr<client_port>(session_impl&)>;
    session_impl(executor_type ex, session_config config, const port_maker& make_port = {});
    ~session_impl();

    executor_type ex;
    session_config cfg;
    std::shared_ptr<const log_target> log;
    session_state state = session_state::idle;
    std::int64_t id = 0;
    std::chrono::milliseconds negotiated{0};
    /// Counts the connections made: what a request's answer says about the order of the requests sent
    /// beside it holds within one connection (core/sequence_proof.hpp), and a watch set at one count and
    /// fired at another crossed a reconnect (contender.cpp).
    std::uint64_t connections = 0;
    /// The counters as they run. Its by_label entries are the recipes' (each lock_meter points into one,
    /// and none is ever erased); snapshot() adds what is computed when asked.
    session_stats stats;
    /// Adds the recipes' gauges (holders, waiters, contenders) to a snapshot; set by the recipes'
    /// registry when it is made (the session knows nothing of locks).
    std::function<void(session_stats&)> add_lock_gauges;
    /// A consistent copy of the statistics, with the state, the requests by kind, the gauges and the
    /// totals over the labels filled in (on the executor).
    session_stats snapshot() const;
    /// One slot for the layer above (the lock recipes keep their per-session state here, recipes/
    /// registry.hpp): the session knows nothing about locks. Touched only on the executor.
    std::shared_ptr<void> extension;

    // The operations (called on the executor).
    void connect(handler<> h);
    void wait_state(session_state from, handler<session_state> h);
    void close(error_code why = zklock::error::session_closed);
    void close_and_wait(handler<> h);
    /// Once a close has finished: whether nothing of the session is left on the server (the server ended
    /// it at our close, or it never opened). False when the close could not reach the server: its
    /// ephemeral nodes stay until it expires.
    bool close_confirmed() const noexcept { return close_confirmed_; }
    /// Why the session cannot take a request now (empty if it can); with a path, also whether the
    /// server would accept that path.
    error_code refusal() const;
    error_code refusal(std::string_view path, bool sequential = false) const;
    /// Why a lock recipe cannot take a waiter for `path` now: refusal(path), except while a renewed
    /// session's handle is being made (the waiter then waits for the new session's `connected`).
    error_code refusal_to_wait(std::string_view path) const;

    /// The public handle is gone: helper threads must not post to the executor any more.
    /// Close waiters are answered now: the helper can no longer tell them when the server confirmed.
    void detach_helpers()
    {
        link_->detach();
        if (!close_finished_ && is_final(state)) on_handle_closed(false);
    }
    void create(op::create request, handler<std::string, stat> h);
    /// create, for a caller that can do without the answer's stat: the creates made one after another in
    /// one turn of the loop go as one multi, one transaction for all (see creates_). A multi answers with
    /// paths alone, so each stat is then read right behind it from `predicted`, the path the caller
    /// expects the node to get; it is empty (czxid 0) when the node got another path, or none was
    /// predicted. A create left alone in its turn goes as create() sends it, with its stat.
    void create_batched(op::create request, std::string predicted, handler<std::string, stat> h);
    /// create, for a caller that expects its node to queue behind others' (its listing follows it), and so
    /// can wait for the stat: with the deletes held in its turn it goes in their multi, one transaction
    /// (a contended lock's release and its next waiter's node), and is answered without a stat (czxid 0);
    /// with none held it goes as create() sends it.
    void create_queued(op::create request, handler<std::string, stat> h);
    /// `own`: `h` is the recipes' own, called at once (not posted) when the delete goes in a multi with
    /// creates, before theirs: what it tells must be known before the next answer's handler runs.
    void remove(std::string path, int version, handler<> h, bool own = false);
    /// Makes the server this session talks to catch up with the leader before it answers later reads.
    void sync(std::string path, handler<> h);
    void exists(std::string path, watch* w, handler<std::optional<stat>> h);
    void get_data(std::string path, watch* w, handler<std::string, stat> h);
    void get_children(std::string path, watch* w, handler<std::vector<std::string>, stat> h);
    void set_data(std::string path, std::string data, int version, handler<stat> h);
    void multi(std::vector<multi_op> ops, handler<std::vector<multi_result>> h);
    /// Set when the C client refused, synchronously, a request just made (nothing was sent; its handler
    /// is answered later, never inside the call). A caller that must tell "never sent" from "answer lost"
    /// (a guarded write's outcome_unknown) clears it, makes the request, and reads it.
    bool refused_at_submit = false;
    /// Sends the deletes that remove() holds back (see removes_). Done before any other request, so that
    /// the session's order is kept, and at the end of the turn that queued them.
    void send_removes();
    /// Sends the creates that create_batched() holds back: at the end of their turn, or before any other
    /// request or a delete, which they precede.
    void send_creates();

    /// The server's id and password of this session (empty password before the first connect), for
    /// testing::kill_session.
    std::pair<std::int64_t, std::string> credentials() const;

    /// For the recipes: `fn` runs (posted, never inside the C client) after every state change.
    std::uint64_t subscribe(std::function<void(session_state)> fn);
    void unsubscribe(std::uint64_t token);
    /// The session timeout: the negotiated one once connected, else the one asked for.
    std::chrono::milliseconds timeout() const;
    /// How long after the send time of the newest answered request a lock holder is told that ownership
    /// is uncertain (see session_config::loss_grace and core/session_timing.hpp).
    std::chrono::milliseconds loss_grace() const;
    /// The send time of the newest request the server answered: the server touched the session after it,
    /// so it cannot expire the session before this plus the session timeout (less the forwarding delay).
    clock::time_point last_answered_send() const noexcept { return last_answered_send_; }
    /// While retained (by lock recipes with a contender), a cheap request keeps the session's touch fresh:
    /// one whenever no request has been answered for keepalive_interval().
    void retain_keepalive();
    void release_keepalive();
    std::chrono::milliseconds keepalive_interval() const;
    /// How long a one look (try_acquire, a zero timeout) may wait for ZooKeeper's answers.
    std::chrono::milliseconds one_look_limit() const;

    /// Fault injection for tests (testing/faults.hpp); on the executor.
    enum class fault_mode {
        drop_after_send,     ///< the connection drops once the request is sent
        lose_answer,         ///< the connection drops when the answer arrives, and the answer is lost
        deliver_answer_late  ///< the connection drops when the answer arrives, delivered once noticed
    };
    struct fault_plan {
        std::string kind;
        fault_mode mode;
        std::function<void()> then;
    };
    void plan_fault(fault_plan f) { faults_.push_back(std::move(f)); }
    /// Breaks the client's connection (client_port::drop: it notices and reconnects, as after a network
    /// fault).
    void drop_connection();
    /// What a planned fault does to the answer to `r` (drop_after_send: nothing), the connection dropped.
    fault_mode answer_fault(const request_base& r);
    /// Runs `deliver` (which completes an answer a fault held) once the session has noticed the break,
    /// after the answers held before it; at once if it has.
    void hold_answer(std::function<void()> deliver);

    // Called from the C callbacks (inside zookeeper_process, on the executor).
    /// The client's state changed (connected: its id and negotiated timeout are known).
    void on_session_event(session_state s);
    /// The client reports that watch `id` fired (an id no longer in the table: ignored).
    void on_watch_fired(std::uint64_t id, watch_event_type type, const char* path);
    /// Request `r` was answered with `ec` (see answered()).
    void finished(request_base* r, error_code ec);
    /// A cancellation signal of the types `type` aimed at request `id`, if it is still in flight: answers
    /// its handler now with operation_aborted where core/effects.hpp says so (a read's watch is dropped).
    void cancel_request(std::uint64_t id, asio::cancellation_type type);

    // For zklock::watch.
    /// A read's answer came: its watch is armed, or (the read failed) dropped.
    void settle_watch(const std::shared_ptr<watch_state>& w, bool armed);
    void wait_watch(const std::shared_ptr<watch_state>& w, handler<watch_event> h);
    void drop_watch(const std::shared_ptr<watch_state>& w);

    /// Completes `h` with `ec` and `args` on its executor, never inline.
    template <class... Args>
    void post_completion(handler<Args...> h, error_code ec, Args... args);

    /// A drain or a close is under way: an expiry ends the session whatever session_config::on_expiry says.
    bool renewal_stopped = false;
    /// From renew() until the new handle is made (the port calls handle_made()).
    bool opening_renewed = false;
    /// The port made the handle that open() asked for (or found it could not): a renewal's opening is over.
    void handle_made() noexcept { opening_renewed = false; }

    /// The session's id as ZooKeeper's own logs print it ("0x...").
    std::string id_text() const;

    /// Whether an expiry now would open a new session (session_config::on_expiry).
    bool renews_on_expiry() const;

private:
    friend class c_port;
    /// The client beneath (client_port.hpp): the C client's, made with the session.
    std::unique_ptr<client_port> port_;
    void renew();
    /// `then(server_ended_it)`: whether the server ended the session at our close (see close_handle).
    void let_go_of_handle(error_code why, std::function<void(bool)> then);
    void on_handle_closed(bool server_ended_it);
    void pump();
    void kick();
    void process(int events);
    bool leave_if_unrecoverable();
    /// After a zoo_a* or zoo_set_servers call: the C client may have closed its socket, silently (pump.cpp).
    void notice_silent_close();
    /// Makes the C client fail and forget the requests it holds from a connection it closed silently.
    bool clear_c_queue();
    /// Set by a silent close whose requests clear_c_queue could not clear: the next connection is
    /// dropped once associating, so that the C client clears them then (pump.cpp).
    bool c_queue_stale_ = false;
    void sync_socket(int fd);
    void close_socket();
    /// Closes like close_socket, but hands over our dup of a connected socket instead of closing it
    /// (-1 if not connected): close_handle reads it to the end (see there).
    int release_socket();
    void set_state(session_state s);
    void enter_final(session_state s, error_code why);
    void track(request_base* r);
    /// Prepares `w` for a read that may arm it, as a watch of `kind` on `path`.
    std::shared_ptr<watch_state> prepare_watch(watch* w, const std::string& path, watch_kind kind);
    /// Hands `r` to the client (port_): tracked if sent; if refused, failed (its handler later) with why.
    void submit(request_base* r, client_call call);
    /// The skeleton of every typed operation (defined in operations.cpp, its only user): completes `h` with
    /// `refused` if that is set; else makes a request of `kind` that answers `h`, prepares the watch `w`
    /// (if not null) for a read, and submits `call`.
    template <class... Args>
    void start_request(const char* kind, error_code refused, handler<Args...> h, client_call call, watch* w = nullptr);

    _zhandle* zh_ = nullptr;
    asio::posix::stream_descriptor sock_;  // owns a dup() of the C client's socket, never its own fd
    ino_t sock_ino_ = 0;
    /// The C client's descriptor number, when it was connected at the last look (else -1); see sync_socket.
    int connected_fd_ = -1;
    std::uint64_t sock_gen_ = 0;
    bool read_armed_ = false, write_armed_ = false, kick_posted_ = false;
    /// The requests of one turn of the loop leave in one TCP segment (see cork()).
    bool corked_ = false;
    void cork();
    void uncork();
    /// Reads every answer already in the socket, up to a bound, before going back to the reactor.
    void drain_answers();
    // The C client's own timer (its pings, its connection timeouts) runs in real time, as the client
    // does; the session's timers (connect, keepalive) and its touch read zklock::clock, which a
    // simulation may run in virtual time.
    asio::steady_timer timer_;
    bool timer_armed_ = false;
    detail::timer connect_timer_;
    handler<> connect_handler_;

    // Deletes made one after another in one turn of the loop (a release of many locks, a drain) go as
    // one multi: one transaction for the server instead of one each. So do the deletes made while the
    // newest batch is out: they go when it is answered (or with the next other request, which they
    // precede), so that a burst of releases costs the server a transaction per round trip, not one per
    // lock. A multi fails as a whole, so when it fails each delete is sent again alone and gets its own
    // answer. A delete whose handler can be cancelled goes alone at once.
    struct held_remove {
        std::string path;
        int version = -1;
        handler<> h;
        bool own = false;  // remove(own): answered at once in a multi with creates (see create_batch)
    };
    std::vector<held_remove> removes_;
    static constexpr std::size_t max_writes_in_one_multi = 1000;  // far below jute.maxbuffer (1 MiB)
    /// The newest request send_removes made (0: none); the deletes are out while it is in flight.
    std::uint64_t newest_removes_ = 0;
    bool removes_out() const { return newest_removes_ != 0 && inflight_.count(newest_removes_) != 0; }
    void remove_now(std::string path, int version, handler<> h);
    // The creates of one turn whose callers need no stat (the lock nodes that a session's independent
    // locks make at once) go as one multi, as the deletes do, behind the deletes held before them (a
    // dropped guard's delete and the next create); a delete sends the creates held before it first, so
    // the session's order is kept. A multi fails as a whole: then each write is sent again alone.
    struct held_create {
        op::create request;
        std::string predicted;
        handler<std::string, stat> h;
        bool queued = false;  // create_queued: with the deletes ahead even with nothing predicted
    };
    std::vector<held_create> creates_;
    std::vector<held_remove> removes_ahead_;  // deletes held before the first of creates_: they go first, with them
    /// Holds a create for the turn's multi, taking the deletes held before it along (create_batched, create_queued).
    void hold_create(held_create c);
    struct create_batch;
    /// Whether a multi of held writes failed for one write's own error: then each is sent again alone.
    bool failed_for_one_write(error_code ec) const;
    void multi_as(const char* kind, std::vector<multi_op> ops, handler<std::vector<multi_result>> h);

    std::unordered_map<std::uint64_t, request_base*> inflight_;
    std::uint64_t next_request_ = 1;
    std::unordered_map<std::uint64_t, std::shared_ptr<watch_state>> watches_;
    std::uint64_t next_watch_id_ = 1;

    struct state_waiter {
        std::uint64_t id;
        session_state from;
        handler<session_state> h;
    };
    std::vector<state_waiter> state_waiters_;
    std::uint64_t next_state_waiter_ = 1;
    std::map<std::uint64_t, std::function<void(session_state)>> listeners_;
    std::uint64_t next_listener_ = 1;

    clock::time_point last_answered_send_{};
    std::chrono::milliseconds grace_warned_for_{0};  // the negotiated timeout a clamped grace was logged for
    void warn_if_grace_clamped();
    std::size_t keepalive_refs_ = 0;
    bool keepalive_in_flight_ = false;
    detail::timer keepalive_timer_;
    /// A server that accepts the TCP connection but never answers the handshake (frozen, overloaded)
    /// would hold the C client for 2/3 of the session timeout: after this long it moves on.
    asio::steady_timer handshake_timer_;
    void watch_handshake();
    void keepalive_tick();
    // Following the host names and the ensemble (names.cpp). The names are resolved off the loop when the
    // session starts, and again every follow_names_every while it is disconnected; with follow_ensemble,
    // /zookeeper/config is read (and watched) at every connect, and its members replace the host list. A
    // changed set of addresses goes to the C client with zoo_set_servers (the chroot stays), and the
    // session is kept if a server that knows it answers within its timeout.
    static constexpr std::chrono::milliseconds follow_names_every{1'000};
    asio::steady_timer resolve_timer_;
    std::string followed_hosts_;  // the names followed: the host list's, or the ensemble's members
    std::string addresses_;       // what the C client connects to: "ip:port,...", without the chroot
    bool resolving_ = false;
    /// Resolves the names now, and again every follow_names_every for as long as the session is connecting.
    void follow_names();
    void follow_names_after(std::chrono::milliseconds delay);
    /// Resolves `hosts` off the loop; `then(addresses, unresolved names)` runs on the executor.
    void resolve_off_loop(std::string hosts, std::function<void(std::string, std::string)> then);
    /// Hands `addresses` to the C client if they differ from what it has (as a set); `why` is logged.
    void use_addresses(const std::string& addresses, const std::string& unresolved, const std::string& why);
    watch config_watch_;
    bool reading_config_ = false;
    std::uint64_t membership_gen_ = 0;  // the newest membership read; older lookups are dropped
    bool membership_trusted_ = false;
    bool membership_distrust_logged_ = false;
    bool trust_membership(const std::string& addresses, const std::string& connected_to);
    void follow_ensemble();
    void get_config(watch* w, handler<std::string, stat> h);
    std::vector<fault_plan> faults_;
    /// The answers a planned fault holds until the session notices the break, in the order they came: then
    /// they complete before anything the break itself fails, as on a real connection. Not empty: a fault
    /// broke the connection at an answer and the break is not noticed yet, so every answer read meanwhile
    /// is lost as well (answer_fault).
    std::vector<std::function<void()>> held_answers_;
    std::optional<fault_plan> take_fault(const char* kind, bool answered);

    /// Requests by kind, keyed by the kind's string literal (a handful: a linear search costs less than a
    /// map's; two literals of one text from different files are merged by snapshot()).
    std::vector<std::pair<const char*, request_stats>> request_kinds_;
    request_stats& kind_stats(const char* kind);
    /// A request failed here without an answer (its connection or the session ended first): counted once,
    /// as unanswered and under `why` (its C completion later only frees it).
    void count_unanswered(const request_base& r, error_code why);
    std::shared_ptr<helper_link> link_;
    bool close_finished_ = false;
    bool close_confirmed_ = false;  // the server ended the session at our close (see close_confirmed)
    std::map<std::uint64_t, handler<>> close_waiters_;
    std::uint64_t next_close_waiter_ = 1;
    std::optional<asio::any_io_executor> close_work_;  // keeps the io_context running for close waiters
};

template <class... Args>
void session_impl::post_completion(handler<Args...> h, error_code ec, Args... args)
{
    if (!h) return;
    // Posted, never inline: C callbacks call this from inside zookeeper_process, where user code must not
    // run, and cancellation handlers call it from inside their own slot, which must not be cleared there.
    // The slot is cleared on the handler's own executor: that is where its owner emits the signal (a
    // caller's strand, often not the session's), and a slot may only be touched there. Until then `h`
    // keeps work outstanding on that executor (see handler), and lets it go there, after it ran.
    // A handler of a coroutine on this io_context and thread runs here at once, as the dispatch would run
    // it, without the dispatch's wrapping of the call (an allocation per completion).
    auto complete = [h = std::move(h), ec, ... a = std::move(args)]() mutable {
        auto run = [ec](handler<Args...>& hh, Args&&... b) {
            if (auto slot = asio::get_associated_cancellation_slot(hh); slot.is_connected()) slot.clear();
            std::move(hh)(ec, std::move(b)...);
        };
        if (h.runs_inline_here()) return run(h, std::move(a)...);
        // Untracked: once `h` has moved on, nothing here may hold its context's work (its owner may
        // destroy that context as soon as `h` has run, while this copy would still be going away here).
        auto target = asio::prefer(h.executor(), asio::execution::outstanding_work.untracked);
        asio::dispatch(target, [h = std::move(h), run, ... b = std::move(a)]() mutable { run(h, std::move(b)...); });
    };
    // Posted to an io_context's own executor when the session runs on one: through the erased executor a
    // post is two blocks (the erased function, then the operation around it), here it is one.
    if (const auto* io = ex.target<asio::io_context::executor_type>()) asio::post(*io, std::move(complete));
    else asio::post(ex, std::move(complete));
}

/// Completes `h` when there is no session to post through (an empty guard, an unarmed watch): off the
/// caller's stack through the system executor, then onto the handler's own executor. The caller's context
/// is kept busy by `h` itself (see handler), which moves on with it: nothing on the system thread refers
/// to that context after the hand-over (asio::post(system_executor, handler) would keep a tracking
/// executor there until after the handler has run, and a program (or test) that then destroys its
/// io_context at once would race with its release).
template <class... Args>
void complete_without_session(handler<Args...> h, error_code ec, Args... args)
{
    asio::post(asio::system_executor(), [h = std::move(h), ec, ... a = std::move(args)]() mutable {
        auto target = asio::get_associated_executor(h);
        asio::dispatch(target, [h = std::move(h), ec, ... b = std::move(a)]() mutable {
            if (auto slot = asio::get_associated_cancellation_slot(h); slot.is_connected()) slot.clear();
            std::move(h)(ec, std::move(b)...);
        });
    });
}

/// The owner a session writes into its lock nodes unless session_config::owner says otherwise: "host:pid".
std::string default_owner();

/// Held around every call into the C client (see c_call in c_client.hpp).
std::mutex& c_client_mutex();

/// Validates a znode path the way the server would, so a bad path fails fast and clearly.
bool valid_path(std::string_view path, bool allow_sequential_suffix = false) noexcept;
/// error::invalid_path (and why, in `s`'s log) for a lock path too long for the lock's own nodes below it.
error_code lock_path_refusal(const session_impl& s, std::string_view path);
/// s.refusal(path), and error::invalid_path for the root, which is no lock's path or node: for the verbs that
/// read or write a lock's path or node by name (participants, revocation, an election's observers).
error_code below_root_refusal(const session_impl& s, std::string_view path);

}  // namespace zklock::detail
