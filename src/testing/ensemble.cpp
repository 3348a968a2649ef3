#include "ensemble.hpp"

#include "four_letter.hpp"

#include <deque>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <utility>

namespace zklock::testing::detail {
namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;
constexpr auto poll_interval = std::chrono::milliseconds(50);

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

/// Thrown when a member died because another process took one of its ports; worth a retry.
struct port_conflict : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace

// If this throws half-way, the subobjects clean up: no process has been spawned yet.
ensemble::ensemble(std::size_t size, server_options opts, const network* on)
    : options(std::move(opts)), net(on), root(options.work_root, "zklock-zk-") {
    if (!options.data_log_root.empty()) log_root.emplace(options.data_log_root, "zklock-zklog-");
    members.resize(size);
    for (std::size_t i = 0; i < size; ++i) {
        member& m = members[i];
        m.id = static_cast<int>(i + 1);
        m.dir = root.path / ("member" + std::to_string(m.id));
        if (net) {  // a host of its own: nothing else listens there
            m.client.port = 2181;
            m.peer.port = 2888;
            m.election.port = 3888;
            m.address = net->address(i);
            m.netns_fd = net->namespace_fd(i);
            continue;
        }
        m.client = reserve_port();
        if (size > 1) {
            m.peer = reserve_port();
            m.election = reserve_port();
        }
    }
    if (options.tls_only) {
        if (size != 1 || net) throw std::invalid_argument("zklock::testing: tls_only is for a testing::server");
        tls = make_tls_files(root.path / "tls");
    }
    for (auto& m : members) write_config(m);
    std::ofstream(log4j_config()) << "log4j.rootLogger=INFO, CONSOLE\n"
                                     "log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender\n"
                                     "log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout\n"
                                     "log4j.appender.CONSOLE.layout.ConversionPattern="
                                     "%d{ISO8601} %-5p [%t:%C{1}@%L] %m%n\n";
}

ensemble::~ensemble() {
    for (auto& m : members) m.kill();  // before the directories go away (members are destroyed first)
}

void ensemble::write_config(const member& m) const {
    const fs::path data = m.dir / "data";
    fs::create_directories(data);
    std::ofstream cfg(m.config_file());
    cfg << "tickTime=" << options.tick_ms << '\n'
        << "dataDir=" << data.string() << '\n'
        << "admin.enableServer=false\n"
        << "4lw.commands.whitelist=*\n"
        << "maxClientCnxns=0\n";
    if (tls) {  // the secure port alone: a client that speaks plain ZooKeeper to it is refused
        cfg << "secureClientPort=" << m.client.port << "\nsecureClientPortAddress=127.0.0.1\n"
            << "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n"
            << "ssl.keyStore.location=" << tls->keystore.string() << "\nssl.keyStore.type=PKCS12\n"
            << "ssl.keyStore.password=" << tls->password << "\nssl.clientAuth=none\n";
    } else {
        cfg << "clientPort=" << m.client.port << '\n'
            << (net ? "" : "clientPortAddress=127.0.0.1\n");  // in its host: every address of it
    }
    if (options.reconfig_enabled) cfg << "reconfigEnabled=true\nskipACL=yes\n";  // zoo.cfg's keys become zookeeper.* properties
    if (log_root) {
        const fs::path data_log = log_root->path / ("member" + std::to_string(m.id));
        fs::create_directories(data_log);
        cfg << "dataLogDir=" << data_log.string() << '\n';
    }
    if (members.size() > 1) {
        cfg << "initLimit=50\nsyncLimit=25\n";
        // The configuration as the ensemble has it, and the member itself: a member being added starts so.
        for (const auto& other : members) {
            if (!other.voting && other.id != m.id) continue;
            cfg << "server." << other.id << '=' << server_spec(other) << '\n';
        }
        std::ofstream(data / "myid") << m.id << '\n';
    }
    if (!cfg.flush()) throw std::runtime_error("zklock::testing: cannot write " + m.config_file().string());
}

std::string ensemble::server_spec(const member& m) const {
    std::string spec = m.address + ':' + std::to_string(m.peer.port) + ':' + std::to_string(m.election.port);
    if (options.publish_client_addresses || options.reconfig_enabled)
        spec += ":participant;" + m.address + ':' + std::to_string(m.client.port);
    return spec;
}

std::size_t ensemble::add_member() {
    member& m = members.emplace_back();
    m.id = static_cast<int>(members.size());
    m.dir = root.path / ("member" + std::to_string(m.id));
    m.client = reserve_port();
    m.peer = reserve_port();
    m.election = reserve_port();
    m.voting = false;
    write_config(m);
    const std::size_t index = members.size() - 1;
    spawn(index);
    wait_serving({index});
    return index;
}

void ensemble::wait_serving(const std::vector<std::size_t>& which) {
    const auto deadline = clock_type::now() + options.start_timeout;
    std::vector<std::size_t> pending = which;
    for (;;) {
        std::erase_if(pending, [&](std::size_t i) {
            member& m = members[i];
            if (!m.alive()) fail(m, "exited during startup");
            return four_letter(i, "srvr", probe_timeout).find("Mode:") != std::string::npos;
        });
        if (pending.empty()) return;
        if (clock_type::now() >= deadline) fail(members[pending.front()], "did not answer srvr in time");
        std::this_thread::sleep_for(poll_interval);
    }
}

void ensemble::fail(member& m, const std::string& why) {
    m.kill();
    const std::string message = "zklock::testing: ZooKeeper member " + std::to_string(m.id) + " on port " +
                                std::to_string(m.client.port) + " " + why + "; its log ends with:\n" +
                                tail_lines(m.log_file(), 20);
    if (file_contains(m.log_file(), "Address already in use")) throw port_conflict(message);
    throw std::runtime_error(message);
}

std::optional<std::size_t> ensemble::find_leader() const {
    for (std::size_t i = 0; i < members.size(); ++i) {
        if (members[i].pid <= 0) continue;
        const std::string answer = four_letter(i, "srvr", probe_timeout);
        if (answer.find("Mode: leader") != std::string::npos) return i;
    }
    return std::nullopt;
}

std::string ensemble::four_letter(std::size_t i, const std::string& command, std::chrono::milliseconds timeout) const {
    const auto port = at(i).client.port;
    if (tls) return send_four_letter_tls(port, command, tls->certificate, std::max(timeout, std::chrono::milliseconds(3000)));
    if (!net) return send_four_letter(port, command, timeout);
    std::string answer;
    net->run_in(i, [&] { answer = send_four_letter(port, command, timeout); });  // its own loopback
    return answer;
}

std::size_t ensemble::wait_leader(std::chrono::milliseconds timeout) const {
    const auto deadline = clock_type::now() + timeout;
    for (;;) {
        if (auto found = find_leader()) return *found;
        if (clock_type::now() >= deadline) throw std::runtime_error("zklock::testing: no ZooKeeper leader");
        std::this_thread::sleep_for(poll_interval);
    }
}

std::string ensemble::connect_string() const {
    std::string out;
    for (const auto& m : members) {
        if (!out.empty()) out += ',';
        out += m.address + ':' + std::to_string(m.client.port);
    }
    return out;
}

member& ensemble::at(std::size_t i) {
    if (i >= members.size()) throw std::out_of_range("zklock::testing: no such ensemble member");
    return members[i];
}

const member& ensemble::at(std::size_t i) const {
    if (i >= members.size()) throw std::out_of_range("zklock::testing: no such ensemble member");
    return members[i];
}

std::unique_ptr<ensemble> launch(std::size_t size, const server_options& options, const network* on) {
    for (int attempt = 1;; ++attempt) {
        auto e = std::make_unique<ensemble>(size, options, on);
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

}  // namespace zklock::testing::detail
