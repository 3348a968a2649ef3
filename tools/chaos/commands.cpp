#include "commands.hpp"

#include "log.hpp"
#include "resource.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <random>
#include <system_error>
#include <vector>

extern char** environ;

namespace zklock_chaos {

void run_command_machine(const command_machine& m, std::uint64_t seed, const std::atomic<bool>& stop) {
    std::mt19937_64 rng(seed);
    const int out = ::open(m.output.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out < 0) throw std::system_error(errno, std::generic_category(), "open " + m.output);
    for (unsigned long n = 1; !stop; ++n) {
        std::vector<std::string> args = {"/usr/sbin/ip", "netns", "exec", m.netns, m.zklock, "--hosts", m.hosts,
                                         "--timeout", "10", "--kill-after", "1"};
        std::string kind, path, resource = "-";
        switch (rng() % 4) {
        case 0: kind = "mutex", path = "/chaos/mutex", resource = m.mutex_resource; break;
        case 1: kind = "write", path = "/chaos/rw", resource = m.rw_resource, args.push_back("--write"); break;
        case 2: kind = "read", path = "/chaos/rw", args.push_back("--read"); break;
        default:
            kind = "sem", path = "/chaos/sem";
            args.insert(args.end(), {"--limit", std::to_string(m.sem_limit)});
        }
        const auto hold_ms = rng() % 10 == 0 ? 500 + rng() % 3500 : 1 + rng() % 50;
        args.insert(args.end(), {path, "--", m.self, "section", kind, "cmd-" + std::to_string(m.index) + "-" + std::to_string(n),
                                 m.log, resource, std::to_string(hold_ms)});
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, out, STDOUT_FILENO);
        posix_spawn_file_actions_adddup2(&actions, out, STDERR_FILENO);
        pid_t pid = -1;
        const int spawned = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (spawned != 0) {
            ::close(out);
            throw std::system_error(spawned, std::generic_category(), "spawn zklock");
        }
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    ::close(out);
}

int section_main(int argc, char** argv) {
    // SIGTERM is zklock's loss signal: taken synchronously below, never by default (which would kill us
    // before we could log the warning).
    sigset_t term;
    ::sigemptyset(&term);
    ::sigaddset(&term, SIGTERM);
    ::sigprocmask(SIG_BLOCK, &term, nullptr);
    if (argc != 7) return 64;
    const std::string kind = argv[2], holder = argv[3], resource = argv[5];
    const long hold_ms = std::atol(argv[6]);
    const char* token = std::getenv("ZKLOCK_FENCING_TOKEN");
    if (token == nullptr) return 65;
    event_log log(argv[4]);
    log.write("enter " + holder + ' ' + kind + ' ' + token);
    const bool writes = resource != "-";
    const fenced_counter counter(resource, kind == "mutex" ? "mutex" : "rw");
    const long read = writes ? counter.read() : 0;
    timespec wait{hold_ms / 1000, (hold_ms % 1000) * 1'000'000};
    if (::sigtimedwait(&term, nullptr, &wait) == SIGTERM) {
        log.write("warned " + holder);
        return 143;
    }
    if (writes) counter.write(token, read, holder, log);
    log.write("exit " + holder);
    return 0;
}

}  // namespace zklock_chaos
