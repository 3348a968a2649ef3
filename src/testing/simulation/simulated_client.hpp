// The simulated client beneath a session (session/client_port.hpp) and the model it talks to: the state
// behind testing::simulation::model. One turn of the model (progress) serves every request sent, applies
// every transaction on every server, and reads every message out, in the sessions' order; it runs on the
// sessions' executor, posted whenever something is sent, so that no answer is ever read inside a call.
#pragma once

#include "../../session/session_impl.hpp"
#include "connections.hpp"
#include "session_table.hpp"

#include <zklock/detail/timer.hpp>
#include <zklock/testing/simulation.hpp>

#include <map>
#include <optional>
#include <random>
#include <memory>
#include <vector>

namespace zklock::testing::simulation {

class simulated_client;

/// The state behind a model, shared with its clients.
struct model_state : std::enable_shared_from_this<model_state> {
    model_state(boost::asio::io_context& io, model_options o);

    boost::asio::io_context& io;
    model_options options;
    replicas servers;
    session_table sessions;
    connections wires;
    /// The clients by session id, while their session lives on the model (set when opened).
    std::map<session_id, simulated_client*> clients;
    /// The clients that have not yet opened a session, or reconnect: each is handed its turn in progress.
    std::vector<simulated_client*> all;
    bool progress_posted = false;
    /// The seeded schedule's draws (model_options::seed), and the timer of its next step.
    std::optional<std::mt19937_64> rng;
    zklock::detail::timer step_timer;
    /// The virtual time the model was made at, in ms (what trace lines count from).
    std::int64_t start_ms = 0;
    /// Tells model_options::trace `what`, at the time now.
    void note(const std::string& what) const
    {
        if (options.trace) options.trace(std::to_string(now_ms() - start_ms) + " " + what);
    }
    /// A number in [0, n) from the seed.
    std::uint64_t draw(std::uint64_t n) { return n <= 1 ? 0 : (*rng)() % n; }
    /// With a seed: one step of the schedule; false if nothing could happen.
    bool step();
    zklock::detail::timer expiry_timer;
    bool expiry_armed = false;

    /// The model's time: zklock::clock's (virtual on this thread), in ms.
    static std::int64_t now_ms();
    /// `fn` for each client, on a copy of `all` (fn may add or remove clients), skipping those gone meanwhile.
    void for_each_client(const std::function<void(simulated_client&)>& fn);
    /// Every server applies every transaction the leader has.
    void apply_everywhere();
    /// A client with an open connection, drawn from the seed (null if none).
    simulated_client* draw_connected();
    /// A drawn fault is about to happen: numbers it, says so in the trace, and whether to apply it
    /// (model_options::skip_faults). Every draw is made either way, so that the schedule stays the seed's.
    bool fault_applies();
    std::size_t faults_drawn = 0;
    /// Runs progress() in a later turn (once, however many ask before it runs).
    void post_progress();
    /// One turn: sessions' requests served, transactions applied, messages read, expiries done.
    void progress();
    /// Ends `id` on the leader (closed or expired): one transaction, its ephemeral nodes go.
    void end_session(session_id id);
    /// The leader has expired `id` (it is gone from `sessions`): its session ends in the tree, and its client's
    /// connection is closed (the client learns of the expiry when it reconnects).
    void end_expired(session_id id);
    /// The leader expires the sessions due now; then waits for the next bucket.
    void expire_due();
    void arm_expiry();
};

/// The client of one session, talking to the model (see model::make_session).
class simulated_client final : public zklock::detail::client_port {
public:
    simulated_client(std::shared_ptr<model_state> m, zklock::detail::session_impl& s);
    ~simulated_client() override;

    error_code submit(zklock::detail::client_call call, zklock::detail::request_base* r) override;
    void forget_watch(const std::string& path, zklock::detail::watch_kind kind, std::uint64_t id) override;
    session_state state() const override;
    void open(std::string hosts) override;
    bool is_open() const override { return open_; }
    void close(std::function<void(bool)> then) override;
    std::pair<std::int64_t, std::string> credentials() const override;
    std::chrono::milliseconds negotiated_timeout() const override { return negotiated_; }
    void drop() override;

    // Called by the model.
    /// Connects (or reconnects) if the session waits to; sends what waited for the connection.
    void take_turn();
    /// Reads every message out on the connection.
    void read_messages();
    /// Reads the next message out, if any (false: none).
    bool read_one();
    /// The connection broke (a fault, or the leader ended the session): what was out fails.
    void connection_lost();
    /// The leader expired the session: the client learns it when it reconnects.
    void session_expired_on_server() { expired_on_server_ = true; }
    session_id id() const noexcept { return id_; }
    /// The client is cut off from every server for `d`: the connection breaks, and it reconnects only after.
    void cut_off(std::chrono::milliseconds d);

private:
    struct outstanding {
        zklock::detail::request_base* r;
        zklock::detail::client_call::verb what;
        std::uint64_t watch;
        std::string path;
    };
    /// Sends `call` for `r` on the open connection.
    void send(zklock::detail::client_call call, zklock::detail::request_base* r);
    zklock::detail::client_answer convert(const outstanding& o, answer&& a) const;
    void fire(const watch_event& e);
    /// Answers `r` with `ec` (a request the connection or the close took).
    static void fail(zklock::detail::request_base* r, error_code ec);
    /// The client pings while connected, as the C client does a third of the timeout after its last send.
    void ping_later();

    std::shared_ptr<model_state> m_;
    zklock::detail::session_impl& s_;
    /// A handle is made (as the C client's zookeeper_init returns one: from the turn after open() on, until
    /// close()); requests made before are refused by the session, as with the C client (no handle yet).
    bool open_ = false;
    bool opening_ = false;  // open() asked for one, the next turn makes it
    bool connected_ = false;
    bool expired_on_server_ = false;
    bool told_expired_ = false;
    session_id id_ = 0;
    std::chrono::milliseconds negotiated_{0};
    std::map<std::uint64_t, outstanding> out_;  // by the model's request id
    /// Requests made while disconnected: sent once connected again (the C client's to_send queue).
    std::vector<std::pair<zklock::detail::client_call, zklock::detail::request_base*>> waiting_;
    /// The watches the client holds, as the C client's watcher tables: (kind, path) -> the session's ids.
    std::multimap<std::pair<zklock::detail::watch_kind, std::string>, std::uint64_t> watches_;
    zklock::detail::timer ping_timer_;
    /// While it runs, the client is cut off (cut_off): no connection.
    zklock::detail::timer cut_off_timer_;
    bool cut_off_ = false;
};

}  // namespace zklock::testing::simulation
