#include "child.hpp"

#include <string_view>

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

}  // namespace zklock_cli
