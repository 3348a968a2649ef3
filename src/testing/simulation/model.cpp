// testing::simulation::model: the model ensemble's state and its turns (simulated_client.hpp).
#include "simulated_client.hpp"

#include <zklock/clock.hpp>

#include <boost/asio/post.hpp>

#include <algorithm>

namespace zklock::testing::simulation {

model_state::model_state(boost::asio::io_context& i, model_options o)
    : io(i), options(o), servers(std::max<std::size_t>(o.servers, 1)),
      sessions(session_limits{o.tick.count(), std::nullopt, std::nullopt}, now_ms()), wires(servers),
      step_timer(i.get_executor()), expiry_timer(i.get_executor())
{
    if (o.seed) rng.emplace(*o.seed);
    start_ms = now_ms();
}

std::int64_t model_state::now_ms()
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(zklock::clock::now().time_since_epoch()).count();
}

void model_state::post_progress()
{
    if (std::exchange(progress_posted, true)) return;
    boost::asio::post(io, [self = shared_from_this()] {
        self->progress_posted = false;
        self->progress();
    });
}

void model_state::progress()
{
    if (rng) {
        // A few steps now (1 to 4, drawn); the next ones in the next turn, or after a drawn pause (one
        // time in four: each timer costs the reactor two system calls), while anything can happen.
        bool any = false;
        for (auto n = draw(4) + 1; n > 0 && step(); --n) any = true;
        arm_expiry();
        if (!any) return;
        const auto pause = draw(4) == 0 ? std::chrono::milliseconds(draw(static_cast<std::uint64_t>(options.max_step.count())) + 1)
                                        : std::chrono::milliseconds(0);
        if (pause.count() == 0) return post_progress();
        progress_posted = true;
        step_timer.expires_after(pause);
        step_timer.async_wait([w = weak_from_this()](error_code ec) {
            auto self = w.lock();
            if (!self || ec) return;
            self->progress_posted = false;
            self->progress();
        });
        return;
    }
    servers.set_time(now_ms());
    for_each_client([](simulated_client& c) { c.take_turn(); });
    // Every server takes every request sent to it, in the sessions' order; the leader's writes are
    // applied on every server; then each client reads what came out on its connection.
    for (auto& [id, c] : clients) {
        if (!wires.server_of(id)) continue;
        while (wires.serve(id)) sessions.touch(id, now_ms());
    }
    apply_everywhere();
    for_each_client([](simulated_client& c) { c.read_messages(); });
    arm_expiry();
}

void model_state::for_each_client(const std::function<void(simulated_client&)>& fn)
{
    // A copy: a client's turn may open or end a session (and a handler may drop a client).
    for (auto* c : std::vector<simulated_client*>(all))
        if (std::find(all.begin(), all.end(), c) != all.end()) fn(*c);
}

void model_state::apply_everywhere()
{
    for (server_index s = 0; s < servers.size(); ++s) wires.apply(s);
}

bool model_state::fault_applies()
{
    const auto k = faults_drawn++;
    note("fault " + std::to_string(k) + (options.skip_faults.contains(k) ? " skipped" : ""));
    return !options.skip_faults.contains(k);
}

simulated_client* model_state::draw_connected()
{
    std::vector<simulated_client*> connected;
    for (auto& [id, c] : clients)
        if (wires.server_of(id)) connected.push_back(c);
    return connected.empty() ? nullptr : connected[draw(connected.size())];
}

bool model_state::step()
{
    servers.set_time(now_ms());
    for_each_client([](simulated_client& c) { c.take_turn(); });
    if (options.drop_one_in != 0 && draw(options.drop_one_in) == 0)
        if (auto* c = draw_connected(); c && fault_applies()) c->drop();
    if (options.cut_off_one_in != 0 && draw(options.cut_off_one_in) == 0)
        if (auto* c = draw_connected()) {
            const auto d = std::chrono::milliseconds(draw(static_cast<std::uint64_t>(options.max_cut_off.count())) + 1);
            if (fault_applies()) c->cut_off(d);
        }
    // What can happen next: a server takes a session's next request, a follower applies the next
    // transaction, a client reads its next message. One of them, drawn; a draw that finds it cannot
    // happen yet (a read behind an unanswered request) draws again among the others.
    enum class kind { serve, apply, read };
    struct candidate {
        kind k;
        session_id session;
        server_index server;
    };
    std::vector<candidate> can;
    for (auto& [id, c] : clients) {
        if (wires.has_unserved(id)) can.push_back({kind::serve, id, 0});
        if (wires.has_message(id)) can.push_back({kind::read, id, 0});
    }
    for (server_index s = 1; s < servers.size(); ++s)
        if (servers.applied(s) < servers.last_zxid()) can.push_back({kind::apply, 0, s});
    while (!can.empty()) {
        const auto i = draw(can.size());
        const auto c = can[i];
        can.erase(can.begin() + static_cast<std::ptrdiff_t>(i));
        switch (c.k) {
        case kind::serve:
            if (!wires.serve(c.session)) continue;
            note("serve " + std::to_string(c.session));
            sessions.touch(c.session, now_ms());
            wires.apply(replicas::leader);  // the leader's answers and events go out as it applies
            return true;
        case kind::apply:
            wires.apply(c.server, servers.applied(c.server) + 1);
            note("apply " + std::to_string(c.server) + " zxid " + std::to_string(servers.applied(c.server)));
            return true;
        case kind::read:
            if (auto it = clients.find(c.session); it != clients.end() && it->second->read_one()) {
                note("read " + std::to_string(c.session));
                return true;
            }
            continue;
        }
    }
    return false;
}

void model_state::end_session(session_id id)
{
    sessions.close(id);
    servers.end_session(id);
    apply_everywhere();
}

void model_state::expire_due()
{
    for (auto id : sessions.expire_due(now_ms())) {
        if (options.on_expiry) options.on_expiry(id);
        end_expired(id);
    }
    post_progress();
}

void model_state::end_expired(session_id id)
{
    note("expire " + std::to_string(id));
    servers.end_session(id);
    if (auto it = clients.find(id); it != clients.end()) {
        it->second->session_expired_on_server();
        // The server closes the expired session's connection; its client finds out as it reconnects.
        if (wires.server_of(id)) {
            wires.drop(id);
            it->second->connection_lost();
        }
    }
}

void model_state::arm_expiry()
{
    if (expiry_armed || sessions.live_count() == 0) return;
    expiry_armed = true;
    expiry_timer.expires_at(zklock::clock::time_point(std::chrono::milliseconds(sessions.next_check_ms())));
    expiry_timer.async_wait([w = weak_from_this()](error_code ec) {
        auto self = w.lock();
        if (!self) return;
        self->expiry_armed = false;
        if (!ec) self->expire_due();
    });
}

// --- The public face ----------------------------------------------------------------------------
model::model(boost::asio::io_context& io, model_options options) : state_(std::make_shared<model_state>(io, options)) {}

model::~model() { state_->expiry_timer.cancel(); }

zklock::session model::make_session(session_config config)
{
    auto m = state_;
    auto impl = std::make_shared<zklock::detail::session_impl>(
        state_->io.get_executor(), std::move(config),
        [m](zklock::detail::session_impl& s) { return std::make_unique<simulated_client>(m, s); });
    return zklock::session(std::move(impl));
}

namespace {
simulated_client* client_of(model_state& m, const zklock::session& s)
{
    auto it = m.clients.find(s.id());
    return it == m.clients.end() ? nullptr : it->second;
}
}  // namespace

void model::drop_connection(const zklock::session& s)
{
    if (auto* c = client_of(*state_, s)) c->drop();
}

void model::expire(const zklock::session& s)
{
    auto* c = client_of(*state_, s);
    if (!c || !state_->sessions.alive(c->id())) return;
    state_->sessions.close(c->id());  // gone from the leader's tracker now, not at its next bucket
    state_->end_expired(c->id());
    state_->post_progress();
}

void model::cut_off(const zklock::session& s, std::chrono::milliseconds d)
{
    if (auto* c = client_of(*state_, s)) c->cut_off(d);
}

bool model::exists(const std::string& path) const
{
    return state_->servers.server(replicas::leader).exists(path).has_value();
}

std::vector<std::string> model::children(const std::string& path) const
{
    std::vector<std::string> names;
    zklock::stat st;
    state_->servers.server(replicas::leader).get_children(path, names, st);
    return names;
}

std::size_t model::live_sessions() const { return state_->sessions.live_count(); }

std::size_t model::ephemerals_of(std::int64_t id) const
{
    return state_->servers.server(replicas::leader).ephemerals_of(id);
}

}  // namespace zklock::testing::simulation
