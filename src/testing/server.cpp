// Runs Debian's ZooKeeper 3.8.0 (QuorumPeerMain) as child processes on loopback for tests.
//
// Port safety: a port is "ours" while we hold an flock on /tmp/zklock-ports/<port>. Every harness in
// every test binary goes through that lock, so two harnesses never pick the same port even though the
// JVM binds it only a second later. A foreign process can still take a port in that window; then the
// JVM dies with "Address already in use" and the constructor retries with fresh ports.
//
// Process lifetime: the JVMs are forked on one process-lifetime launcher thread (launcher.cpp) and die
// with the test process (PR_SET_PDEATHSIG), never with the thread that started them. So any thread may
// construct a server or cluster and stop or start its members; waitpid works from any thread of the process.
#include "zklock/testing/server.hpp"

#include "launcher.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>

namespace zklock::testing {
namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;
constexpr auto poll_interval = std::chrono::milliseconds(50);
constexpr const char* java_binary = "/usr/bin/java";
constexpr const char* port_lock_dir = "/tmp/zklock-ports";

[[noreturn]] void throw_errno(const std::string& what) {
    throw std::system_error(errno, std::generic_category(), what);
}

/// Owns a file descriptor.
class unique_fd {
public:
    unique_fd() = default;
    explicit unique_fd(int fd) : fd_(fd) {}
    unique_fd(unique_fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    unique_fd& operator=(unique_fd&& other) noexcept {
        if (this != &other) {
            reset();
            fd_ = std::exchange(other.fd_, -1);
        }
        return *this;
    }
    ~unique_fd() { reset(); }
    int get() const { return fd_; }
    void reset() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

private:
    int fd_ = -1;
};

/// A loopback port held for us by an flock (released when the fd closes, even if we crash).
struct port_lease {
    std::uint16_t port = 0;
    unique_fd lock;
};

unique_fd bind_ephemeral_port() {
    unique_fd sock(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (sock.get() < 0) throw_errno("socket");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw_errno("bind");
    return sock;
}

std::uint16_t local_port(int sock) {
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    if (::getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &len) != 0) throw_errno("getsockname");
    return ntohs(addr.sin_port);
}

port_lease reserve_port() {
    // World-writable and sticky, so harnesses run by different users share the registry. The lock
    // files are never unlinked: unlinking a file someone else may be about to flock breaks the scheme.
    if (::mkdir(port_lock_dir, 01777) == 0) ::chmod(port_lock_dir, 01777);
    // Bound sockets are kept open until we are done so the kernel does not hand us the same port again.
    std::vector<unique_fd> probes;
    for (int attempt = 0; attempt < 100; ++attempt) {
        unique_fd sock = bind_ephemeral_port();
        const std::uint16_t port = local_port(sock.get());
        probes.push_back(std::move(sock));
        const std::string path = std::string(port_lock_dir) + "/" + std::to_string(port);
        unique_fd lock(::open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0666));
        if (lock.get() < 0) continue;  // e.g. another user's file we cannot read: treat as taken
        if (::flock(lock.get(), LOCK_EX | LOCK_NB) == 0) return port_lease{port, std::move(lock)};
    }
    throw std::runtime_error("zklock::testing: could not reserve a free loopback port");
}

std::string tail_lines(const fs::path& file, std::size_t count) {
    std::ifstream in(file);
    std::deque<std::string> lines;
    for (std::string line; std::getline(in, line);) {
        lines.push_back(std::move(line));
        if (lines.size() > count) lines.pop_front();
    }
    std::string out;
    for (const auto& line : lines) out += line + '\n';
    return out;
}

bool file_contains(const fs::path& file, const std::string& needle) {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);)
        if (line.find(needle) != std::string::npos) return true;
    return false;
}

/// A mkdtemp directory, removed with everything in it on destruction.
struct temp_dir {
    fs::path path;

    temp_dir() = default;
    temp_dir(fs::path root, const char* prefix) {
        if (root.empty()) {
            const char* tmp = std::getenv("TMPDIR");
            root = (tmp && *tmp) ? tmp : "/tmp";
        }
        fs::create_directories(root);
        std::string pattern = (root / (std::string(prefix) + "XXXXXX")).string();
        if (::mkdtemp(pattern.data()) == nullptr) throw_errno("mkdtemp " + pattern);
        path = pattern;
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    ~temp_dir() {
        std::error_code ignored;
        if (!path.empty()) fs::remove_all(path, ignored);
    }
};

/// Readiness probes give up quickly: ZooKeeper 3.8.0 listens before its database is loaded, and a
/// four-letter word arriving in that window hits a NullPointerException that leaves the connection open
/// (until the 10 s sessionless-connection timeout). The next probe, 50 ms later, then gets a real answer.
constexpr auto probe_timeout = std::chrono::milliseconds(500);

std::string send_four_letter(std::uint16_t port, const std::string& command,
                             std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    const auto deadline = clock_type::now() + timeout;
    auto wait_for = [&](int fd, short events) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
        if (left.count() <= 0) return false;
        pollfd p{fd, events, 0};
        return ::poll(&p, 1, static_cast<int>(left.count())) == 1;
    };

    unique_fd sock(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (sock.get() < 0) return "";
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        if (errno != EINPROGRESS || !wait_for(sock.get(), POLLOUT)) return "";
        int error = 0;
        socklen_t len = sizeof error;
        if (::getsockopt(sock.get(), SOL_SOCKET, SO_ERROR, &error, &len) != 0 || error != 0) return "";
    }
    // MSG_NOSIGNAL: a server dying mid-command must not SIGPIPE the test binary.
    std::size_t sent = 0;
    while (sent < command.size()) {
        const auto n = ::send(sock.get(), command.data() + sent, command.size() - sent, MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<std::size_t>(n);
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (!wait_for(sock.get(), POLLOUT)) return "";
        } else {
            return "";
        }
    }
    std::string answer;
    char buffer[4096];
    for (;;) {
        const auto n = ::recv(sock.get(), buffer, sizeof buffer, 0);
        if (n > 0) {
            answer.append(buffer, static_cast<std::size_t>(n));
        } else if (n == 0) {
            break;
        } else if (errno == EAGAIN || errno == EINTR) {
            if (!wait_for(sock.get(), POLLIN)) break;
        } else {
            break;
        }
    }
    return answer;
}

/// One QuorumPeerMain process with its own directory, config and ports.
struct member {
    int id = 0;  // the myid, 1-based
    fs::path dir;
    port_lease client, peer, election;
    pid_t pid = -1;

    fs::path log_file() const { return dir / "server.log"; }
    fs::path config_file() const { return dir / "zoo.cfg"; }

    bool alive() {
        if (pid <= 0) return false;
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid) pid = -1;  // reaped: it died on its own
        return pid > 0;
    }

    /// SIGSTOP, and wait until the kernel reports every thread stopped, so that no request sent after
    /// freeze() returns is served (SIGSTOP takes effect asynchronously).
    void freeze() {
        if (!alive()) return;
        ::kill(pid, SIGSTOP);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        const fs::path tasks = fs::path("/proc") / std::to_string(pid) / "task";
        while (std::chrono::steady_clock::now() < deadline) {
            bool all_stopped = true;
            std::error_code ec;
            for (const auto& t : fs::directory_iterator(tasks, ec)) {
                std::ifstream stat_file(t.path() / "stat");
                std::string line;
                std::getline(stat_file, line);
                const auto close = line.rfind(')');  // the state follows the parenthesised command name
                if (close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'T') {
                    all_stopped = false;
                    break;
                }
            }
            if (all_stopped) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));  // polling interval within the deadline
        }
    }

    void thaw() {
        if (alive()) ::kill(pid, SIGCONT);
    }

    void kill() {
        if (pid <= 0) return;
        ::kill(pid, SIGKILL);
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        pid = -1;
    }

    void spawn(const fs::path& log4j_config) {
        const std::vector<std::string> args = {
            java_binary,
            "-Xms64m",
            "-Xmx256m",
            // No /tmp/hsperfdata_* files: many JVMs in parallel test runs need not leave them behind.
            "-XX:+PerfDisableSharedMem",
            "-Djava.net.preferIPv4Stack=true",
            // Debian's classpath (zookeeper.jar's manifest, zkEnv.sh) has no SLF4J binding, so the server
            // would log nothing at all; we add log4j 1.2 and our own config so the log tail means something.
            "-Dlog4j.configuration=file:" + log4j_config.string(),
            "-cp",
            "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar",
            "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            config_file().string(),
        };
        std::vector<char*> argv;
        for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
        argv.push_back(nullptr);
        unique_fd log(::open(log_file().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
        if (log.get() < 0) throw_errno("open " + log_file().string());
        pid = detail::spawn_process(argv.data(), log.get());  // forked on the launcher thread
    }
};

/// Thrown when a member died because another process took one of its ports; worth a retry.
struct port_conflict : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// N members sharing one temporary directory. N == 1 is a standalone server (no server.N lines).
struct ensemble {
    server_options options;
    temp_dir root;
    std::optional<temp_dir> log_root;  // only with options.data_log_root
    std::vector<member> members;

    // If this throws half-way, the subobjects clean up: no process has been spawned yet.
    ensemble(std::size_t size, server_options opts)
        : options(std::move(opts)), root(options.work_root, "zklock-zk-") {
        if (!options.data_log_root.empty()) log_root.emplace(options.data_log_root, "zklock-zklog-");
        members.resize(size);
        for (std::size_t i = 0; i < size; ++i) {
            member& m = members[i];
            m.id = static_cast<int>(i + 1);
            m.dir = root.path / ("member" + std::to_string(m.id));
            m.client = reserve_port();
            if (size > 1) {
                m.peer = reserve_port();
                m.election = reserve_port();
            }
        }
        for (auto& m : members) write_config(m);
        std::ofstream(log4j_config()) << "log4j.rootLogger=INFO, CONSOLE\n"
                                         "log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender\n"
                                         "log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout\n"
                                         "log4j.appender.CONSOLE.layout.ConversionPattern="
                                         "%d{ISO8601} %-5p [%t:%C{1}@%L] %m%n\n";
    }

    fs::path log4j_config() const { return root.path / "log4j.properties"; }
    void spawn(std::size_t i) { members[i].spawn(log4j_config()); }

    ~ensemble() {
        for (auto& m : members) m.kill();  // before the directories go away (members are destroyed first)
    }

    ensemble(const ensemble&) = delete;
    ensemble& operator=(const ensemble&) = delete;

    void write_config(const member& m) const {
        const fs::path data = m.dir / "data";
        fs::create_directories(data);
        std::ofstream cfg(m.config_file());
        cfg << "tickTime=" << options.tick_ms << '\n'
            << "dataDir=" << data.string() << '\n'
            << "clientPort=" << m.client.port << '\n'
            << "clientPortAddress=127.0.0.1\n"
            << "admin.enableServer=false\n"
            << "4lw.commands.whitelist=*\n"
            << "maxClientCnxns=0\n";
        if (log_root) {
            const fs::path data_log = log_root->path / ("member" + std::to_string(m.id));
            fs::create_directories(data_log);
            cfg << "dataLogDir=" << data_log.string() << '\n';
        }
        if (members.size() > 1) {
            cfg << "initLimit=50\nsyncLimit=25\n";
            for (const auto& other : members)
                cfg << "server." << other.id << "=127.0.0.1:" << other.peer.port << ':' << other.election.port
                    << '\n';
            std::ofstream(data / "myid") << m.id << '\n';
        }
        if (!cfg.flush()) throw std::runtime_error("zklock::testing: cannot write " + m.config_file().string());
    }

    /// Waits until every listed member answers `srvr` with a Mode: line. A member whose quorum is not
    /// up answers "not currently serving requests" instead, so this also means "has joined a quorum".
    void wait_serving(const std::vector<std::size_t>& which) {
        const auto deadline = clock_type::now() + options.start_timeout;
        std::vector<std::size_t> pending = which;
        for (;;) {
            std::erase_if(pending, [&](std::size_t i) {
                member& m = members[i];
                if (!m.alive()) fail(m, "exited during startup");
                return send_four_letter(m.client.port, "srvr", probe_timeout).find("Mode:") != std::string::npos;
            });
            if (pending.empty()) return;
            if (clock_type::now() >= deadline) fail(members[pending.front()], "did not answer srvr in time");
            std::this_thread::sleep_for(poll_interval);
        }
    }

    [[noreturn]] void fail(member& m, const std::string& why) {
        m.kill();
        const std::string message = "zklock::testing: ZooKeeper member " + std::to_string(m.id) + " on port " +
                                    std::to_string(m.client.port) + " " + why + "; its log ends with:\n" +
                                    tail_lines(m.log_file(), 20);
        if (file_contains(m.log_file(), "Address already in use")) throw port_conflict(message);
        throw std::runtime_error(message);
    }

    std::optional<std::size_t> find_leader() const {
        for (std::size_t i = 0; i < members.size(); ++i) {
            if (members[i].pid <= 0) continue;
            const std::string answer = send_four_letter(members[i].client.port, "srvr", probe_timeout);
            if (answer.find("Mode: leader") != std::string::npos) return i;
        }
        return std::nullopt;
    }

    std::size_t wait_leader(std::chrono::milliseconds timeout) const {
        const auto deadline = clock_type::now() + timeout;
        for (;;) {
            if (auto found = find_leader()) return *found;
            if (clock_type::now() >= deadline) throw std::runtime_error("zklock::testing: no ZooKeeper leader");
            std::this_thread::sleep_for(poll_interval);
        }
    }

    std::string connect_string() const {
        std::string out;
        for (const auto& m : members) {
            if (!out.empty()) out += ',';
            out += "127.0.0.1:" + std::to_string(m.client.port);
        }
        return out;
    }

    member& at(std::size_t i) {
        if (i >= members.size()) throw std::out_of_range("zklock::testing: no such ensemble member");
        return members[i];
    }
    const member& at(std::size_t i) const {
        if (i >= members.size()) throw std::out_of_range("zklock::testing: no such ensemble member");
        return members[i];
    }
};

/// Builds and starts an ensemble, starting over with fresh ports if a foreign process took one.
std::unique_ptr<ensemble> launch(std::size_t size, const server_options& options) {
    for (int attempt = 1;; ++attempt) {
        auto e = std::make_unique<ensemble>(size, options);
        std::vector<std::size_t> all;
        for (std::size_t i = 0; i < size; ++i) {
            e->spawn(i);  // all at once: an ensemble member cannot serve until a quorum is up
            all.push_back(i);
        }
        try {
            e->wait_serving(all);
            if (size > 1) e->wait_leader(options.start_timeout);
            return e;
        } catch (const port_conflict&) {
            if (attempt == 3) throw;
        }
    }
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------------

struct server::impl {
    std::unique_ptr<ensemble> zk;
};

server::server(server_options options) : impl_(std::make_unique<impl>()) {
    impl_->zk = launch(1, options);
}
server::~server() = default;

std::string server::connect_string() const { return impl_->zk->connect_string(); }
std::uint16_t server::port() const { return impl_->zk->members[0].client.port; }
void server::stop() { impl_->zk->members[0].kill(); }
void server::start() {
    if (impl_->zk->members[0].alive()) return;
    impl_->zk->spawn(0);
    impl_->zk->wait_serving({0});
}
bool server::running() const { return impl_->zk->members[0].alive(); }
void server::freeze() { impl_->zk->members[0].freeze(); }
void server::thaw() { impl_->zk->members[0].thaw(); }
std::string server::four_letter(const std::string& command) const {
    return send_four_letter(port(), command);
}

// ---------------------------------------------------------------------------------------------------------------

struct cluster::impl {
    std::unique_ptr<ensemble> zk;
};

cluster::cluster(std::size_t size, server_options options) : impl_(std::make_unique<impl>()) {
    if (size == 0) throw std::invalid_argument("zklock::testing::cluster: size must be at least 1");
    impl_->zk = launch(size, options);
}
cluster::~cluster() = default;

std::string cluster::connect_string() const { return impl_->zk->connect_string(); }
std::size_t cluster::size() const { return impl_->zk->members.size(); }
std::uint16_t cluster::client_port(std::size_t member) const { return impl_->zk->at(member).client.port; }
void cluster::stop(std::size_t member) { impl_->zk->at(member).kill(); }
void cluster::start(std::size_t member) {
    if (impl_->zk->at(member).alive()) return;
    impl_->zk->spawn(member);
    impl_->zk->wait_serving({member});
}
bool cluster::running(std::size_t member) const { return impl_->zk->at(member).alive(); }
void cluster::freeze(std::size_t member) { impl_->zk->at(member).freeze(); }
void cluster::thaw(std::size_t member) { impl_->zk->at(member).thaw(); }
std::size_t cluster::leader(std::chrono::milliseconds timeout) const { return impl_->zk->wait_leader(timeout); }
std::string cluster::four_letter(std::size_t member, const std::string& command) const {
    return send_four_letter(impl_->zk->at(member).client.port, command);
}

}  // namespace zklock::testing
