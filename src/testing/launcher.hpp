// Internal to zklock::testing: starts child processes from one thread that lives as long as the process.
#pragma once

#include <sys/types.h>

namespace zklock::testing::detail {

/// Forks and execs `argv[0]` (a null-terminated argv, kept alive by the caller until this returns) with
/// stdout and stderr going to `log_fd` and stdin from /dev/null. The child is in its own process group and
/// gets SIGKILL when this process dies (PR_SET_PDEATHSIG), but not when the calling thread ends: the fork
/// happens on the launcher thread, which lives until the process exits. Callable from any thread; blocks
/// only until the fork is done (not until the exec). Returns the child's pid, which any thread of this
/// process may waitpid(). Throws std::system_error if fork fails.
/// With `netns_fd` >= 0 the child enters that network namespace before the exec.
pid_t spawn_process(char* const* argv, int log_fd, int netns_fd = -1);

}  // namespace zklock::testing::detail
