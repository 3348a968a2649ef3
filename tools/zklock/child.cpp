#include "child.hpp"

#include "exit_codes.hpp"

#include <cerrno>
#include <string_view>

#include <sys/wait.h>

extern char** environ;

namespace zklock_cli {

std::vector<std::string> child_environment(const zklock::guard& g)
{
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
        std::string_view kv = *e;
        if (kv.starts_with("ZKLOCK_FENCING_TOKEN=") || kv.starts_with("ZKLOCK_NODE=")) continue;
        env.emplace_back(kv);
    }
    env.push_back("ZKLOCK_FENCING_TOKEN=" + g.token().to_string());
    env.push_back("ZKLOCK_NODE=" + g.node());
    return env;
}

std::vector<char*> c_strings(std::vector<std::string>& v)
{
    std::vector<char*> out;
    for (auto& s : v) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

std::optional<int> reap(pid_t pid)
{
    int status = 0;
    pid_t r;
    do r = ::waitpid(pid, &status, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == 0) return std::nullopt;
    if (r < 0) return ex_software;  // ECHILD: should not happen
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return std::nullopt;  // stopped/continued: keep waiting
}

}  // namespace zklock_cli
