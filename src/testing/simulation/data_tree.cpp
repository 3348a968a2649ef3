#include "data_tree.hpp"

#include <zklock/error.hpp>

#include <algorithm>
#include <cstdio>
#include <type_traits>

namespace zklock::testing::simulation {

namespace {

using boost::system::error_code;

error_code zk(zk_errc e) { return make_error_code(e); }

// A path the server accepts: absolute, no empty component, no trailing slash (but "/"). Sequential
// creates are checked with their suffix, so "/a/" is a valid sequential path.
bool valid_path(const std::string& path, bool sequential)
{
    if (path.empty() || path[0] != '/') return false;
    const std::string checked = sequential ? path + "0" : path;
    if (checked == "/") return true;
    if (checked.back() == '/') return false;
    return checked.find("//") == std::string::npos;
}

std::string parent_of(const std::string& path)
{
    const auto slash = path.rfind('/');
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string name_of(const std::string& path) { return path.substr(path.rfind('/') + 1); }

bool is_sequential(create_mode m)
{
    return m == create_mode::persistent_sequential || m == create_mode::ephemeral_sequential;
}

bool is_ephemeral(create_mode m) { return m == create_mode::ephemeral || m == create_mode::ephemeral_sequential; }

}  // namespace

data_tree::data_tree() { nodes_.emplace("/", node{}); }

multi_result data_tree::apply_create(txn& t, session_id session, const op::create& request) const
{
    const bool sequential = is_sequential(request.mode);
    if (!valid_path(request.path, sequential) || request.path == "/") return {zk(zk_errc::bad_arguments), {}, {}};
    const std::string parent_path = parent_of(sequential ? request.path + "0" : request.path);
    const auto parent = t.nodes.find(parent_path);
    if (parent == t.nodes.end()) return {zk(zk_errc::no_node), {}, {}};
    if (parent->second.st.ephemeral_owner != 0) return {zk(zk_errc::no_children_for_ephemerals), {}, {}};
    std::string path = request.path;
    if (sequential) {
        char suffix[16];
        std::snprintf(suffix, sizeof suffix, "%010d", parent->second.sequence);
        path += suffix;
    }
    if (t.nodes.count(path) != 0) return {zk(zk_errc::node_exists), {}, {}};

    node n;
    n.data = request.data;
    n.st.czxid = n.st.mzxid = n.st.pzxid = t.zxid;
    n.st.ctime_ms = n.st.mtime_ms = now_ms_;
    n.st.ephemeral_owner = is_ephemeral(request.mode) ? session : 0;
    n.st.data_length = static_cast<std::int32_t>(n.data.size());
    const zklock::stat created = n.st;
    auto& p = parent->second;  // still valid after the emplace below: std::map keeps its references
    p.children.insert(name_of(path));
    p.sequence += 1;
    p.st.cversion += 1;
    p.st.pzxid = t.zxid;
    p.st.num_children = static_cast<std::int32_t>(p.children.size());
    t.nodes.emplace(path, std::move(n));
    t.events.push_back({watch_event_type::created, path});
    t.events.push_back({watch_event_type::children_changed, parent_path});
    return {{}, path, created};
}

error_code data_tree::find_versioned(node_map& nodes, const std::string& path, int version, node_map::iterator& found)
{
    if (!valid_path(path, false)) return zk(zk_errc::bad_arguments);
    found = nodes.find(path);
    if (found == nodes.end()) return zk(zk_errc::no_node);
    if (version != -1 && version != found->second.st.version) return zk(zk_errc::bad_version);
    return {};
}

error_code data_tree::apply_remove(txn& t, const op::remove& request) const
{
    if (request.path == "/") return zk(zk_errc::bad_arguments);
    node_map::iterator it;
    if (const auto ec = find_versioned(t.nodes, request.path, request.version, it)) return ec;
    if (!it->second.children.empty()) return zk(zk_errc::not_empty);
    const std::string parent_path = parent_of(request.path);
    auto& p = t.nodes.at(parent_path);
    p.children.erase(name_of(request.path));
    p.st.cversion += 1;  // but not the sequence: only a create counts there
    p.st.pzxid = t.zxid;
    p.st.num_children = static_cast<std::int32_t>(p.children.size());
    t.nodes.erase(it);
    t.events.push_back({watch_event_type::deleted, request.path});
    t.events.push_back({watch_event_type::children_changed, parent_path});
    return {};
}

multi_result data_tree::apply_set(txn& t, const op::set_data& request) const
{
    node_map::iterator it;
    if (const auto ec = find_versioned(t.nodes, request.path, request.version, it)) return {ec, {}, {}};
    auto& n = it->second;
    n.data = request.data;
    n.st.version += 1;
    n.st.mzxid = t.zxid;
    n.st.mtime_ms = now_ms_;
    n.st.data_length = static_cast<std::int32_t>(n.data.size());
    t.events.push_back({watch_event_type::data_changed, request.path});
    return {{}, {}, n.st};
}

error_code data_tree::apply_check(txn& t, const op::check& request) const
{
    node_map::iterator unused;
    return find_versioned(t.nodes, request.path, request.version, unused);
}

// As DataTree does for each operation, in their order: a create fires the node's data watches (created)
// and the parent's child watches; a delete fires the node's data and child watches (deleted, once for a
// session that had both) and the parent's child watches; a set fires the node's data watches.
void data_tree::fire(const watch_event& e)
{
    const auto take = [&](std::map<std::string, std::set<session_id>>& watches) {
        std::set<session_id> out;
        if (const auto it = watches.find(e.path); it != watches.end()) {
            out = std::move(it->second);
            watches.erase(it);  // one-shot
        }
        return out;
    };
    std::set<session_id> to;
    switch (e.type) {
    case watch_event_type::created:
    case watch_event_type::data_changed: to = take(data_watches_); break;
    case watch_event_type::children_changed: to = take(child_watches_); break;
    case watch_event_type::deleted:
        to = take(data_watches_);
        to.merge(take(child_watches_));
        break;
    }
    for (const auto s : to) fired_.push_back({s, e});
}

void data_tree::commit(txn&& t)
{
    nodes_ = std::move(t.nodes);
    for (const auto& e : t.events) fire(e);
}

multi_result data_tree::create(session_id session, const op::create& request)
{
    auto t = begin();
    auto r = apply_create(t, session, request);
    if (!r.ec) commit(std::move(t));
    return r;
}

error_code data_tree::remove(const op::remove& request)
{
    auto t = begin();
    const auto ec = apply_remove(t, request);
    if (!ec) commit(std::move(t));
    return ec;
}

multi_result data_tree::set_data(const op::set_data& request)
{
    auto t = begin();
    auto r = apply_set(t, request);
    if (!r.ec) commit(std::move(t));
    return r;
}

std::vector<multi_result> data_tree::multi(session_id session, const std::vector<multi_op>& ops)
{
    auto t = begin();
    std::vector<multi_result> results;
    std::size_t failed = ops.size();
    for (std::size_t i = 0; i < ops.size() && failed == ops.size(); ++i) {
        multi_result r = std::visit(
            [&](const auto& o) -> multi_result {
                using T = std::decay_t<decltype(o)>;
                if constexpr (std::is_same_v<T, op::create>) return apply_create(t, session, o);
                else if constexpr (std::is_same_v<T, op::remove>) return {apply_remove(t, o), {}, {}};
                else if constexpr (std::is_same_v<T, op::set_data>) return apply_set(t, o);
                else return {apply_check(t, o), {}, {}};
            },
            ops[i]);
        if (r.ec) failed = i;
        results.push_back(std::move(r));
    }
    if (failed == ops.size()) {
        commit(std::move(t));
        return results;
    }
    // None applied: the operations before the failure report ok (and nothing else), those after it
    // runtime_inconsistency, as the server's error results do.
    for (std::size_t i = 0; i < failed; ++i) results[i] = multi_result{};
    for (std::size_t i = failed + 1; i < ops.size(); ++i) results.push_back({zk(zk_errc::runtime_inconsistency), {}, {}});
    return results;
}

void data_tree::forget_watches(session_id session)
{
    for (auto* watches : {&data_watches_, &child_watches_}) {
        for (auto it = watches->begin(); it != watches->end();) {
            it->second.erase(session);
            it = it->second.empty() ? watches->erase(it) : std::next(it);
        }
    }
}

// DataTree.setWatches (3.8): each watch the client holds either fires now, for what it missed since
// `relative_zxid`, or is set here.
void data_tree::set_watches(session_id session, std::int64_t relative_zxid, const held_watches& held)
{
    const auto node_at = [&](const std::string& path) -> const node* {
        const auto it = nodes_.find(path);
        return it == nodes_.end() ? nullptr : &it->second;
    };
    for (const auto& path : held.data) {
        const auto* n = node_at(path);
        if (!n) fired_.push_back({session, {watch_event_type::deleted, path}});
        else if (n->st.mzxid > relative_zxid) fired_.push_back({session, {watch_event_type::data_changed, path}});
        else data_watches_[path].insert(session);
    }
    for (const auto& path : held.exist) {
        if (node_at(path)) fired_.push_back({session, {watch_event_type::created, path}});
        else data_watches_[path].insert(session);
    }
    for (const auto& path : held.child) {
        const auto* n = node_at(path);
        if (!n) fired_.push_back({session, {watch_event_type::deleted, path}});
        else if (n->st.pzxid > relative_zxid) fired_.push_back({session, {watch_event_type::children_changed, path}});
        else child_watches_[path].insert(session);
    }
}

void data_tree::end_session(session_id session)
{
    forget_watches(session);
    auto t = begin();
    std::vector<std::string> owned;
    for (const auto& [path, n] : nodes_)
        if (n.st.ephemeral_owner == session) owned.push_back(path);
    for (const auto& path : owned) apply_remove(t, op::remove{path, -1});  // ephemerals have no children
    commit(std::move(t));
}

void data_tree::start_session(session_id) { begin(); }

std::size_t data_tree::ephemerals_of(session_id session) const
{
    return static_cast<std::size_t>(std::count_if(nodes_.begin(), nodes_.end(),
                                                  [session](const auto& n) { return n.second.st.ephemeral_owner == session; }));
}

std::optional<zklock::stat> data_tree::exists(const std::string& path, std::optional<session_id> watcher)
{
    if (watcher) data_watches_[path].insert(*watcher);  // on a missing node too: fires on its create
    const auto it = nodes_.find(path);
    if (it == nodes_.end()) return std::nullopt;
    return it->second.st;
}

error_code data_tree::get_data(const std::string& path, std::string& data, zklock::stat& st,
                               std::optional<session_id> watcher)
{
    const auto it = nodes_.find(path);
    if (it == nodes_.end()) return zk(zk_errc::no_node);  // no watch is left for a missing node
    if (watcher) data_watches_[path].insert(*watcher);
    data = it->second.data;
    st = it->second.st;
    return {};
}

error_code data_tree::get_children(const std::string& path, std::vector<std::string>& names, zklock::stat& st,
                                   std::optional<session_id> watcher)
{
    const auto it = nodes_.find(path);
    if (it == nodes_.end()) return zk(zk_errc::no_node);
    if (watcher) child_watches_[path].insert(*watcher);
    names.assign(it->second.children.begin(), it->second.children.end());
    st = it->second.st;
    return {};
}

std::vector<fired_watch> data_tree::take_fired()
{
    std::vector<fired_watch> out;
    out.swap(fired_);
    return out;
}

}  // namespace zklock::testing::simulation
