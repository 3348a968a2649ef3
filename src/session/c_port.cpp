// The C client beneath a session (client_port.hpp): each call becomes a zoo_a* request whose completion
// converts the C client's answer into zklock's types, and its watches report through node_watcher.
#include "c_client.hpp"
#include "client_port.hpp"

#include <cerrno>
#include <cstring>
#include <cstdint>
#include <memory>
#include <type_traits>

#include <sys/socket.h>

namespace zklock::detail {
namespace {

void session_watcher(zhandle_t* zh, int type, int state, const char*, void*)
{
    if (type != ZOO_SESSION_EVENT) return;
    if (auto* s = static_cast<session_impl*>(const_cast<void*>(zoo_get_context(zh)))) s->on_session_event(from_zk_state(state));
}

/// The session a handle belongs to (null once it let go: zoo_set_context(zh, nullptr)).
session_impl* session_of(zhandle_t* zh) { return static_cast<session_impl*>(const_cast<void*>(zoo_get_context(zh))); }

watch_event_type event_type(int zk_type) noexcept
{
    if (zk_type == ZOO_CREATED_EVENT) return watch_event_type::created;
    if (zk_type == ZOO_DELETED_EVENT) return watch_event_type::deleted;
    if (zk_type == ZOO_CHANGED_EVENT) return watch_event_type::data_changed;
    return watch_event_type::children_changed;
}

void node_watcher(zhandle_t* zh, int type, int, const char* path, void* ctx)
{
    // Session events reach every watcher; the session watcher handles them once.
    if (type == ZOO_SESSION_EVENT) return;
    if (auto* s = session_of(zh)) s->on_watch_fired(reinterpret_cast<std::uintptr_t>(ctx), event_type(type), path);
}

/// The watcher a read that arms watch `id` gives the C client (none for 0), and its context: the watch's id
/// in the session's table, never a pointer.
watcher_fn watcher_for(std::uint64_t id) noexcept { return id ? node_watcher : nullptr; }
void* watcher_context(std::uint64_t id) noexcept { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(id)); }

ZooWatcherType zk_watch_type(watch_kind k) noexcept { return k == watch_kind::data ? ZWATCHTYPE_DATA : ZWATCHTYPE_CHILD; }

request_base* request_of(const void* data) { return static_cast<request_base*>(const_cast<void*>(data)); }

void answer_with(const void* data, int rc, client_answer&& a)
{
    a.ec = zk_error(rc);
    answered(request_of(data), std::move(a));
}

void status_answered(int rc, const void* data) { answer_with(data, rc, {}); }

void stat_answered(int rc, const struct Stat* st, const void* data)
{
    client_answer a;
    if (rc == ZOK) a.st = to_stat(st);
    answer_with(data, rc, std::move(a));
}

void data_answered(int rc, const char* value, int len, const struct Stat* st, const void* data)
{
    client_answer a;
    if (rc == ZOK) {
        if (value && len > 0) a.text.assign(value, static_cast<std::size_t>(len));
        a.st = to_stat(st);
    }
    answer_with(data, rc, std::move(a));
}

void create_answered(int rc, const char* value, const struct Stat* st, const void* data)
{
    client_answer a;
    if (rc == ZOK) {
        if (value) a.text = value;
        a.st = to_stat(st);
    }
    answer_with(data, rc, std::move(a));
}

void children_answered(int rc, const struct String_vector* names, const struct Stat* st, const void* data)
{
    client_answer a;
    if (rc == ZOK) {
        if (names) {
            a.children.reserve(static_cast<std::size_t>(names->count));
            for (int i = 0; i < names->count; ++i) a.children.emplace_back(names->data[i]);
        }
        a.st = to_stat(st);
    }
    answer_with(data, rc, std::move(a));
}

/// A multi's request and what zoo_amulti keeps pointers into until its completion.
struct c_multi {
    request_base* r;
    std::vector<multi_op> ops;  // owns the paths and data the C ops point into
    std::vector<zoo_op_t> c_ops;
    std::vector<zoo_op_result_t> results;
    std::vector<std::vector<char>> path_buffers;
    std::vector<struct Stat> stats;  // where a set_data's stat is written
    std::vector<c_acl> acls;
};

void multi_answered(int rc, const void* data)
{
    std::unique_ptr<c_multi> m(static_cast<c_multi*>(const_cast<void*>(data)));
    client_answer a;
    a.results.resize(m->results.size());
    for (std::size_t i = 0; i < a.results.size(); ++i) {
        a.results[i].ec = zk_error(m->results[i].err);
        if (m->c_ops[i].type == ZOO_CREATE_OP && m->results[i].err == ZOK) a.results[i].path = m->path_buffers[i].data();
        if (m->c_ops[i].type == ZOO_SETDATA_OP && m->results[i].err == ZOK) a.results[i].stat = to_stat(&m->stats[i]);
    }
    a.ec = zk_error(rc);
    answered(m->r, std::move(a));
}

int submit_multi(zhandle_t* zh, std::vector<multi_op> ops, request_base* r)
{
    auto m = std::make_unique<c_multi>();
    m->r = r;
    m->ops = std::move(ops);
    const auto n = m->ops.size();
    m->c_ops.resize(n);
    m->results.resize(n);
    m->path_buffers.resize(n);
    m->stats.resize(n);
    m->acls.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        std::visit(
            [&](auto& x) {
                using T = std::decay_t<decltype(x)>;
                const char* p = x.path.c_str();
                if constexpr (std::is_same_v<T, op::create>) {
                    m->path_buffers[i].assign(x.path.size() + 32, '\0');  // room for the sequential suffix
                    m->acls.emplace_back(x.acl);
                    zoo_create_op_init(&m->c_ops[i], p, x.data.data(), static_cast<int>(x.data.size()),
                                       &m->acls.back().vec, to_zk_mode(x.mode), m->path_buffers[i].data(),
                                       static_cast<int>(m->path_buffers[i].size()));
                } else if constexpr (std::is_same_v<T, op::remove>) {
                    zoo_delete_op_init(&m->c_ops[i], p, x.version);
                } else if constexpr (std::is_same_v<T, op::set_data>) {
                    zoo_set_op_init(&m->c_ops[i], p, x.data.data(), static_cast<int>(x.data.size()), x.version,
                                    &m->stats[i]);
                } else {
                    zoo_check_op_init(&m->c_ops[i], p, x.version);
                }
            },
            m->ops[i]);
    }
    const int rc = zoo_amulti(zh, static_cast<int>(n), m->c_ops.data(), m->results.data(), multi_answered, m.get());
    if (rc == ZOK) m.release();  // multi_answered frees it
    return rc;
}

}  // namespace

// (Not in the anonymous namespace: c_port, which the session befriends by name, captures it.)
// A new handle on its way to the session's executor. If nobody takes it (the session is gone, or the
// io_context is destroyed with the post still queued, as when a test stops its loop during a connect),
// it is closed here, so that it does not leak: it never connected, so closing it does not wait.
struct handle_in_transit {
    zhandle_t* zh;
    std::shared_ptr<const log_target> lg;
    handle_in_transit(zhandle_t* h, std::shared_ptr<const log_target> l) : zh(h), lg(std::move(l)) {}
    handle_in_transit(const handle_in_transit&) = delete;
    handle_in_transit& operator=(const handle_in_transit&) = delete;
    ~handle_in_transit()
    {
        if (zh) close_handle(zh, lg);
    }
    zhandle_t* take() noexcept { return std::exchange(zh, nullptr); }
};

/// The C client's port. The handle (session_impl::zh_), the pump and the socket still live in the session
/// (pump.cpp and names.cpp drive them); the port reaches them as the session's friend until they move here.
class c_port final : public client_port {
public:
    explicit c_port(session_impl& s) : s_(s) {}

    error_code submit(client_call c, request_base* r) override
    {
        using verb = client_call::verb;
        zhandle_t* zh = s_.zh_;
        c_call scope(s_.log.get());
        int rc = ZOK;
        switch (c.what) {
        case verb::create: {
            c_acl a(c.access);
            rc = zoo_acreate2(zh, c.path.c_str(), c.data.data(), static_cast<int>(c.data.size()), &a.vec,
                              to_zk_mode(c.mode), create_answered, r);
            break;
        }
        case verb::remove: rc = zoo_adelete(zh, c.path.c_str(), c.version, status_answered, r); break;
        case verb::sync:
            rc = zoo_async(zh, c.path.c_str(), [](int rc2, const char*, const void* d) { status_answered(rc2, d); }, r);
            break;
        case verb::exists:
            rc = zoo_awexists(zh, c.path.c_str(), watcher_for(c.watch), watcher_context(c.watch), stat_answered, r);
            break;
        case verb::get_data:
            rc = zoo_awget(zh, c.path.c_str(), watcher_for(c.watch), watcher_context(c.watch), data_answered, r);
            break;
        case verb::get_config:  // zoo_awgetconfig reads /zookeeper/config outside the chroot
            rc = zoo_awgetconfig(zh, watcher_for(c.watch), watcher_context(c.watch), data_answered, r);
            break;
        case verb::get_children:
            rc = zoo_awget_children2(zh, c.path.c_str(), watcher_for(c.watch), watcher_context(c.watch),
                                     children_answered, r);
            break;
        case verb::set_data:
            rc = zoo_aset(zh, c.path.c_str(), c.data.data(), static_cast<int>(c.data.size()), c.version,
                          stat_answered, r);
            break;
        case verb::multi: rc = submit_multi(zh, std::move(c.ops), r); break;
        }
        return zk_error(rc);
    }

    void forget_watch(const std::string& path, watch_kind kind, std::uint64_t id) override
    {
        if (!s_.zh_) return;
        // Forget it in the client only (local = 1). ZooKeeper 3.8's C client cannot remove a watch from the
        // server: asked to (local = 0), it sends a checkWatches request and then forgets the watch locally,
        // so the server keeps the one-shot watch until the node changes or the session ends. It is then
        // delivered to an id we no longer know, and ignored.
        c_call scope(s_.log.get());
        zoo_aremove_watches(s_.zh_, path.c_str(), zk_watch_type(kind), node_watcher, watcher_context(id), 1, nullptr,
                            nullptr);
    }

    session_state state() const override
    {
        return s_.zh_ ? from_zk_state(zoo_state(s_.zh_)) : session_state::closed;
    }

    // Resolves the names and makes the C client's handle off the loop (both may block); the session's
    // on_handle_created takes it on the executor. At the first connect, and for a renewed session.
    void open(std::string hosts) override
    {
        off_loop([link = s_.link_, w = s_.weak_from_this(), hosts = std::move(hosts), resolver = s_.cfg.resolver,
                  timeout = static_cast<int>(s_.cfg.session_timeout.count()), lg = s_.log] {
            zhandle_t* zh = nullptr;
            int err = 0;
            auto resolved = resolve_hosts(hosts, resolver);
            if (!resolved.list.empty()) {
                log_scope scope(lg.get());
                errno = 0;
                zh = zookeeper_init2(resolved.list.c_str(), session_watcher, timeout, nullptr, nullptr, 0, on_c_log);
                err = errno;
            }
            auto handle = std::make_shared<handle_in_transit>(zh, lg);
            link->post([w, handle, err, unresolved = std::move(resolved.unresolved), hosts,
                        addresses = addresses_of(resolved.list)] {
                if (auto self = w.lock()) {
                    self->addresses_ = addresses;
                    self->followed_hosts_ = addresses_of(hosts);
                    static_cast<c_port&>(*self->port_).made(handle->take(), err, unresolved);
                } else if (auto* zh2 = handle->take()) {
                    off_loop([zh2, lg = handle->lg] { close_handle(zh2, lg); });
                }
            });
            // Not posted (the session let go): the last reference, here, closes the handle.
        });
    }

    // The handle is made (or could not be): it is the session's now, and the pump drives it.
    void made(zhandle_t* zh, int err, const std::string& unresolved)
    {
        s_.handle_made();
        if (!zh && !unresolved.empty()) {
            s_.log->write(log_level::error, "cannot resolve ZooKeeper host name(s): " + unresolved);
            s_.close(zklock::error::unresolvable_host);
            return;
        }
        if (!unresolved.empty())
            s_.log->write(log_level::warning,
                          "cannot resolve ZooKeeper host name(s), using the others: " + unresolved);
        if (!zh) {
            s_.log->write(log_level::error,
                          "cannot use ZooKeeper host string '" + s_.cfg.hosts + "': " + std::strerror(err));
            s_.close(err == EINVAL || err == 0 ? error_code(zklock::error::invalid_hosts)
                                               : error_code(err, boost::system::system_category()));
            return;
        }
        s_.zh_ = zh;
        if (s_.state != session_state::connecting) {  // closed while the handle was being made
            off_loop([closing = std::exchange(s_.zh_, nullptr), lg = s_.log] { close_handle(closing, lg); });
            return;
        }
        zoo_set_context(s_.zh_, &s_);
        // The names were resolved off the loop (resolve_hosts): the C client only has address literals, and
        // need not look at them again.
        zoo_set_servers_resolution_delay(s_.zh_, -1);
        {
            c_call scope(s_.log.get());
            for (const auto& c : s_.cfg.credentials)
                zoo_add_auth(s_.zh_, c.scheme.c_str(), c.secret.data(), static_cast<int>(c.secret.size()), nullptr,
                             nullptr);
        }
        s_.pump();
        // The names were just resolved: again if nothing answers by then.
        s_.follow_names_after(session_impl::follow_names_every);
    }

    bool is_open() const override { return s_.zh_ != nullptr; }

    // Closes the handle off the loop (zookeeper_close waits for the server), with the socket's dup.
    void close(std::function<void(bool)> then) override
    {
        const int connection = s_.release_socket();
        s_.timer_.cancel();
        s_.timer_armed_ = false;  // (a cancelled wait leaves the flag as it was: a new handle must arm its own)
        s_.handshake_timer_.cancel();
        if (!s_.zh_) {  // never opened: nothing of it is on the server
            if (then) then(true);
            return;
        }
        zoo_set_context(s_.zh_, nullptr);
        off_loop([zh = std::exchange(s_.zh_, nullptr), lg = s_.log, link = s_.link_, connection,
                  then = std::move(then)]() mutable {
            const bool ended = close_handle(zh, lg, connection);
            if (then) link->post([then = std::move(then), ended] { then(ended); });
        });
    }

    std::pair<std::int64_t, std::string> credentials() const override
    {
        const clientid_t* cid = s_.zh_ ? zoo_client_id(s_.zh_) : nullptr;
        if (!cid || cid->client_id == 0) return {0, {}};
        return {cid->client_id, std::string(cid->passwd, sizeof cid->passwd)};
    }

    std::chrono::milliseconds negotiated_timeout() const override
    {
        return std::chrono::milliseconds(s_.zh_ ? zoo_recv_timeout(s_.zh_) : 0);
    }

    void drop() override
    {
        // shutdown() acts on the socket, not the descriptor: the session's dup reaches the C client's socket.
        if (s_.sock_.is_open()) ::shutdown(s_.sock_.native_handle(), SHUT_RDWR);
        s_.kick();
    }

private:
    session_impl& s_;
};

std::unique_ptr<client_port> make_c_port(session_impl& s) { return std::make_unique<c_port>(s); }

}  // namespace zklock::detail
