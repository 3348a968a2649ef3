// The session layer: the single-threaded ZooKeeper C client, pumped by the Asio executor.
// The only translation units that include <zookeeper/zookeeper.h> live in src/session/.
#include "session_impl.hpp"

#include <zklock/validation.hpp>


#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <atomic>
#include <list>
#include <cerrno>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace zklock::detail {

std::mutex& c_client_mutex()
{
    static std::mutex m;
    return m;
}

namespace {

// --- Logging ------------------------------------------------------------------------------------
// The C client's log callback carries no context, so each call into the client names the session
// whose log it is in a thread-local. Every call into the C client happens inside such a scope.
thread_local const log_target* current_log = nullptr;

struct log_scope {
    const log_target* saved;
    explicit log_scope(const log_target* t) : saved(current_log) { current_log = t; }
    ~log_scope() { current_log = saved; }
    log_scope(const log_scope&) = delete;
    log_scope& operator=(const log_scope&) = delete;
};

// The single-threaded C client keeps process-wide state without locks (its request-id counter, shared
// by every handle): every call into it, from an event loop or from the thread that closes a handle, holds
// this mutex. (zookeeper_init, which resolves names, runs without it: it touches no such state.)
struct c_call : log_scope {
    std::lock_guard<std::mutex> lock;
    explicit c_call(const log_target* t) : log_scope(t), lock(c_client_mutex()) {}
};

void on_c_log(const char* message)
{
    if (!current_log || !message) return;
    std::string_view m(message);
    auto level = log_level::debug;
    if (m.find("ZOO_ERROR@") != m.npos) level = log_level::error;
    else if (m.find("ZOO_WARN@") != m.npos) level = log_level::warning;
    else if (m.find("ZOO_INFO@") != m.npos) level = log_level::info;
    while (!m.empty() && (m.back() == '\n' || m.back() == '\r')) m.remove_suffix(1);
    current_log->write(level, m);
}

// The C client's level is process-wide, and its st build formats every line into static buffers. It
// starts at INFO: turn it off until a session with a log sink asks for it, then raise it to the most
// talkative session's threshold and filter per session. Guarded by c_client_mutex().
std::atomic<int> c_log_level{-1};

void init_c_log_level()
{
    std::lock_guard<std::mutex> lock(c_client_mutex());
    if (c_log_level.load() < 0) {
        c_log_level.store(0);
        zoo_set_debug_level(static_cast<ZooLogLevel>(0));
    }
}

void raise_c_log_level(log_level wanted)
{
    std::lock_guard<std::mutex> lock(c_client_mutex());
    if (static_cast<int>(wanted) > c_log_level.load()) {
        c_log_level.store(static_cast<int>(wanted));
        zoo_set_debug_level(static_cast<ZooLogLevel>(wanted));
    }
}

// --- Conversions --------------------------------------------------------------------------------
error_code zk_error(int rc) noexcept
{
    if (rc == ZOK) return {};
    if (rc == ZSESSIONEXPIRED) return zklock::error::session_expired;
    if (rc == ZCLOSING) return zklock::error::session_closed;
    if (rc == ZAUTHFAILED) return zklock::error::auth_failed;
    return {rc, zookeeper_category()};
}

zklock::stat to_stat(const struct Stat* s) noexcept
{
    zklock::stat r;
    if (!s) return r;
    r.czxid = s->czxid;
    r.mzxid = s->mzxid;
    r.pzxid = s->pzxid;
    r.ctime_ms = s->ctime;
    r.mtime_ms = s->mtime;
    r.version = s->version;
    r.cversion = s->cversion;
    r.aversion = s->aversion;
    r.ephemeral_owner = s->ephemeralOwner;
    r.data_length = s->dataLength;
    r.num_children = s->numChildren;
    return r;
}

int to_zk_mode(create_mode m) noexcept
{
    switch (m) {
    case create_mode::persistent: return ZOO_PERSISTENT;
    case create_mode::ephemeral: return ZOO_EPHEMERAL;
    case create_mode::persistent_sequential: return ZOO_PERSISTENT_SEQUENTIAL;
    case create_mode::ephemeral_sequential: return ZOO_EPHEMERAL_SEQUENTIAL;
    case create_mode::container: return ZOO_CONTAINER;
    }
    return ZOO_PERSISTENT;
}

bool is_sequential(create_mode m) noexcept
{
    return m == create_mode::persistent_sequential || m == create_mode::ephemeral_sequential;
}

/// An ACL_vector that borrows the strings of a zklock::acl (the C client serializes it during the call).
struct c_acl {
    std::vector<ACL> entries;
    ACL_vector vec{};
    explicit c_acl(const acl& a)
    {
        entries.reserve(a.size());
        for (const auto& e : a)
            entries.push_back(ACL{e.perms, Id{const_cast<char*>(e.scheme.c_str()), const_cast<char*>(e.id.c_str())}});
        vec.count = static_cast<int32_t>(entries.size());
        vec.data = entries.data();
    }
};

session_state from_zk_state(int s) noexcept
{
    if (s == ZOO_CONNECTED_STATE || s == ZOO_READONLY_STATE) return session_state::connected;
    if (s == ZOO_EXPIRED_SESSION_STATE) return session_state::expired;
    if (s == ZOO_AUTH_FAILED_STATE) return session_state::auth_failed;
    return session_state::connecting;
}

// --- Requests -----------------------------------------------------------------------------------
template <class... Args>
class request final : public request_base {
public:
    explicit request(const char* what)
    {
        kind = what;
        sent_at = std::chrono::steady_clock::now();  // before the C client sends it: never later than the touch
    }
    handler<Args...> h;
    std::shared_ptr<watch_state> watch;  ///< the watch this read may arm
    // zoo_amulti keeps pointers into these until its completion.
    std::vector<zoo_op_t> ops;
    std::vector<zoo_op_result_t> results;
    std::vector<std::string> op_paths;
    std::vector<std::vector<char>> path_buffers;
    std::vector<c_acl> acls;

    void complete(error_code ec, Args... args)
    {
        if (!owner) return;
        if (owner->delay_answer(*this)) {
            // A planned fault: deliver the answer once the session has noticed the dropped connection.
            owner->wait_state(session_state::connected,
                              [o = owner, h = std::move(h), ec, ... a = std::move(args)](error_code, session_state) mutable {
                                  o->post_completion(std::move(h), ec, std::move(a)...);
                              });
            return;
        }
        owner->post_completion(std::move(h), ec, std::move(args)...);
    }
    void fail(error_code ec) override { complete(ec, Args{}...); }
};

/// Whether a return code came from the server (which then touched the session), not from the client.
bool from_server(int rc) noexcept
{
    return rc != ZCONNECTIONLOSS && rc != ZOPERATIONTIMEOUT && rc != ZCLOSING && rc != ZSESSIONEXPIRED &&
           rc != ZINVALIDSTATE && rc != ZAUTHFAILED && rc != ZSYSTEMERROR && rc != ZRUNTIMEINCONSISTENCY;
}

/// Takes back the request a completion was given, with the C client's return code.
template <class Request>
std::unique_ptr<Request> take(const void* data, int rc)
{
    std::unique_ptr<Request> r(static_cast<Request*>(const_cast<void*>(data)));
    if (r->owner) r->owner->finished(r.get(), from_server(rc));
    return r;
}

// A per-operation cancellation abandons the wait; the C client still completes the request later. The
// slot names the request by id, so a late or repeated signal finds nothing instead of a freed request.
template <class Request>
void bind_cancellation(Request* r)
{
    auto slot = asio::get_associated_cancellation_slot(r->h);
    if (slot.is_connected())
        slot.assign([w = std::weak_ptr<session_impl>(r->owner), id = r->id](asio::cancellation_type) {
            if (auto s = w.lock()) s->cancel_request(id);
        });
}

void node_watcher(zhandle_t* zh, int type, int, const char* path, void* ctx)
{
    // Session events reach every watcher; the session watcher handles them once.
    if (type == ZOO_SESSION_EVENT) return;
    auto* s = static_cast<session_impl*>(const_cast<void*>(zoo_get_context(zh)));
    if (s) s->on_watch_fired(reinterpret_cast<std::uintptr_t>(ctx), type, path);
}

void session_watcher(zhandle_t* zh, int type, int state, const char*, void*)
{
    if (type != ZOO_SESSION_EVENT) return;
    auto* s = static_cast<session_impl*>(const_cast<void*>(zoo_get_context(zh)));
    if (s) s->on_session_event(state);
}

/// The helper threads that open and close handles. They are short-lived, but a close can wait seconds for
/// a silent server: the process joins whatever is left when it exits, so that no helper still runs while
/// static objects are being destroyed.
class helper_threads {
public:
    static helper_threads& instance()
    {
        static helper_threads h;
        return h;
    }
    template <class Fn>
    void start(Fn fn)
    {
        std::lock_guard<std::mutex> lock(mu_);
        // Join the ones that finished, so the list stays short.
        for (auto it = threads_.begin(); it != threads_.end();) {
            if (it->done->load()) {
                it->thread.join();
                it = threads_.erase(it);
            } else {
                ++it;
            }
        }
        auto done = std::make_shared<std::atomic<bool>>(false);
        threads_.push_back({std::thread([fn = std::move(fn), done]() mutable {
                                fn();
                                done->store(true);
                            }),
                            done});
    }
    ~helper_threads()
    {
        std::lock_guard<std::mutex> lock(mu_);
        for (auto& t : threads_) t.thread.join();
    }

private:
    struct entry {
        std::thread thread;
        std::shared_ptr<std::atomic<bool>> done;
    };
    std::mutex mu_;
    std::list<entry> threads_;
};

/// Runs `fn` on a helper thread: zookeeper_init resolves names and zookeeper_close waits for the server,
/// and neither may block the event loop. `fn` reaches the session only through a helper_link.
template <class Fn>
void off_loop(Fn fn)
{
    helper_threads::instance().start(std::move(fn));
}

// zookeeper_close may wait 4.5 s for a silent server (3 s to flush, 1.5 s for the answer): never on the
// event loop, and without the process-wide mutex, or every other session's pump would wait for it. What
// it touches that other handles share is harmless unlocked: the request-id counter (a duplicate id is
// harmless, answers are matched per handle in order) and, only when logging is on, the static log
// buffers; then it keeps the mutex, so that no log line is garbled.
// The C client refuses the whole host list when one name does not resolve, and says only "errno": find
// the name (on the helper thread: getaddrinfo blocks).
std::string first_unresolvable(const std::string& hosts)
{
    std::string_view list(hosts);
    list = list.substr(0, list.find('/'));
    while (!list.empty()) {
        auto entry = list.substr(0, list.find(','));
        list.remove_prefix(std::min(list.size(), entry.size() + 1));
        std::string host(entry.substr(0, entry.rfind(':')));
        if (host.size() > 1 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
        addrinfo hints{};
        hints.ai_socktype = SOCK_STREAM;
        addrinfo* res = nullptr;
        if (::getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return host;
        ::freeaddrinfo(res);
    }
    return {};
}

void close_handle(zhandle_t* zh, const std::shared_ptr<const log_target>& lg)
{
    log_scope scope(lg.get());
    std::unique_lock<std::mutex> lock(c_client_mutex(), std::defer_lock);
    if (c_log_level.load() > 0) lock.lock();
    zookeeper_close(zh);
}

}  // namespace

// --- Session lifecycle --------------------------------------------------------------------------
session_impl::session_impl(executor_type e, session_config c)
    : ex(std::move(e)), cfg(std::move(c)), sock_(ex), timer_(ex), connect_timer_(ex), keepalive_timer_(ex),
      handshake_timer_(ex),
      link_(std::make_shared<helper_link>(ex))
{
    log = std::make_shared<log_target>(log_target{cfg.log, cfg.log_threshold});
    init_c_log_level();
    if (cfg.log) raise_c_log_level(cfg.log_threshold);
}

session_impl::~session_impl() { link_->detach(); }

error_code session_impl::refusal() const
{
    switch (state) {
    case session_state::idle: return zklock::error::not_connected;
    case session_state::expired: return zklock::error::session_expired;
    case session_state::auth_failed: return zklock::error::auth_failed;
    case session_state::closed: return zklock::error::session_closed;
    default: return zh_ ? error_code{} : error_code(zklock::error::not_connected);
    }
}

error_code session_impl::refusal(std::string_view path, bool sequential) const
{
    if (auto ec = refusal()) return ec;
    return valid_path(path, sequential) ? error_code{} : error_code(zklock::error::invalid_path);
}

void session_impl::connect(handler<> h)
{
    if (state != session_state::idle) {
        post_completion(std::move(h), is_final(state) ? error_code(zklock::error::already_closed)
                                                      : error_code(asio::error::already_started));
        return;
    }
    std::string why;
    if (auto ec = check_config(cfg, &why)) {
        log->write(log_level::error, "cannot connect: " + why);
        state = session_state::closed;
        post_completion(std::move(h), ec);
        return;
    }
    connect_handler_ = std::move(h);
    if (auto slot = asio::get_associated_cancellation_slot(connect_handler_); slot.is_connected())
        slot.assign([w = weak_from_this()](asio::cancellation_type) {
            if (auto s = w.lock()) s->close(asio::error::operation_aborted);
        });
    set_state(session_state::connecting);
    connect_timer_.expires_after(cfg.connect_timeout);
    connect_timer_.async_wait([w = weak_from_this()](error_code ec) {
        auto s = w.lock();
        if (ec || !s || s->state != session_state::connecting || s->id != 0) return;
        s->log->write(log_level::error, "no ZooKeeper server answered at " + s->cfg.hosts + " within " +
                                            std::to_string(s->cfg.connect_timeout.count()) + " ms");
        s->close(zklock::error::connect_timeout);
    });
    off_loop([link = link_, w = weak_from_this(), hosts = cfg.hosts,
              timeout = static_cast<int>(cfg.session_timeout.count()), lg = log] {
        zhandle_t* zh = nullptr;
        int err = 0;
        {
            log_scope scope(lg.get());
            errno = 0;
            zh = zookeeper_init2(hosts.c_str(), session_watcher, timeout, nullptr, nullptr, 0, on_c_log);
            err = errno;
        }
        std::string unresolved = zh ? std::string{} : first_unresolvable(hosts);
        const bool handed_over = link->post([w, zh, err, lg, unresolved = std::move(unresolved)] {
            if (auto self = w.lock()) self->on_handle_created(zh, err, unresolved);
            else if (zh) off_loop([zh, lg] { close_handle(zh, lg); });
        });
        if (!handed_over && zh) close_handle(zh, lg);
    });
}

void session_impl::on_handle_created(_zhandle* zh, int err, const std::string& unresolved)
{
    if (!zh && !unresolved.empty()) {
        log->write(log_level::error, "cannot resolve ZooKeeper host '" + unresolved + "'");
        close(zklock::error::unresolvable_host);
        return;
    }
    if (!zh) {
        log->write(log_level::error, "cannot use ZooKeeper host string '" + cfg.hosts + "': " + std::strerror(err));
        close(err == EINVAL || err == 0 ? error_code(zklock::error::invalid_hosts)
                                        : error_code(err, boost::system::system_category()));
        return;
    }
    zh_ = zh;
    if (state != session_state::connecting) {  // closed while the handle was being made
        off_loop([zh = std::exchange(zh_, nullptr), lg = log] { close_handle(zh, lg); });
        return;
    }
    zoo_set_context(zh_, this);
    // Re-resolving the host names is a blocking getaddrinfo inside zookeeper_interest: do it only
    // when the handle was made (off the loop). Name changes need a new session.
    zoo_set_servers_resolution_delay(zh_, -1);
    {
        c_call scope(log.get());
        for (const auto& c : cfg.credentials)
            zoo_add_auth(zh_, c.scheme.c_str(), c.secret.data(), static_cast<int>(c.secret.size()), nullptr, nullptr);
    }
    pump();
}

void session_impl::set_state(session_state s)
{
    if (s == state) return;
    state = s;
    for (auto it = state_waiters_.begin(); it != state_waiters_.end();) {
        if (it->from != s) {
            post_completion(std::move(it->h), error_code{}, s);
            it = state_waiters_.erase(it);
        } else {
            ++it;
        }
    }
    if (!listeners_.empty())
        asio::post(ex, [w = weak_from_this(), s] {
            auto self = w.lock();
            if (!self) return;
            // Copy: a listener may unsubscribe itself or others.
            auto ls = self->listeners_;
            for (auto& [lid, fn] : ls)
                if (self->listeners_.count(lid)) fn(s);
        });
}

void session_impl::on_session_event(int zk_state)
{
    auto s = from_zk_state(zk_state);
    if (s == session_state::connected) {
        if (const clientid_t* cid = zoo_client_id(zh_)) id = cid->client_id;
        negotiated = std::chrono::milliseconds(zoo_recv_timeout(zh_));
        handshake_timer_.cancel();
        set_state(s);
        // A holder's touch may be stale after the reconnect. Posted: no request from inside the C client.
        if (keepalive_refs_ > 0)
            asio::post(ex, [w = weak_from_this()] {
                if (auto self = w.lock()) self->keepalive_tick();
            });
        if (connect_handler_) {
            connect_timer_.cancel();
            post_completion(std::move(connect_handler_), error_code{});
        }
        return;
    }
    if (is_final(s)) {
        // Leave zookeeper_process first: closing tears the handle down.
        asio::post(ex, [w = weak_from_this(), s] {
            if (auto self = w.lock())
                self->enter_final(s, s == session_state::expired ? error_code(zklock::error::session_expired)
                                                                 : error_code(zklock::error::auth_failed));
        });
        return;
    }
    if (state == session_state::connected) set_state(session_state::connecting);
}

void session_impl::enter_final(session_state s, error_code why)
{
    if (is_final(state)) return;
    char sid[32];
    std::snprintf(sid, sizeof sid, "0x%llx", static_cast<unsigned long long>(id));
    if (why == zklock::error::session_closed) log->write(log_level::info, std::string("ZooKeeper session ") + sid + " closed");
    else log->write(log_level::warning, std::string("ZooKeeper session ") + sid + " ended: " + why.message());

    set_state(s);
    connect_timer_.cancel();
    if (connect_handler_) post_completion(std::move(connect_handler_), why);

    // Answer everything that waits on the C client now; its own completions later only free memory.
    for (auto& [rid, r] : std::exchange(inflight_, {})) {
        r->fail(why);
        r->owner.reset();
    }
    for (auto& [wid, w] : std::exchange(watches_, {})) {
        w->at = watch_state::phase::failed;
        w->error = why;
        if (w->waiter) post_completion(std::move(w->waiter), why, watch_event{});
    }
    close_socket();
    timer_.cancel();
    keepalive_timer_.cancel();
    handshake_timer_.cancel();

    if (!zh_) {
        on_handle_closed();
        return;
    }
    zoo_set_context(zh_, nullptr);
    off_loop([zh = std::exchange(zh_, nullptr), lg = log, link = link_, w = weak_from_this()] {
        close_handle(zh, lg);
        link->post([w] {
            if (auto self = w.lock()) self->on_handle_closed();
        });
    });
}

void session_impl::on_handle_closed()
{
    close_finished_ = true;
    for (auto& h : std::exchange(close_waiters_, {})) post_completion(std::move(h), error_code{});
    close_work_.reset();
}

void session_impl::close(error_code why)
{
    if (is_final(state)) return;
    enter_final(session_state::closed, why);
}

void session_impl::close_and_wait(handler<> h)
{
    close();
    if (close_finished_) {
        post_completion(std::move(h), error_code{});
        return;
    }
    close_waiters_.push_back(std::move(h));
    if (!close_work_) close_work_.emplace(asio::prefer(ex, asio::execution::outstanding_work.tracked));
}

void session_impl::wait_state(session_state from, handler<session_state> h)
{
    if (state != from) {
        post_completion(std::move(h), error_code{}, state);
        return;
    }
    auto wid = next_state_waiter_++;
    if (auto slot = asio::get_associated_cancellation_slot(h); slot.is_connected())
        slot.assign([w = weak_from_this(), wid](asio::cancellation_type) {
            auto self = w.lock();
            if (!self) return;
            auto& ws = self->state_waiters_;
            auto it = std::find_if(ws.begin(), ws.end(), [&](const state_waiter& x) { return x.id == wid; });
            if (it == ws.end()) return;
            self->post_completion(std::move(it->h), error_code(asio::error::operation_aborted), self->state);
            ws.erase(it);
        });
    state_waiters_.push_back({wid, from, std::move(h)});
}

std::pair<std::int64_t, std::string> session_impl::credentials() const
{
    if (!zh_) return {id, {}};
    const clientid_t* cid = zoo_client_id(zh_);
    if (!cid || cid->client_id == 0) return {id, {}};
    return {cid->client_id, std::string(cid->passwd, sizeof cid->passwd)};
}

std::uint64_t session_impl::subscribe(std::function<void(session_state)> fn)
{
    auto token = next_listener_++;
    listeners_.emplace(token, std::move(fn));
    return token;
}

void session_impl::unsubscribe(std::uint64_t token) { listeners_.erase(token); }

std::chrono::milliseconds session_impl::loss_grace() const
{
    if (cfg.loss_grace) return *cfg.loss_grace;
    auto t = negotiated.count() > 0 ? negotiated : cfg.session_timeout;
    return t / 2;  // see session_config::loss_grace and docs/DESIGN.md, "Loss timing"
}

std::chrono::milliseconds session_impl::keepalive_interval() const
{
    auto t = negotiated.count() > 0 ? negotiated : cfg.session_timeout;
    return std::max(std::chrono::milliseconds(1), std::min(t / 6, loss_grace() / 3));
}

std::chrono::milliseconds session_impl::one_look_limit() const
{
    auto t = negotiated.count() > 0 ? negotiated : cfg.session_timeout;
    return std::min(std::chrono::milliseconds(1000), t / 4);
}

void session_impl::finished(request_base* r, bool answered)
{
    inflight_.erase(r->id);
    if (answered && r->sent_at > last_answered_send_) last_answered_send_ = r->sent_at;
}

// --- Keepalive ----------------------------------------------------------------------------------
// The C client pings only after a third of the timeout without traffic, and a follower passes touches to
// the leader only when the leader pings it: a lock holder needs fresher touches than that, and needs to
// know when they were made (the send time of an answered request), which the C client's pings never say.
void session_impl::retain_keepalive()
{
    if (keepalive_refs_++ == 0) keepalive_tick();
}

void session_impl::release_keepalive()
{
    if (keepalive_refs_ > 0 && --keepalive_refs_ == 0) keepalive_timer_.cancel();
}

void session_impl::keepalive_tick()
{
    if (keepalive_refs_ == 0 || is_final(state)) return;
    const auto now = std::chrono::steady_clock::now();
    const auto every = keepalive_interval();
    const auto due = last_answered_send_ + every;
    if (now >= due && !keepalive_in_flight_ && state == session_state::connected) {
        keepalive_in_flight_ = true;
        exists("/", nullptr, [w = weak_from_this()](error_code, std::optional<stat>) {
            if (auto self = w.lock()) {
                self->keepalive_in_flight_ = false;
                self->keepalive_tick();
            }
        });
    }
    keepalive_timer_.expires_at(now >= due ? now + every / 2 : due);
    keepalive_timer_.async_wait([w = weak_from_this()](error_code ec) {
        if (auto self = w.lock(); self && !ec) self->keepalive_tick();
    });
}

// --- Fault injection (testing/faults.hpp) -------------------------------------------------------
std::optional<session_impl::fault_plan> session_impl::take_fault(const char* kind, bool lose_answer)
{
    for (auto it = faults_.begin(); it != faults_.end(); ++it)
        if (it->kind == kind && it->lose_answer == lose_answer) {
            auto f = std::move(*it);
            faults_.erase(it);
            return f;
        }
    return std::nullopt;
}

void session_impl::drop_connection()
{
    // shutdown() acts on the socket, not the descriptor: our dup reaches the C client's socket.
    if (sock_.is_open()) ::shutdown(sock_.native_handle(), SHUT_RDWR);
    kick();
}

bool session_impl::delay_answer(const request_base& r)
{
    if (faults_.empty()) return false;
    auto f = take_fault(r.kind, false);
    if (!f) return false;
    drop_connection();
    if (f->then) f->then();
    return true;
}

// --- The pump -----------------------------------------------------------------------------------
// interest -> wait for the socket or the C client's timeout -> process -> interest ...
void session_impl::pump()
{
    if (!zh_ || is_final(state)) return;
    int fd = -1, interest = 0;
    timeval tv{};
    int rc;
    {
        c_call scope(log.get());
        rc = zookeeper_interest(zh_, &fd, &interest, &tv);
    }
    if (rc == ZINVALIDSTATE && leave_if_unrecoverable()) return;
    // ZCONNECTIONLOSS and ZOPERATIONTIMEOUT are transient: the C client reconnects on a later interest.
    sync_socket(fd);
    if (sock_.is_open()) {
        auto arm = [this](asio::posix::stream_descriptor::wait_type type, bool& armed, int event) {
            armed = true;
            sock_.async_wait(type, [self = shared_from_this(), gen = sock_gen_, &armed, event](error_code ec) {
                if (gen != self->sock_gen_) return;  // an old socket: its flags were reset when it was closed
                armed = false;
                if (!ec) self->process(event);
            });
        };
        if ((interest & ZOOKEEPER_READ) && !read_armed_) arm(asio::posix::stream_descriptor::wait_read, read_armed_, ZOOKEEPER_READ);
        if ((interest & ZOOKEEPER_WRITE) && !write_armed_) arm(asio::posix::stream_descriptor::wait_write, write_armed_, ZOOKEEPER_WRITE);
    }
    timer_.expires_after(std::chrono::seconds(tv.tv_sec) + std::chrono::microseconds(tv.tv_usec));
    timer_.async_wait([w = weak_from_this()](error_code ec) {
        if (ec) return;
        if (auto self = w.lock()) self->process(0);
    });
}

bool session_impl::leave_if_unrecoverable()
{
    const int zs = zoo_state(zh_);
    if (zs != ZOO_EXPIRED_SESSION_STATE && zs != ZOO_AUTH_FAILED_STATE) return false;
    enter_final(from_zk_state(zs), zs == ZOO_AUTH_FAILED_STATE ? error_code(zklock::error::auth_failed)
                                                               : error_code(zklock::error::session_expired));
    return true;
}

void session_impl::process(int events)
{
    if (!zh_ || is_final(state)) return;
    int rc;
    {
        c_call scope(log.get());
        rc = zookeeper_process(zh_, events);
    }
    // zookeeper_process also says ZINVALIDSTATE when it merely has no socket (between connection
    // attempts): only the handle's own state tells an expired session.
    if (rc == ZINVALIDSTATE && leave_if_unrecoverable()) return;
    pump();
}

// Several requests made in one handler share one pump pass; every zoo_a* may leave bytes unsent (or
// even close the socket), so the pump must look again.
void session_impl::kick()
{
    if (kick_posted_) return;
    kick_posted_ = true;
    asio::post(ex, [w = weak_from_this()] {
        if (auto self = w.lock()) {
            self->kick_posted_ = false;
            self->pump();
        }
    });
}

// The C client's socket changes on every reconnect and fd numbers are reused, so the socket is known
// by its inode, and Asio watches a dup() of it: closing our dup never closes ZooKeeper's socket, and
// deregistering it never touches a reused number.
void session_impl::sync_socket(int fd)
{
    if (fd < 0) {
        close_socket();
        return;
    }
    struct ::stat st{};
    if (::fstat(fd, &st) != 0) {
        close_socket();
        return;
    }
    if (sock_.is_open() && st.st_ino == sock_ino_) return;
    // The C client leaves its socket inheritable: a child process (zklock's COMMAND) must not get it.
    ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) | FD_CLOEXEC);
    close_socket();
    int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) return;
    error_code ec;
    sock_.assign(copy, ec);
    if (ec) {
        ::close(copy);
        return;
    }
    sock_ino_ = st.st_ino;
    if (state == session_state::connecting) watch_handshake();
}

void session_impl::watch_handshake()
{
    using namespace std::chrono_literals;
    const auto limit = std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(cfg.session_timeout / 3),
                                  std::chrono::milliseconds(200), std::chrono::milliseconds(2000));
    handshake_timer_.expires_after(limit);
    handshake_timer_.async_wait([w = weak_from_this(), gen = sock_gen_, limit](error_code ec) {
        auto self = w.lock();
        if (ec || !self || self->sock_gen_ != gen || self->state != session_state::connecting || !self->sock_.is_open())
            return;
        self->log->write(log_level::warning, "a ZooKeeper server accepted the connection but did not answer within " +
                                                 std::to_string(limit.count()) + " ms; trying the next one");
        self->drop_connection();
    });
}

void session_impl::close_socket()
{
    ++sock_gen_;
    read_armed_ = write_armed_ = false;
    if (sock_.is_open()) {
        error_code ignored;
        sock_.close(ignored);
    }
    sock_ino_ = 0;
}

// --- Operations ---------------------------------------------------------------------------------
void session_impl::track(request_base* r)
{
    r->id = next_request_++;
    inflight_.emplace(r->id, r);
    ++stats.requests;
}

void session_impl::cancel_request(std::uint64_t rid)
{
    if (auto it = inflight_.find(rid); it != inflight_.end()) it->second->fail(asio::error::operation_aborted);
}

template <class Request>
bool session_impl::submit(Request* r, int rc)
{
    if (rc != ZOK) {  // the C client refused the request; its completion will never run
        std::unique_ptr<Request> owned(r);
        error_code ec = zk_error(rc);
        // The handle learnt of its end before our state did (the session event is still on its way):
        // report the end itself, not the C client's "invalid state".
        if (rc == ZINVALIDSTATE && leave_if_unrecoverable()) ec = refusal();
        owned->fail(ec);
        return false;
    }
    track(r);
    bind_cancellation(r);
    kick();
    if (!faults_.empty())
        if (auto f = take_fault(r->kind, true)) {  // the request is on the wire (the st client flushes at once)
            drop_connection();
            if (f->then) f->then();
        }
    return true;
}

void session_impl::create(op::create c, handler<std::string, stat> h)
{
    if (auto ec = refusal(c.path, is_sequential(c.mode))) {
        post_completion(std::move(h), ec, std::string{}, stat{});
        return;
    }
    auto* r = new request<std::string, stat>("create");
    r->owner = shared_from_this();
    r->h = std::move(h);
    c_acl a(c.acl);
    int rc;
    {
        c_call scope(log.get());
        rc = zoo_acreate2(zh_, c.path.c_str(), c.data.data(), static_cast<int>(c.data.size()), &a.vec,
                          to_zk_mode(c.mode),
                          [](int rc2, const char* value, const struct Stat* st, const void* data) {
                              auto req = take<request<std::string, stat>>(data, rc2);
                              req->complete(zk_error(rc2), rc2 == ZOK && value ? std::string(value) : std::string{},
                                            to_stat(st));
                          },
                          r);
    }
    submit(r, rc);
}

void session_impl::remove(std::string path, int version, handler<> h)
{
    if (auto ec = refusal(path)) {
        post_completion(std::move(h), ec);
        return;
    }
    auto* r = new request<>("remove");
    r->owner = shared_from_this();
    r->h = std::move(h);
    int rc;
    {
        c_call scope(log.get());
        rc = zoo_adelete(zh_, path.c_str(), version,
                         [](int rc2, const void* data) { take<request<>>(data, rc2)->complete(zk_error(rc2)); }, r);
    }
    submit(r, rc);
}

void session_impl::sync(std::string path, handler<> h)
{
    if (auto ec = refusal(path)) {
        post_completion(std::move(h), ec);
        return;
    }
    auto* r = new request<>("sync");
    r->owner = shared_from_this();
    r->h = std::move(h);
    int rc;
    {
        c_call scope(log.get());
        rc = zoo_async(zh_, path.c_str(),
                       [](int rc2, const char*, const void* data) { take<request<>>(data, rc2)->complete(zk_error(rc2)); },
                       r);
    }
    submit(r, rc);
}

std::shared_ptr<watch_state> session_impl::prepare_watch(watch* w, const std::string& path, int kind)
{
    if (!w) return nullptr;
    auto st = std::make_shared<watch_state>();
    st->session = weak_from_this();
    st->id = next_watch_id_++;
    st->path = path;
    st->kind = kind;
    watches_.emplace(st->id, st);
    *w = watch{};  // drops whatever it watched before
    w->state_ = st;
    return st;
}

void session_impl::settle_watch(const std::shared_ptr<watch_state>& w, bool armed)
{
    if (!w || w->at != watch_state::phase::registering) return;
    if (armed) {
        w->at = watch_state::phase::armed;
        return;
    }
    // The read failed, so the C client did not keep the watcher.
    w->at = watch_state::phase::dropped;
    watches_.erase(w->id);
}

void session_impl::exists(std::string path, watch* w, handler<std::optional<stat>> h)
{
    if (auto ec = refusal(path)) {
        post_completion(std::move(h), ec, std::optional<stat>{});
        return;
    }
    using req_t = request<std::optional<stat>>;
    auto* r = new req_t("exists");
    r->owner = shared_from_this();
    r->h = std::move(h);
    r->watch = prepare_watch(w, path, ZWATCHTYPE_DATA);
    int rc;
    {
        c_call scope(log.get());
        rc = zoo_awexists(
            zh_, path.c_str(), r->watch ? node_watcher : nullptr,
            r->watch ? reinterpret_cast<void*>(static_cast<std::uintptr_t>(r->watch->id)) : nullptr,
            [](int rc2, const struct Stat* st, const void* data) {
                auto req = take<req_t>(data, rc2);
                // An exists watch is set whether or not the node exists (it then waits for its creation).
                if (req->owner) req->owner->settle_watch(req->watch, rc2 == ZOK || rc2 == ZNONODE);
                if (rc2 == ZNONODE) req->complete({}, std::nullopt);
                else req->complete(zk_error(rc2), rc2 == ZOK ? std::optional<stat>(to_stat(st)) : std::nullopt);
            },
            r);
    }
    if (rc != ZOK) settle_watch(r->watch, false);
    submit(r, rc);
}

void session_impl::get_data(std::string path, watch* w, handler<std::string, stat> h)
{
    if (auto ec = refusal(path)) {
        post_completion(std::move(h), ec, std::string{}, stat{});
        return;
    }
    using req_t = request<std::string, stat>;
    auto* r = new req_t("get_data");
    r->owner = shared_from_this();
    r->h = std::move(h);
    r->watch = prepare_watch(w, path, ZWATCHTYPE_DATA);
    int rc;
    {
        c_call scope(log.get());
        rc = zoo_awget(
            zh_, path.c_str(), r->watch ? node_watcher : nullptr,
            r->watch ? reinterpret_cast<void*>(static_cast<std::uintptr_t>(r->watch->id)) : nullptr,
            [](int rc2, const char* value, int len, const struct Stat* st, const void* data) {
                auto req = take<req_t>(data, rc2);
                if (req->owner) req->owner->settle_watch(req->watch, rc2 == ZOK);
                req->complete(zk_error(rc2),
                              rc2 == ZOK && value && len > 0 ? std::string(value, static_cast<std::size_t>(len))
                                                             : std::string{},
                              to_stat(st));
            },
            r);
    }
    if (rc != ZOK) settle_watch(r->watch, false);
    submit(r, rc);
}

void session_impl::get_children(std::string path, watch* w, handler<std::vector<std::string>, stat> h)
{
    if (auto ec = refusal(path)) {
        post_completion(std::move(h), ec, std::vector<std::string>{}, stat{});
        return;
    }
    using req_t = request<std::vector<std::string>, stat>;
    auto* r = new req_t("get_children");
    r->owner = shared_from_this();
    r->h = std::move(h);
    r->watch = prepare_watch(w, path, ZWATCHTYPE_CHILD);
    int rc;
    {
        c_call scope(log.get());
        rc = zoo_awget_children2(
            zh_, path.c_str(), r->watch ? node_watcher : nullptr,
            r->watch ? reinterpret_cast<void*>(static_cast<std::uintptr_t>(r->watch->id)) : nullptr,
            [](int rc2, const struct String_vector* names, const struct Stat* st, const void* data) {
                auto req = take<req_t>(data, rc2);
                if (req->owner) req->owner->settle_watch(req->watch, rc2 == ZOK);
                std::vector<std::string> out;
                if (rc2 == ZOK && names) {
                    out.reserve(static_cast<std::size_t>(names->count));
                    for (int i = 0; i < names->count; ++i) out.emplace_back(names->data[i]);
                }
                req->complete(zk_error(rc2), std::move(out), to_stat(st));
            },
            r);
    }
    if (rc != ZOK) settle_watch(r->watch, false);
    submit(r, rc);
}

void session_impl::set_data(std::string path, std::string data, int version, handler<stat> h)
{
    if (auto ec = refusal(path)) {
        post_completion(std::move(h), ec, stat{});
        return;
    }
    using req_t = request<stat>;
    auto* r = new req_t("set_data");
    r->owner = shared_from_this();
    r->h = std::move(h);
    int rc;
    {
        c_call scope(log.get());
        rc = zoo_aset(zh_, path.c_str(), data.data(), static_cast<int>(data.size()), version,
                      [](int rc2, const struct Stat* st, const void* d) {
                          take<req_t>(d, rc2)->complete(zk_error(rc2), to_stat(st));
                      },
                      r);
    }
    submit(r, rc);
}

void session_impl::multi(std::vector<multi_op> ops, handler<std::vector<multi_result>> h)
{
    error_code ec = refusal();
    for (const auto& o : ops) {
        if (ec) break;
        std::visit(
            [&](const auto& x) {
                bool seq = false;
                if constexpr (std::is_same_v<std::decay_t<decltype(x)>, op::create>) seq = is_sequential(x.mode);
                ec = refusal(x.path, seq);
            },
            o);
    }
    if (!ec && ops.empty()) {
        post_completion(std::move(h), error_code{}, std::vector<multi_result>{});
        return;
    }
    if (ec) {
        post_completion(std::move(h), ec, std::vector<multi_result>{});
        return;
    }
    using req_t = request<std::vector<multi_result>>;
    auto* r = new req_t("multi");
    r->owner = shared_from_this();
    r->h = std::move(h);
    const auto n = ops.size();
    r->ops.resize(n);
    r->results.resize(n);
    r->path_buffers.resize(n);
    r->acls.reserve(n);
    // The C client keeps pointers into the ops until the completion: the request owns their strings
    // (op_paths holds each op's path at 2i and its data at 2i+1).
    r->op_paths.resize(2 * n);
    for (std::size_t i = 0; i < n; ++i) {
        std::visit(
            [&](auto& x) {
                using T = std::decay_t<decltype(x)>;
                r->op_paths[2 * i] = x.path;
                const char* p = r->op_paths[2 * i].c_str();
                if constexpr (std::is_same_v<T, op::create>) {
                    r->op_paths[2 * i + 1] = x.data;
                    r->path_buffers[i].assign(x.path.size() + 32, '\0');
                    r->acls.emplace_back(x.acl);
                    zoo_create_op_init(&r->ops[i], p, r->op_paths[2 * i + 1].data(),
                                       static_cast<int>(r->op_paths[2 * i + 1].size()), &r->acls.back().vec,
                                       to_zk_mode(x.mode), r->path_buffers[i].data(),
                                       static_cast<int>(r->path_buffers[i].size()));
                } else if constexpr (std::is_same_v<T, op::remove>) {
                    zoo_delete_op_init(&r->ops[i], p, x.version);
                } else if constexpr (std::is_same_v<T, op::set_data>) {
                    r->op_paths[2 * i + 1] = x.data;
                    r->results[i].stat = nullptr;
                    zoo_set_op_init(&r->ops[i], p, r->op_paths[2 * i + 1].data(),
                                    static_cast<int>(r->op_paths[2 * i + 1].size()), x.version, nullptr);
                } else {
                    zoo_check_op_init(&r->ops[i], p, x.version);
                }
            },
            ops[i]);
    }
    int rc;
    {
        c_call scope(log.get());
        rc = zoo_amulti(zh_, static_cast<int>(n), r->ops.data(), r->results.data(),
                        [](int rc2, const void* d) {
                            auto req = take<req_t>(d, rc2);
                            std::vector<multi_result> out(req->results.size());
                            for (std::size_t i = 0; i < out.size(); ++i) {
                                out[i].ec = zk_error(req->results[i].err);
                                if (req->ops[i].type == ZOO_CREATE_OP && req->results[i].err == ZOK)
                                    out[i].path = req->path_buffers[i].data();
                            }
                            req->complete(zk_error(rc2), std::move(out));
                        },
                        r);
    }
    submit(r, rc);
}

// --- Watches ------------------------------------------------------------------------------------
void session_impl::on_watch_fired(std::uint64_t wid, int zk_type, const char* path)
{
    auto it = watches_.find(wid);
    if (it == watches_.end()) return;
    auto w = it->second;
    watches_.erase(it);
    ++stats.watch_events;
    w->at = watch_state::phase::fired;
    w->event.path = path ? path : "";
    if (zk_type == ZOO_CREATED_EVENT) w->event.type = watch_event_type::created;
    else if (zk_type == ZOO_DELETED_EVENT) w->event.type = watch_event_type::deleted;
    else if (zk_type == ZOO_CHANGED_EVENT) w->event.type = watch_event_type::data_changed;
    else w->event.type = watch_event_type::children_changed;
    if (w->waiter) post_completion(std::move(w->waiter), error_code{}, w->event);
}

void session_impl::wait_watch(const std::shared_ptr<watch_state>& w, handler<watch_event> h)
{
    switch (w->at) {
    case watch_state::phase::fired: post_completion(std::move(h), error_code{}, w->event); return;
    case watch_state::phase::failed: post_completion(std::move(h), w->error, watch_event{}); return;
    case watch_state::phase::dropped:
        post_completion(std::move(h), error_code(asio::error::operation_aborted), watch_event{});
        return;
    default: break;
    }
    if (w->waiter) post_completion(std::move(w->waiter), error_code(asio::error::operation_aborted), watch_event{});
    w->waiter = std::move(h);
    const auto seq = ++w->waiter_seq;
    if (auto slot = asio::get_associated_cancellation_slot(w->waiter); slot.is_connected())
        slot.assign([wp = std::weak_ptr<watch_state>(w), seq](asio::cancellation_type) {
            auto st = wp.lock();
            if (!st || st->waiter_seq != seq) return;  // a later waiter replaced the one this slot was for
            if (auto s = st->session.lock())
                s->post_completion(std::move(st->waiter), error_code(asio::error::operation_aborted), watch_event{});
        });
}

void session_impl::drop_watch(const std::shared_ptr<watch_state>& w)
{
    const bool live = w->at == watch_state::phase::armed || w->at == watch_state::phase::registering;
    w->at = watch_state::phase::dropped;
    if (w->waiter) post_completion(std::move(w->waiter), error_code(asio::error::operation_aborted), watch_event{});
    if (!live || !watches_.erase(w->id) || !zh_ || is_final(state)) return;
    // Forget it in the client only (local = 1). ZooKeeper 3.8's C client cannot remove a watch from the
    // server: asked to (local = 0), it sends a checkWatches request and then forgets the watch locally,
    // so the server keeps the one-shot watch until the node changes or the session ends. It is then
    // delivered to an id we no longer know, and ignored.
    c_call scope(log.get());
    zoo_aremove_watches(zh_, w->path.c_str(), static_cast<ZooWatcherType>(w->kind), node_watcher,
                        reinterpret_cast<void*>(static_cast<std::uintptr_t>(w->id)), 1, nullptr, nullptr);
}

}  // namespace zklock::detail

// --- The public handles -------------------------------------------------------------------------
namespace zklock {

session::session(executor_type ex, session_config config)
    : impl_(std::make_shared<detail::session_impl>(std::move(ex), std::move(config)))
{
}

session& session::operator=(session&& other) noexcept
{
    if (this != &other) {
        if (impl_) {
            impl_->close();
            impl_->detach_helpers();
        }
        impl_ = std::move(other.impl_);
    }
    return *this;
}

session::~session()
{
    if (impl_) {
        impl_->close();
        impl_->detach_helpers();
    }
}

session::executor_type session::get_executor() const noexcept { return impl_->ex; }
const session_config& session::config() const noexcept { return impl_->cfg; }
session_state session::state() const noexcept { return impl_->state; }
std::int64_t session::id() const noexcept { return impl_->id; }
std::chrono::milliseconds session::negotiated_timeout() const noexcept { return impl_->negotiated; }
std::string session::hosts() const
{
    const auto& h = impl_->cfg.hosts;
    return h.substr(0, h.find('/'));
}
void session::close() noexcept { impl_->close(); }
session_stats session::stats() const noexcept { return impl_->stats; }

bool watch::armed() const noexcept
{
    return state_ && state_->at == detail::watch_state::phase::armed;
}

namespace detail {
void async_connect(const std::shared_ptr<session_impl>& s, handler<> h) { s->connect(std::move(h)); }
void async_close(const std::shared_ptr<session_impl>& s, handler<> h) { s->close_and_wait(std::move(h)); }
void async_wait_state(const std::shared_ptr<session_impl>& s, session_state from, handler<session_state> h)
{
    s->wait_state(from, std::move(h));
}
void async_create(const std::shared_ptr<session_impl>& s, op::create r, handler<std::string, stat> h)
{
    s->create(std::move(r), std::move(h));
}
void async_remove(const std::shared_ptr<session_impl>& s, std::string path, int version, handler<> h)
{
    s->remove(std::move(path), version, std::move(h));
}
void async_exists(const std::shared_ptr<session_impl>& s, std::string path, watch* w, handler<std::optional<stat>> h)
{
    s->exists(std::move(path), w, std::move(h));
}
void async_get_data(const std::shared_ptr<session_impl>& s, std::string path, watch* w, handler<std::string, stat> h)
{
    s->get_data(std::move(path), w, std::move(h));
}
void async_get_children(const std::shared_ptr<session_impl>& s, std::string path, watch* w,
                        handler<std::vector<std::string>, stat> h)
{
    s->get_children(std::move(path), w, std::move(h));
}
void async_set_data(const std::shared_ptr<session_impl>& s, std::string path, std::string data, int version,
                    handler<stat> h)
{
    s->set_data(std::move(path), std::move(data), version, std::move(h));
}
void async_multi(const std::shared_ptr<session_impl>& s, std::vector<multi_op> ops, handler<std::vector<multi_result>> h)
{
    s->multi(std::move(ops), std::move(h));
}
void async_wait_watch(std::shared_ptr<watch_state> w, handler<watch_event> h)
{
    auto s = w ? w->session.lock() : nullptr;
    if (!s) {  // never armed, or its session is gone
        complete_without_session(std::move(h), error_code(zklock::error::watch_not_armed), watch_event{});
        return;
    }
    s->wait_watch(w, std::move(h));
}

void drop_watch(const std::shared_ptr<watch_state>& w) noexcept
{
    if (!w) return;
    if (auto s = w->session.lock()) s->drop_watch(w);
}
}  // namespace detail
}  // namespace zklock
