#include "connections.hpp"

#include "overloaded.hpp"

#include <zklock/error.hpp>

#include <algorithm>
#include <stdexcept>

namespace zklock::testing::simulation {

namespace {

void add_once(std::vector<std::string>& paths, const std::string& path)
{
    if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
}

void remove_path(std::vector<std::string>& paths, const std::string& path)
{
    std::erase(paths, path);
}
}  // namespace

connections::client& connections::at(session_id session) { return clients_[session]; }

bool connections::connect(session_id session, server_index server)
{
    auto& c = at(session);
    if (c.server || server >= servers_.size() || servers_.applied(server) < c.last_seen) return false;
    c.server = server;
    servers_.server(server).set_watches(session, c.last_seen, c.watches);
    harvest(server);
    return true;
}

std::optional<server_index> connections::server_of(session_id session) const
{
    const auto it = clients_.find(session);
    return it == clients_.end() ? std::nullopt : it->second.server;
}

std::uint64_t connections::send(session_id session, request r)
{
    auto& c = at(session);
    if (!c.server) throw std::logic_error("connections::send: the session is not connected");
    const auto id = next_id_++;
    c.requests.push_back(pending{id, std::move(r), false, 0, {}});
    return id;
}

bool connections::is_write(const request& r)
{
    return std::holds_alternative<op::create>(r) || std::holds_alternative<op::remove>(r) ||
           std::holds_alternative<op::set_data>(r) || std::holds_alternative<multi_request>(r);
}

answer connections::read(data_tree& tree, session_id session, const request& r) const
{
    answer a;
    std::visit(overloaded{
                   [&](const exists_request& q) {
                       a.st = tree.exists(q.path, q.watch ? std::optional(session) : std::nullopt);
                   },
                   [&](const get_data_request& q) {
                       zklock::stat st;
                       a.ec = tree.get_data(q.path, a.data, st, q.watch ? std::optional(session) : std::nullopt);
                       if (!a.ec) a.st = st;
                   },
                   [&](const get_children_request& q) {
                       zklock::stat st;
                       a.ec = tree.get_children(q.path, a.children, st, q.watch ? std::optional(session) : std::nullopt);
                       if (!a.ec) a.st = st;
                   },
                   [](const auto&) {},
               },
               r);
    return a;
}

bool connections::serve(session_id session)
{
    auto& c = at(session);
    if (!c.server) return false;
    const auto it = std::find_if(c.requests.begin(), c.requests.end(), [](const pending& p) { return !p.served; });
    if (it == c.requests.end()) return false;
    pending& p = *it;
    if (is_write(p.r)) {
        std::visit(overloaded{
                       [&](const op::create& q) { p.a.results.push_back(servers_.create(session, q)); },
                       [&](const op::remove& q) { p.a.results.push_back({servers_.remove(q), {}, {}}); },
                       [&](const op::set_data& q) { p.a.results.push_back(servers_.set_data(q)); },
                       [&](const multi_request& q) { p.a.results = servers_.multi(session, q.ops); },
                       [](const auto&) {},
                   },
                   p.r);
        // A single write's code is its answer's; a multi's is its first failure's.
        for (const auto& r : p.a.results)
            if (r.ec) {
                p.a.ec = r.ec;
                break;
            }
        p.served = true;
        p.needs = servers_.last_zxid();
        harvest(replicas::leader);  // the leader applied it: its events go out there, and its answers
    } else if (std::holds_alternative<sync_request>(p.r)) {
        p.served = true;
        p.needs = servers_.last_zxid();
    } else {
        if (it != c.requests.begin()) return false;  // behind a request not yet answered
        p.a = read(servers_.server(*c.server), session, p.r);
        p.served = true;
        p.needs = 0;
    }
    answer_ready(c);
    return true;
}

void connections::answer_ready(client& c)
{
    while (!c.requests.empty() && c.requests.front().served && c.server &&
           servers_.applied(*c.server) >= c.requests.front().needs) {
        pending p = std::move(c.requests.front());
        c.requests.pop_front();
        p.a.id = p.id;
        p.a.zxid = servers_.applied(*c.server);
        const bool write = is_write(p.r);
        if (!write && !std::holds_alternative<sync_request>(p.r)) c.watching.emplace(p.id, std::move(p.r));
        c.out.push_back(outgoing{std::move(p.a), write});
    }
}

void connections::harvest(server_index server)
{
    for (auto& f : servers_.server(server).take_fired()) {
        const auto it = clients_.find(f.session);
        if (it != clients_.end() && it->second.server == server) it->second.out.push_back(outgoing{f.event, false});
    }
    for (auto& [session, c] : clients_)
        if (c.server == server) answer_ready(c);
}

void connections::apply(server_index server, std::optional<std::int64_t> zxid)
{
    servers_.catch_up(server, zxid);
    harvest(server);
}

// As the C client: a read's watch is the client's once its answer is read (exists on a missing node leaves
// an exist watch; a failed get_data or get_children leaves none).
void connections::hold_watch(client& c, const request& r, const answer& a)
{
    std::visit(overloaded{
                   [&](const exists_request& q) {
                       if (q.watch) add_once(a.st ? c.watches.data : c.watches.exist, q.path);
                   },
                   [&](const get_data_request& q) {
                       if (q.watch && !a.ec) add_once(c.watches.data, q.path);
                   },
                   [&](const get_children_request& q) {
                       if (q.watch && !a.ec) add_once(c.watches.child, q.path);
                   },
                   [](const auto&) {},
               },
               r);
}

void connections::drop_watch(client& c, const watch_event& e)
{
    switch (e.type) {
    case watch_event_type::created:
    case watch_event_type::data_changed:
        remove_path(c.watches.data, e.path);
        remove_path(c.watches.exist, e.path);
        break;
    case watch_event_type::children_changed: remove_path(c.watches.child, e.path); break;
    case watch_event_type::deleted:
        remove_path(c.watches.data, e.path);
        remove_path(c.watches.exist, e.path);
        remove_path(c.watches.child, e.path);
        break;
    }
}

std::optional<message> connections::receive(session_id session)
{
    auto& c = at(session);
    if (c.out.empty()) return std::nullopt;
    message m = std::move(c.out.front().m);
    c.out.pop_front();
    if (const auto* a = std::get_if<answer>(&m)) {
        c.last_seen = std::max(c.last_seen, a->zxid);
        if (const auto it = c.watching.find(a->id); it != c.watching.end()) {
            hold_watch(c, it->second, *a);
            c.watching.erase(it);
        }
    } else {
        drop_watch(c, std::get<watch_event>(m));
    }
    return m;
}

std::vector<lost_request> connections::drop(session_id session)
{
    auto& c = at(session);
    std::vector<lost_request> lost;
    if (!c.server) return lost;
    for (const auto& o : c.out)
        if (const auto* a = std::get_if<answer>(&o.m)) lost.push_back({a->id, o.applied_write});
    for (const auto& p : c.requests) lost.push_back({p.id, p.served && is_write(p.r)});
    servers_.server(*c.server).forget_watches(session);
    c.out.clear();
    c.requests.clear();
    c.watching.clear();
    c.server.reset();
    return lost;
}

bool connections::has_unserved(session_id session) const
{
    const auto it = clients_.find(session);
    if (it == clients_.end() || !it->second.server) return false;
    const auto& rs = it->second.requests;
    return std::any_of(rs.begin(), rs.end(), [](const pending& p) { return !p.served; });
}

bool connections::has_message(session_id session) const
{
    const auto it = clients_.find(session);
    return it != clients_.end() && !it->second.out.empty();
}

std::int64_t connections::last_seen(session_id session) const
{
    const auto it = clients_.find(session);
    return it == clients_.end() ? 0 : it->second.last_seen;
}

const data_tree::held_watches& connections::watches(session_id session) const
{
    static const data_tree::held_watches none;
    const auto it = clients_.find(session);
    return it == clients_.end() ? none : it->second.watches;
}

}  // namespace zklock::testing::simulation
