// The child process: COMMAND, run while the lock is held.
#pragma once

#include <zklock/guard.hpp>

#include <string>
#include <vector>

namespace zklock_cli {

// The child's environment: ours, with the two ZKLOCK_ variables set (replacing inherited ones).
std::vector<std::string> child_environment(const zklock::guard& g);

// argv/envp for exec: pointers into `v` (which must outlive them), then a null.
std::vector<char*> c_strings(std::vector<std::string>& v);

}  // namespace zklock_cli
