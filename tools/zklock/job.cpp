#include "job.hpp"

#include <cerrno>
#include <utility>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

namespace zklock_cli {

namespace {

int status_of(int wait_status)
{
    return WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : WEXITSTATUS(wait_status);
}

// Hands the terminal on stdin to process group `pgid`. SIGTTOU is blocked meanwhile: a process outside the
// foreground group that calls tcsetpgrp gets it (the child does, and zklock when it takes the terminal back).
void give_terminal(pid_t pgid)
{
    sigset_t ttou, old;
    ::sigemptyset(&ttou);
    ::sigaddset(&ttou, SIGTTOU);
    ::sigprocmask(SIG_BLOCK, &ttou, &old);
    ::tcsetpgrp(STDIN_FILENO, pgid);
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
}

// Waits for one byte on `fd`: true if it came, false at end of file (its writers are gone).
bool read_byte(int fd)
{
    char b = 0;
    ssize_t n;
    do n = ::read(fd, &b, 1);
    while (n < 0 && errno == EINTR);
    return n == 1;
}

// The child, between fork and exec: nothing here returns. (zklock has one thread, so the child may use
// what it inherited; only system calls are used all the same.) It runs COMMAND only on zklock's word, given
// once the watchdog is there: a kill -9 of zklock before that would leave what COMMAND starts unwatched.
[[noreturn]] void become_command(std::vector<char*>& argv, std::vector<char*>& envp, pid_t zklock, bool foreground,
                                 int report_fd, int go_fd)
{
    ::setpgid(0, 0);
    if (foreground) give_terminal(::getpid());
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != zklock) ::_exit(127);  // zklock died before PDEATHSIG was set: never run unlocked
    if (!read_byte(go_fd)) ::_exit(127);  // zklock died first
    ::close(go_fd);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);  // (exec resets caught signals, not the mask)
    ::execvpe(argv[0], argv.data(), envp.data());
    const int e = errno;
    [[maybe_unused]] auto reported = ::write(report_fd, &e, sizeof e);
    ::_exit(127);
}

// The watchdog: it waits for zklock's end on the pipe's read end. A byte is zklock standing it down (COMMAND's
// job has ended, or is left to run by design); end of file is zklock gone without a word: the job dies.
[[noreturn]] void become_watchdog(int read_fd, pid_t group)
{
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU}) ::signal(sig, SIG_IGN);
    ::signal(SIGCHLD, SIG_DFL);
    ::prctl(PR_SET_NAME, "zklock-watchdog");
    // Hold nothing of zklock's open: its streams (a reader waiting for end of file), its ZooKeeper socket.
    const int null = ::open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
    if (read_fd != 3) ::dup2(read_fd, 3);
    ::close_range(4, ~0U, 0);
    if (!read_byte(3)) ::kill(-group, SIGKILL);
    ::_exit(0);
}

}  // namespace

std::optional<job> job::start(std::vector<char*>& argv, std::vector<char*>& envp, int& err)
{
    // Whatever COMMAND leaves behind when it exits is reparented to zklock, not to init: zklock can wait for it.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    const bool foreground = ::isatty(STDIN_FILENO) && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp();
    int report[2], go[2];
    if (::pipe2(report, O_CLOEXEC) != 0) {
        err = errno;
        return std::nullopt;
    }
    if (::pipe2(go, O_CLOEXEC) != 0) {
        err = errno;
        ::close(report[0]);
        ::close(report[1]);
        return std::nullopt;
    }
    const pid_t zklock = ::getpid();
    const pid_t leader = ::fork();
    if (leader == 0) {
        ::close(report[0]);
        ::close(go[1]);
        become_command(argv, envp, zklock, foreground, report[1], go[0]);
    }
    ::close(report[1]);
    ::close(go[0]);
    if (leader < 0) {
        err = errno;
        ::close(report[0]);
        ::close(go[1]);
        return std::nullopt;
    }
    ::setpgid(leader, leader);  // here too, whichever runs first (after the exec it fails, harmlessly)
    if (foreground) give_terminal(leader);
    // Without a watchdog (no pipe or no process to spare) COMMAND still dies with zklock, its job may not.
    int watch[2] = {-1, -1};
    pid_t watchdog = 0;
    if (::pipe2(watch, O_CLOEXEC) == 0) {
        watchdog = ::fork();
        if (watchdog == 0) become_watchdog(watch[0], leader);  // (it closes its copy of go[1])
        ::close(watch[0]);
        if (watchdog < 0) {
            ::close(watch[1]);
            watch[1] = -1;
            watchdog = 0;
        }
    }
    job started(leader, watchdog, watch[1], foreground);  // from here its destructor stands the watchdog down
    const char word = 1;
    [[maybe_unused]] auto sent = ::write(go[1], &word, 1);
    ::close(go[1]);
    // The pipe closes on a successful exec; a failed one writes its errno first.
    int exec_error = 0;
    ssize_t n;
    do n = ::read(report[0], &exec_error, sizeof exec_error);
    while (n < 0 && errno == EINTR);
    ::close(report[0]);
    if (n == static_cast<ssize_t>(sizeof exec_error)) {
        int ignored;
        while (::waitpid(leader, &ignored, 0) < 0 && errno == EINTR) {
        }
        err = exec_error;
        return std::nullopt;  // `started` stands the watchdog down and takes the terminal back
    }
    return started;
}

job::job(pid_t leader, pid_t watchdog, int watchdog_pipe, bool took_terminal) noexcept
    : leader_(leader), watchdog_(watchdog), watchdog_pipe_(watchdog_pipe), took_terminal_(took_terminal)
{
}

job::job(job&& other) noexcept
    : leader_(std::exchange(other.leader_, 0)), watchdog_(std::exchange(other.watchdog_, 0)),
      watchdog_pipe_(std::exchange(other.watchdog_pipe_, -1)), took_terminal_(std::exchange(other.took_terminal_, false)),
      status_(other.status_)
{
}

job::~job()
{
    if (watchdog_pipe_ >= 0) {
        const char stand_down = 0;
        [[maybe_unused]] auto n = ::write(watchdog_pipe_, &stand_down, 1);
        ::close(watchdog_pipe_);
    }
    if (watchdog_ > 0) {
        int ignored;
        while (::waitpid(watchdog_, &ignored, 0) < 0 && errno == EINTR) {
        }
    }
    if (took_terminal_) give_terminal(::getpgrp());
}

void job::signal(int sig) const noexcept { ::kill(-leader_, sig); }

std::optional<int> job::reap()
{
    int st = 0;
    pid_t r;
    // COMMAND by its pid first: it may have moved to another group.
    if (!status_) {
        do r = ::waitpid(leader_, &st, WNOHANG);
        while (r < 0 && errno == EINTR);
        if (r == leader_) status_ = status_of(st);
    }
    // Then what it left behind, which the subreaper made ours.
    for (;;) {
        r = ::waitpid(-leader_, &st, WNOHANG);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;  // none has exited, or none of ours is left in the group
        if (r == leader_) status_ = status_of(st);
    }
    return status_;
}

bool job::running()
{
    if (!reap()) return true;
    return ::kill(-leader_, 0) == 0 || errno == EPERM;
}

}  // namespace zklock_cli
