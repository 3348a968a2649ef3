// The wrapper around ZooKeeper's single-threaded C client (see c_client.hpp).
#include "c_client.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

namespace zklock::detail {

std::mutex& c_client_mutex()
{
    static std::mutex m;
    return m;
}

// --- Logging ------------------------------------------------------------------------------------
namespace {

thread_local const log_target* current_log = nullptr;

// The C client's level is process-wide, and its st build formats every line into static buffers. It
// starts at INFO: turn it off until a session with a log sink asks for it, then raise it to the most
// talkative session's threshold and filter per session. Guarded by c_client_mutex().
std::atomic<int> c_log_level{-1};

}  // namespace

log_scope::log_scope(const log_target* t) : saved(current_log) { current_log = t; }
log_scope::~log_scope() { current_log = saved; }

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
// zk_errc (public, and the pure core's) names zookeeper.h's codes without including it.
static_assert(static_cast<int>(zk_errc::runtime_inconsistency) == ZRUNTIMEINCONSISTENCY);
static_assert(static_cast<int>(zk_errc::connection_loss) == ZCONNECTIONLOSS);
static_assert(static_cast<int>(zk_errc::marshalling_error) == ZMARSHALLINGERROR);
static_assert(static_cast<int>(zk_errc::operation_timeout) == ZOPERATIONTIMEOUT);
static_assert(static_cast<int>(zk_errc::bad_arguments) == ZBADARGUMENTS);
static_assert(static_cast<int>(zk_errc::invalid_state) == ZINVALIDSTATE);
static_assert(static_cast<int>(zk_errc::no_node) == ZNONODE);
static_assert(static_cast<int>(zk_errc::no_auth) == ZNOAUTH);
static_assert(static_cast<int>(zk_errc::bad_version) == ZBADVERSION);
static_assert(static_cast<int>(zk_errc::no_children_for_ephemerals) == ZNOCHILDRENFOREPHEMERALS);
static_assert(static_cast<int>(zk_errc::node_exists) == ZNODEEXISTS);
static_assert(static_cast<int>(zk_errc::not_empty) == ZNOTEMPTY);
static_assert(static_cast<int>(zk_errc::session_expired) == ZSESSIONEXPIRED);
static_assert(static_cast<int>(zk_errc::invalid_acl) == ZINVALIDACL);
static_assert(static_cast<int>(zk_errc::auth_failed) == ZAUTHFAILED);
static_assert(static_cast<int>(zk_errc::closing) == ZCLOSING);
static_assert(static_cast<int>(zk_errc::session_moved) == ZSESSIONMOVED);
static_assert(static_cast<int>(zk_errc::not_read_only) == ZNOTREADONLY);
static_assert(static_cast<int>(zk_errc::no_watcher) == ZNOWATCHER);
static_assert(static_cast<int>(zk_errc::throttled_op) == ZTHROTTLEDOP);

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

c_acl::c_acl(const acl& a)
{
    entries.reserve(a.size());
    for (const auto& e : a)
        entries.push_back(ACL{e.perms, Id{const_cast<char*>(e.scheme.c_str()), const_cast<char*>(e.id.c_str())}});
    vec.count = static_cast<int32_t>(entries.size());
    vec.data = entries.data();
}

session_state from_zk_state(int s) noexcept
{
    if (s == ZOO_CONNECTED_STATE || s == ZOO_READONLY_STATE) return session_state::connected;
    if (s == ZOO_EXPIRED_SESSION_STATE) return session_state::expired;
    if (s == ZOO_AUTH_FAILED_STATE) return session_state::auth_failed;
    return session_state::connecting;
}

// --- Helper threads -----------------------------------------------------------------------------
helper_threads& helper_threads::instance()
{
    static helper_threads h;
    return h;
}

helper_threads::~helper_threads()
{
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& t : threads_) t.thread.join();
}

// The C client re-resolves its host names after every failed connection attempt, with a blocking
// getaddrinfo inside zookeeper_interest, on the event loop (zoo_set_servers_resolution_delay does not stop
// that). So names are resolved here, on a helper thread, and the C client gets address literals: when the
// session starts, and again while it is disconnected (session_impl::follow_names). A name that does not
// resolve is skipped and named (as ZooKeeper's Java client does); with none left the session cannot start.
namespace {

// getaddrinfo's answer for one entry, as address literals with the port ("[v6]:port" for IPv6).
std::vector<std::string> system_resolve(const std::string& host, const std::string& port)
{
    std::vector<std::string> out;
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0) return out;
    for (auto* a = res; a; a = a->ai_next) {
        char text[INET6_ADDRSTRLEN] = {};
        const void* addr = a->ai_family == AF_INET6
                               ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr)
                               : static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr);
        if (!::inet_ntop(a->ai_family, addr, text, sizeof text)) continue;
        out.push_back(a->ai_family == AF_INET6 ? "[" + std::string(text) + "]:" + port : text + (":" + port));
    }
    ::freeaddrinfo(res);
    return out;
}

}  // namespace

std::string addresses_of(const std::string& list) { return list.substr(0, list.find('/')); }

resolved_hosts resolve_hosts(const std::string& hosts, const zklock::host_resolver& resolver)
{
    resolved_hosts out;
    const auto slash = hosts.find('/');
    std::string_view list(hosts);
    list = list.substr(0, slash);
    while (!list.empty()) {
        auto entry = list.substr(0, list.find(','));
        list.remove_prefix(std::min(list.size(), entry.size() + 1));
        const auto colon = entry.rfind(':');
        std::string host(entry.substr(0, colon));
        const std::string port(entry.substr(colon + 1));
        if (host.size() > 1 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
        std::vector<std::string> literals;
        try {
            literals = resolver ? resolver(host, port) : system_resolve(host, port);
        } catch (...) {  // a user's resolver that throws: the name does not resolve
            literals.clear();
        }
        if (literals.empty()) {
            out.unresolved += (out.unresolved.empty() ? "" : ", ") + host;
            continue;
        }
        for (const auto& literal : literals) {
            if (literal.empty()) continue;
            // One name may list an address twice.
            if (("," + out.list + ",").find("," + literal + ",") != std::string::npos) continue;
            out.list += (out.list.empty() ? "" : ",") + literal;
        }
    }
    if (!out.list.empty() && slash != std::string::npos) out.list += hosts.substr(slash);
    return out;
}

// zookeeper_close may wait 4.5 s for a silent server (3 s to flush, 1.5 s for the answer): never on the
// event loop, and without the process-wide mutex, or every other session's pump would wait for it. What
// it touches that other handles share is harmless unlocked: the request-id counter (a duplicate id is
// harmless, answers are matched per handle in order) and, only when logging is on, the static log
// buffers; then it keeps the mutex, so that no log line is garbled.
namespace {
// Reads until the peer closes, an error, or `deadline`; then closes `fd` (see close_handle). True when the
// peer closed its end: the server does once it has ended the session.
bool read_to_end_and_close(int fd, std::chrono::steady_clock::time_point deadline)
{
    char sink[4096];
    bool peer_closed = false;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        ::pollfd p{fd, POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(std::max<std::chrono::milliseconds::rep>(left.count(), 0)));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) break;  // the time is up, or poll failed
        const auto n = ::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n > 0) continue;
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        peer_closed = n == 0;
        break;  // the server closed its end, or the connection failed
    }
    ::close(fd);
    return peer_closed;
}
}  // namespace

bool close_handle(zhandle_t* zh, const std::shared_ptr<const log_target>& lg, int connection)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
    bool sent = false;
    {
        log_scope scope(lg.get());
        std::unique_lock<std::mutex> lock(c_client_mutex(), std::defer_lock);
        if (c_log_level.load() > 0) lock.lock();
        // zookeeper_close says ZOK without sending anything when the handle is not connected, and also when
        // no answer came in time: only the server closing its end (read below) says it ended the session.
        const bool connected = zoo_state(zh) == ZOO_CONNECTED_STATE;
        sent = zookeeper_close(zh) == ZOK && connected;
    }
    if (connection < 0) return false;  // no connection: nothing was sent
    return read_to_end_and_close(connection, deadline) && sent;
}

}  // namespace zklock::detail
