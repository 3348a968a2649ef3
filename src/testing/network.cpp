#include "network.hpp"

#include "delayer.hpp"

#include "zklock/error.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/system/system_error.hpp>

#include <atomic>
#include <cerrno>
#include <exception>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace zklock::testing::detail {
namespace {

namespace fs = std::filesystem;

const char* const ip_binary = "/usr/sbin/ip";
const char* const restore_binary = "/usr/sbin/iptables-restore";
const std::string namespace_dir = "/run/netns/";
const std::string name_start = "zklock-";

[[noreturn]] void not_supported(const std::string& why) {
    throw boost::system::system_error(zklock::error::not_supported, "zklock::testing: " + why);
}

/// Runs argv (absolute path first) with `input` on its stdin; throws with its output if it fails.
void run(const std::vector<std::string>& args, const std::string& input = "") {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0) throw_errno("pipe");
    unique_fd in_read(in[0]), in_write(in[1]);
    if (::pipe2(out, O_CLOEXEC) != 0) throw_errno("pipe");
    unique_fd out_read(out[0]), out_write(out[1]);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in_read.get(), STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out_write.get(), STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out_write.get(), STDERR_FILENO);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = -1;
    const int spawned = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) throw std::system_error(spawned, std::generic_category(), "spawn " + args[0]);
    in_read.reset();
    out_write.reset();
    // The rules are a few KiB at most: they fit in the pipe, so writing all before reading cannot block.
    for (std::size_t sent = 0; sent < input.size();) {
        const auto n = ::write(in_write.get(), input.data() + sent, input.size() - sent);
        if (n <= 0 && errno != EINTR) break;
        if (n > 0) sent += static_cast<std::size_t>(n);
    }
    in_write.reset();
    std::string output;
    char buffer[4096];
    for (ssize_t n; (n = ::read(out_read.get(), buffer, sizeof buffer)) != 0;) {
        if (n > 0) output.append(buffer, static_cast<std::size_t>(n));
        else if (errno != EINTR) break;
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
    std::string line;
    for (const auto& a : args) line += (line.empty() ? "" : " ") + a;
    throw std::runtime_error("zklock::testing: '" + line + "' failed: " + output);
}

std::atomic<unsigned> networks_made{0};

}  // namespace

void require_network_support() {
    if (::geteuid() != 0)
        not_supported("network partitions need root (CAP_SYS_ADMIN and CAP_NET_ADMIN, to make network namespaces "
                      "and packet filters); this process runs as uid " + std::to_string(::geteuid()));
    if (::access(ip_binary, X_OK) != 0) not_supported(std::string("network partitions need ") + ip_binary + " (iproute2)");
    if (::access(restore_binary, X_OK) != 0)
        not_supported(std::string("network partitions need ") + restore_binary + " (Debian's iptables)");
}

void remove_leftover_namespaces() {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(namespace_dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (!name.starts_with(name_start)) continue;
        const pid_t owner = static_cast<pid_t>(std::atol(name.c_str() + name_start.size()));
        if (owner <= 0 || (::kill(owner, 0) != 0 && errno == ESRCH)) {
            try {
                run({ip_binary, "netns", "del", name});
            } catch (const std::exception&) {  // another run removed it first
            }
        }
    }
}

network::network(std::size_t hosts)
    : prefix_(name_start + std::to_string(::getpid()) + "-" + std::to_string(networks_made++) + "-") {
    require_network_support();
    remove_leftover_namespaces();
    try {
        run({ip_binary, "netns", "add", prefix_ + "hub"});
        run({ip_binary, "-n", prefix_ + "hub", "link", "add", "br0", "type", "bridge"});
        run({ip_binary, "-n", prefix_ + "hub", "link", "set", "br0", "up"});
        for (std::size_t i = 0; i < hosts; ++i) make_host();
    } catch (...) {
        tear_down();  // the namespaces made so far
        throw;
    }
}

network::~network() { tear_down(); }

void network::tear_down() noexcept {
    for (auto& h : hosts_) {
        if (!h->delay) continue;
        try {  // no more packets to the queue, so that the delayer's thread can unbind from it
            run({ip_binary, "netns", "exec", h->name, restore_binary}, "*filter\nCOMMIT\n");
        } catch (const std::exception&) {
        }
        h->delay.reset();
    }
    for (auto& h : hosts_) {
        h->fd.reset();
        try {
            run({ip_binary, "netns", "del", h->name});
        } catch (const std::exception&) {
        }
    }
    hosts_.clear();
    try {
        run({ip_binary, "netns", "del", prefix_ + "hub"});
    } catch (const std::exception&) {
    }
}

void network::make_host() {
    const std::size_t i = hosts_.size();
    if (i >= 250) throw std::length_error("zklock::testing: at most 250 hosts in a test network");
    auto h = std::make_unique<host_state>();
    h->name = prefix_ + "h" + std::to_string(i);
    run({ip_binary, "netns", "add", h->name});
    h->fd = unique_fd(::open((namespace_dir + h->name).c_str(), O_RDONLY | O_CLOEXEC));
    const std::string hub = prefix_ + "hub", port = "veth" + std::to_string(i);
    hosts_.push_back(std::move(h));  // from here on the destructor removes it
    if (hosts_.back()->fd.get() < 0) throw_errno("open " + namespace_dir + hosts_.back()->name);
    const std::string& name = hosts_.back()->name;
    run({ip_binary, "-n", hub, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", name});
    run({ip_binary, "-n", hub, "link", "set", port, "master", "br0", "up"});
    run({ip_binary, "-n", name, "addr", "add", address(i) + "/24", "dev", "eth0"});
    run({ip_binary, "-n", name, "link", "set", "eth0", "up"});
    run({ip_binary, "-n", name, "link", "set", "lo", "up"});
}

std::size_t network::add_host() {
    make_host();
    return hosts_.size() - 1;
}

const std::string& network::namespace_name(std::size_t host) const { return hosts_.at(host)->name; }
std::string network::address(std::size_t host) const { return "10.77.0." + std::to_string(host + 1); }
int network::namespace_fd(std::size_t host) const { return hosts_.at(host)->fd.get(); }

void network::cut(std::size_t a, std::size_t b) {
    if (a == b) return;
    hosts_.at(a)->cut.insert(b);
    hosts_.at(b)->cut.insert(a);
}

void network::set_quality(std::size_t host, link_quality q) {
    if (!(q.loss >= 0.0 && q.loss <= 1.0) || q.delay.count() < 0)
        throw std::invalid_argument("zklock::testing: link loss is from 0 to 1, and delay is not negative");
    auto& h = *hosts_.at(host);
    if (q.delay.count() > 0 && !h.delay) h.delay = std::make_unique<delayer>(h.fd.get());
    if (h.delay) h.delay->set_delay(q.delay);
    h.quality = q;
}

void network::heal_all() {
    for (std::size_t i = 0; i < hosts_.size(); ++i) {
        hosts_[i]->cut.clear();
        set_quality(i, {});
    }
}

std::string network::rules(std::size_t i) const {
    const host_state& h = *hosts_[i];
    std::ostringstream r;
    r << "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n";
    for (std::size_t other : h.cut)
        r << "-A INPUT -s " << address(other) << " -j DROP\n-A OUTPUT -d " << address(other) << " -j DROP\n";
    if (h.quality.loss > 0) {
        for (const char* chain : {"INPUT -i", "OUTPUT -o"})
            r << "-A " << chain << " eth0 -m statistic --mode random --probability " << h.quality.loss << " -j DROP\n";
    }
    if (h.quality.delay.count() > 0) r << "-A OUTPUT -o eth0 -j NFQUEUE --queue-num 0 --queue-bypass\n";
    r << "COMMIT\n";
    return r.str();
}

void network::apply() {
    for (std::size_t i = 0; i < hosts_.size(); ++i) {
        std::string wanted = rules(i);
        if (wanted == hosts_[i]->applied) continue;
        run({ip_binary, "netns", "exec", hosts_[i]->name, restore_binary}, wanted);
        hosts_[i]->applied = std::move(wanted);
    }
}

void network::enter(std::size_t host) const {
    if (::setns(namespace_fd(host), CLONE_NEWNET) != 0) throw_errno("setns into " + namespace_name(host));
}

void network::run_in(std::size_t host, const std::function<void()>& fn) const {
    std::exception_ptr failure;
    std::thread([&] {
        try {
            enter(host);
            fn();
        } catch (...) {
            failure = std::current_exception();
        }
    }).join();
    if (failure) std::rethrow_exception(failure);
}

}  // namespace zklock::testing::detail
