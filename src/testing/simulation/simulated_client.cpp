// The simulated client (simulated_client.hpp): a session's requests go to the model as the C client would
// send them, and its answers and watch events come back as the C client would report them.
#include "simulated_client.hpp"

#include "overloaded.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>

namespace zklock::testing::simulation {

using zklock::detail::client_answer;
using zklock::detail::client_call;
using zklock::detail::request_base;
using zklock::detail::watch_kind;

simulated_client::simulated_client(std::shared_ptr<model_state> m, zklock::detail::session_impl& s)
    : m_(std::move(m)), s_(s), ping_timer_(m_->io.get_executor()), cut_off_timer_(m_->io.get_executor())
{
    m_->all.push_back(this);
}

simulated_client::~simulated_client()
{
    ping_timer_.cancel();
    cut_off_timer_.cancel();
    std::erase(m_->all, this);
    if (id_) m_->clients.erase(id_);
    for (auto& [rid, o] : out_) fail(o.r, zklock::error::session_closed);
    for (auto& [c, r] : waiting_) fail(r, zklock::error::session_closed);
}

void simulated_client::fail(request_base* r, error_code ec)
{
    client_answer a;
    a.ec = ec;
    zklock::detail::answered(r, std::move(a));
}

session_state simulated_client::state() const
{
    if (!open_) return session_state::closed;
    if (told_expired_) return session_state::expired;
    return connected_ ? session_state::connected : session_state::connecting;
}

void simulated_client::open(std::string)
{
    // A new handle and session, made in the model's next turn (take_turn): never inside the session's call.
    opening_ = true;
    open_ = connected_ = false;
    expired_on_server_ = told_expired_ = false;
    id_ = 0;
    negotiated_ = std::chrono::milliseconds{0};
    m_->post_progress();
}

void simulated_client::take_turn()
{
    if (std::exchange(opening_, false)) {
        open_ = true;
        s_.handle_made();
    }
    if (!open_ || connected_ || told_expired_ || cut_off_) return;
    if (id_ == 0) {  // createSession, at the leader: a transaction
        const auto opened = m_->sessions.open(model_state::now_ms(), s_.cfg.session_timeout.count());
        id_ = opened.id;
        negotiated_ = std::chrono::milliseconds(opened.timeout_ms);
        m_->servers.start_session(id_);
        m_->clients[id_] = this;
        m_->apply_everywhere();
    } else if (expired_on_server_) {  // the server refuses the handshake: the session is gone
        told_expired_ = true;
        s_.on_session_event(session_state::expired);  // posted on: the session's state is not yet expired
        m_->note("learnt expired " + std::to_string(id_));
        return;
    }
    // The leader, or with a seed a drawn server (the next one if it is behind what the client has seen).
    const auto n = m_->servers.size();
    const auto first = m_->rng ? m_->draw(n) : replicas::leader;
    bool connected = false;
    for (std::size_t k = 0; k < n && !connected; ++k) connected = m_->wires.connect(id_, (first + k) % n);
    if (!connected) return;  // every server is behind what the client has seen: later
    m_->note("connect " + std::to_string(id_) + " server " + std::to_string(*m_->wires.server_of(id_)));
    m_->sessions.touch(id_, model_state::now_ms());
    connected_ = true;
    s_.on_session_event(session_state::connected);
    for (auto& [c, r] : std::exchange(waiting_, {})) send(std::move(c), r);
    ping_later();
}

error_code simulated_client::submit(client_call call, request_base* r)
{
    if (!open_) return zk_errc::invalid_state;  // no handle
    if (told_expired_) return zk_errc::invalid_state;
    if (!connected_) waiting_.emplace_back(std::move(call), r);
    else send(std::move(call), r);
    return {};
}

void simulated_client::send(client_call c, request_base* r)
{
    outstanding o{r, c.what, c.watch, c.path};
    const bool watch = c.watch != 0;
    request q;
    switch (c.what) {
    case client_call::verb::create: q = op::create{std::move(c.path), std::move(c.data), c.mode, std::move(c.access)}; break;
    case client_call::verb::remove: q = op::remove{std::move(c.path), c.version}; break;
    case client_call::verb::set_data: q = op::set_data{std::move(c.path), std::move(c.data), c.version}; break;
    case client_call::verb::multi: q = multi_request{std::move(c.ops)}; break;
    case client_call::verb::sync: q = sync_request{std::move(c.path)}; break;
    case client_call::verb::exists: q = exists_request{std::move(c.path), watch}; break;
    case client_call::verb::get_data:
    case client_call::verb::get_config:  // the model has no /zookeeper/config: no_node
        q = get_data_request{std::move(c.path), watch};
        break;
    case client_call::verb::get_children: q = get_children_request{std::move(c.path), watch}; break;
    }
    out_.emplace(m_->wires.send(id_, std::move(q)), std::move(o));
    m_->post_progress();
}

client_answer simulated_client::convert(const outstanding& o, answer&& a) const
{
    client_answer out;
    out.ec = a.ec;
    switch (o.what) {
    case client_call::verb::create:
    case client_call::verb::set_data:
        if (!a.ec && !a.results.empty()) {
            out.text = std::move(a.results[0].path);
            out.st = a.results[0].stat;
        }
        break;
    case client_call::verb::multi: out.results = std::move(a.results); break;
    case client_call::verb::exists:
        if (!a.ec && !a.st) out.ec = zk_errc::no_node;
        if (a.st) out.st = *a.st;
        break;
    case client_call::verb::get_data:
    case client_call::verb::get_config:
    case client_call::verb::get_children:
        if (a.st) out.st = *a.st;
        out.text = std::move(a.data);
        out.children = std::move(a.children);
        break;
    default: break;
    }
    return out;
}

void simulated_client::read_messages()
{
    while (read_one()) {
    }
}

bool simulated_client::read_one()
{
    if (!connected_) return false;
    auto m = m_->wires.receive(id_);
    if (!m) return false;
    if (auto* e = std::get_if<watch_event>(&*m)) {
        fire(*e);
        return true;
    }
    auto& a = std::get<answer>(*m);
    auto it = out_.find(a.id);
    if (it == out_.end()) return true;
    auto o = std::move(it->second);
    out_.erase(it);
    // The C client keeps a read's watcher once the server has answered it (an exists on a missing node
    // included: it waits for the creation).
    const bool exists_missing = o.what == client_call::verb::exists && !a.ec && !a.st;
    if (o.watch && (!a.ec || exists_missing)) {
        const auto kind = o.what == client_call::verb::get_children ? watch_kind::child : watch_kind::data;
        watches_.emplace(std::pair(kind, o.path), o.watch);
    }
    auto converted = convert(o, std::move(a));
    zklock::detail::answered(o.r, std::move(converted));
    return true;
}

void simulated_client::fire(const watch_event& e)
{
    // The C client's rules (zk_hashtable.c): a data event reaches the data and exist watchers of the
    // path; a deletion also its child watchers; a children event its child watchers.
    std::vector<std::uint64_t> ids;
    auto take = [&](watch_kind k) {
        auto [from, to] = watches_.equal_range(std::pair(k, e.path));
        for (auto it = from; it != to; ++it) ids.push_back(it->second);
        watches_.erase(from, to);
    };
    if (e.type == watch_event_type::children_changed) take(watch_kind::child);
    else take(watch_kind::data);
    if (e.type == watch_event_type::deleted) take(watch_kind::child);
    for (auto wid : ids) s_.on_watch_fired(wid, e.type, e.path.c_str());
}

void simulated_client::forget_watch(const std::string& path, watch_kind kind, std::uint64_t wid)
{
    auto [from, to] = watches_.equal_range(std::pair(kind, path));
    for (auto it = from; it != to; ++it)
        if (it->second == wid) {
            watches_.erase(it);
            return;
        }
}

void simulated_client::connection_lost()
{
    if (!connected_) return;
    connected_ = false;
    ping_timer_.cancel();
    // The requests out are lost with the connection (a write the server applied stays applied); the C
    // client fails them, then reports the state.
    for (auto& [rid, o] : std::exchange(out_, {})) fail(o.r, zk_errc::connection_loss);
    s_.on_session_event(session_state::connecting);
    m_->post_progress();  // it reconnects in the next turn
}

void simulated_client::drop()
{
    if (!connected_) return;
    m_->note("drop " + std::to_string(id_));
    m_->wires.drop(id_);
    connection_lost();
}

void simulated_client::cut_off(std::chrono::milliseconds d)
{
    if (!connected_) return;
    m_->note("cut off " + std::to_string(id_) + " for " + std::to_string(d.count()) + " ms");
    cut_off_ = true;
    drop();
    cut_off_timer_.expires_after(d);
    cut_off_timer_.async_wait([this, alive = std::weak_ptr<model_state>(m_)](error_code ec) {
        if (ec || !alive.lock()) return;
        cut_off_ = false;
        m_->post_progress();  // it reconnects (or learns its session expired) in the next step
    });
}

void simulated_client::close(std::function<void(bool)> then)
{
    ping_timer_.cancel();
    // The session has failed what it waited for; what is still out only needs freeing. The server takes
    // what was sent before the closeSession, then ends the session.
    const bool was_connected = connected_;
    if (connected_) {
        for (bool served = true; served;) {
            served = false;
            while (m_->wires.serve(id_)) served = true;
            m_->apply_everywhere();
        }
        m_->wires.drop(id_);
    }
    for (auto& [rid, o] : std::exchange(out_, {})) fail(o.r, zklock::error::session_closed);
    for (auto& [c, r] : std::exchange(waiting_, {})) fail(r, zklock::error::session_closed);
    // A client that is not connected cannot send the closeSession (zookeeper_close sends nothing then):
    // the session, and its ephemeral nodes, stay until the leader expires it.
    const bool ended = was_connected && !expired_on_server_ && id_ != 0 && m_->sessions.alive(id_);
    if (ended) m_->end_session(id_);
    m_->clients.erase(id_);
    open_ = opening_ = connected_ = false;
    m_->post_progress();
    if (then) boost::asio::post(m_->io, [then = std::move(then), confirmed = ended || id_ == 0] { then(confirmed); });
}

std::pair<std::int64_t, std::string> simulated_client::credentials() const
{
    if (!id_) return {0, {}};
    return {id_, std::string(16, '\0')};
}

void simulated_client::ping_later()
{
    ping_timer_.expires_after(negotiated_ / 3);
    ping_timer_.async_wait([this, alive = std::weak_ptr<model_state>(m_)](error_code ec) {
        if (ec || !alive.lock() || !connected_) return;
        m_->sessions.touch(id_, model_state::now_ms());
        ping_later();
    });
}

}  // namespace zklock::testing::simulation
