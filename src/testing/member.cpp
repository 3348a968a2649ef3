#include "member.hpp"

#include "launcher.hpp"
#include "unique_fd.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace zklock::testing::detail {
namespace {

namespace fs = std::filesystem;
constexpr const char* java_binary = "/usr/bin/java";

}  // namespace

bool member::alive() {
    if (pid <= 0) return false;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) pid = -1;  // reaped: it died on its own
    return pid > 0;
}

void member::freeze() {
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

void member::thaw() {
    if (alive()) ::kill(pid, SIGCONT);
}

void member::kill() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    pid = -1;
}

void member::spawn(const fs::path& log4j_config, const std::vector<std::string>& jvm_options) {
    std::vector<std::string> args = {java_binary};
    args.insert(args.end(), jvm_options.begin(), jvm_options.end());
    args.insert(args.end(), {
        "-Xms64m",
        "-Xmx256m",
        // No /tmp/hsperfdata_* files: many JVMs in parallel test runs need not leave them behind.
        "-XX:+PerfDisableSharedMem",
        "-Djava.net.preferIPv4Stack=true",
        // Debian's classpath (zookeeper.jar's manifest, zkEnv.sh) has no SLF4J binding, so the server
        // would log nothing at all; we add log4j 1.2 and our own config so the log tail means something.
        "-Dlog4j.configuration=file:" + log4j_config.string(),
        "-cp",
        // netty-codec: the Netty connection factory of a TLS-only server needs it, and zookeeper.jar's
        // manifest does not name it.
        "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar:"
        "/usr/share/java/netty-codec.jar",
        "org.apache.zookeeper.server.quorum.QuorumPeerMain",
        config_file().string(),
    });
    std::vector<char*> argv;
    for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    unique_fd log(::open(log_file().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    if (log.get() < 0) throw_errno("open " + log_file().string());
    pid = detail::spawn_process(argv.data(), log.get(), netns_fd);  // forked on the launcher thread
}

}  // namespace zklock::testing::detail
