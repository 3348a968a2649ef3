// COMMAND's job: COMMAND and everything it starts, in a process group of its own that never outlives
// zklock. Without that, a `kill -9` of zklock left COMMAND running without the lock (and, once the session
// expired, a second COMMAND started beside it), and a lost lock stopped only the shell of `-c 'a; b'`, not
// what the shell ran (consul lock's users hit exactly this: hashicorp/consul#2022).
//
// - COMMAND leads a new process group; zklock's signals go to the whole group.
// - COMMAND gets SIGKILL when zklock dies (PR_SET_PDEATHSIG, checked again after the fork: zklock may
//   have died before it was set).
// - A watchdog process holds the read end of a pipe that only zklock can write: when zklock ends without
//   standing it down (even by SIGKILL), the pipe reaches end of file and the watchdog kills the group.
//   COMMAND waits for zklock's word before its exec, and gets it once the watchdog is there.
// - zklock is its descendants' subreaper: what COMMAND leaves behind when it exits becomes zklock's child,
//   so that zklock can wait for the whole group.
// - On a terminal, the group becomes the foreground job while it runs (as a shell does), so that COMMAND
//   may read the terminal and ^C reaches it; zklock takes the terminal back afterwards.
#pragma once

#include <optional>
#include <vector>

#include <sys/types.h>

namespace zklock_cli {

class job {
public:
    /// Starts `argv` (null-terminated, argv[0] looked up in PATH) with the environment `envp`. Empty, with
    /// the reason in `err` (ENOENT: no such command, EACCES: not executable, ...), when it could not run.
    static std::optional<job> start(std::vector<char*>& argv, std::vector<char*>& envp, int& err);

    job(job&& other) noexcept;
    job& operator=(job&&) = delete;
    job(const job&) = delete;
    ~job();

    pid_t pid() const noexcept { return leader_; }
    /// Sends `sig` to every process of the group.
    void signal(int sig) const noexcept;
    /// Reaps what has exited: COMMAND's status for zklock (exit code, or 128 + signal) once COMMAND has.
    std::optional<int> reap();
    /// Whether any process of the group still runs (after reaping what has exited).
    bool running();

private:
    job(pid_t leader, pid_t watchdog, int watchdog_pipe, bool took_terminal) noexcept;

    pid_t leader_ = 0;
    pid_t watchdog_ = 0;
    int watchdog_pipe_ = -1;  // its write end: a byte stands the watchdog down, end of file sets it off
    bool took_terminal_ = false;
    std::optional<int> status_;
};

}  // namespace zklock_cli
