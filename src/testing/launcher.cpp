// The launcher thread: every harness child process is forked here.
//
// Why: the child asks for SIGKILL when its parent dies (PR_SET_PDEATHSIG), so that no JVM outlives a
// crashed or killed test binary. But the kernel's "parent" is the *thread* that forked, not the process:
// a server forked by a short-lived thread (a fault test restarting a member from a std::thread) would be
// killed as soon as that thread returned. So callers hand their fork+exec to one thread that lives as long
// as the process, and the death signal then means "the test process died", whatever thread asked.
//
// Lifetime: the launcher is created on first use, never destroyed, and its thread is detached. At exit the
// thread is asleep in a condition-variable wait on a mutex and condition variable that are never destroyed
// (so no destructor runs under a waiter and no static-destruction order matters: a server started or
// stopped from a static destructor still works), and exit_group ends it with the rest of the process,
// which is exactly when the children should get their SIGKILL. Joining it at exit instead would need a
// static destructor that could run before other static objects are done with it, and buys nothing: the
// thread holds nothing that needs releasing. A process forked from this one (where the thread does not
// exist) gets a launcher of its own.
#include "launcher.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>

namespace zklock::testing::detail {
namespace {

struct request {
    char* const* argv;
    int log_fd;
    const char* exec_failed;  // the message the child writes if execv fails
    std::size_t exec_failed_size;
    int netns_fd = -1;
    pid_t pid = -1;
    int error = 0;
    bool done = false;
};

/// Runs in the launcher thread. Everything the child touches is prepared before fork: after it, the child
/// makes only async-signal-safe calls (the parent is multi-threaded; another thread may hold malloc's lock).
void fork_exec(request& r) {
    const pid_t parent = ::getpid();
    sigset_t no_signals;
    ::sigemptyset(&no_signals);
    const pid_t child = ::fork();
    if (child < 0) {
        r.error = errno;
        return;
    }
    if (child == 0) {
        // Own process group: a Ctrl-C aimed at the test runner does not hit the JVM directly;
        // the JVM dies through PDEATHSIG when the launcher thread does, i.e. when the test process dies.
        ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(1);  // the parent died before prctl took effect
        // The launcher thread blocks every signal, and a signal mask survives execv: unblock them all.
        ::sigprocmask(SIG_SETMASK, &no_signals, nullptr);
        if (r.netns_fd >= 0 && ::setns(r.netns_fd, CLONE_NEWNET) != 0) ::_exit(126);
        ::dup2(r.log_fd, STDOUT_FILENO);
        ::dup2(r.log_fd, STDERR_FILENO);
        const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // dup2 clears CLOEXEC
        if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
        ::execv(r.argv[0], r.argv);
        [[maybe_unused]] auto ignored = ::write(STDERR_FILENO, r.exec_failed, r.exec_failed_size);
        ::_exit(127);
    }
    r.pid = child;
}

class launcher {
public:
    static launcher& instance() {
        // Leaked on purpose (see the top of the file); the pid check gives a forked child its own thread.
        static std::mutex* const guard = new std::mutex;
        static launcher* current = nullptr;
        std::lock_guard lock(*guard);
        if (current == nullptr || current->owner_ != ::getpid()) current = new launcher;
        return *current;
    }

    void submit(request& r) {
        std::unique_lock lock(mutex_);
        queue_.push_back(&r);
        wake_.notify_one();
        done_.wait(lock, [&] { return r.done; });
    }

private:
    launcher() {
        // The thread blocks every signal, so that it never runs a handler meant for the program (it is
        // created by whichever thread comes first, with that thread's mask otherwise).
        sigset_t all, old;
        ::sigfillset(&all);
        ::pthread_sigmask(SIG_SETMASK, &all, &old);
        try {
            std::thread([this] { run(); }).detach();
        } catch (...) {
            ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
            throw;
        }
        ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    }

    [[noreturn]] void run() noexcept {
        std::unique_lock lock(mutex_);
        for (;;) {
            wake_.wait(lock, [&] { return !queue_.empty(); });
            request& r = *queue_.front();
            queue_.pop_front();
            lock.unlock();
            fork_exec(r);
            lock.lock();
            r.done = true;
            done_.notify_all();
        }
    }

    const pid_t owner_ = ::getpid();
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    std::deque<request*> queue_;
};

}  // namespace

pid_t spawn_process(char* const* argv, int log_fd, int netns_fd) {
    const std::string exec_failed = std::string("zklock::testing: execv ") + argv[0] + " failed\n";
    request r{argv, log_fd, exec_failed.data(), exec_failed.size(), netns_fd};
    launcher::instance().submit(r);
    if (r.pid < 0) throw std::system_error(r.error, std::generic_category(), "fork");
    return r.pid;
}

}  // namespace zklock::testing::detail
