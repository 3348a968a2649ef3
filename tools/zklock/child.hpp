// The child process: COMMAND, run while the lock is held.
#pragma once

#include <zklock/guard.hpp>

#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace zklock_cli {

// The child's environment: ours, with the two ZKLOCK_ variables set (replacing inherited ones).
std::vector<std::string> child_environment(const zklock::guard& g);

// argv/envp for posix_spawnp: pointers into `v` (which must outlive them), then a null.
std::vector<char*> c_strings(std::vector<std::string>& v);

// Reaps the child if it has exited: its exit code for zklock, else nullopt.
std::optional<int> reap(pid_t pid);

}  // namespace zklock_cli
