// zklock: flock(1) for a cluster. Holds a ZooKeeper lock while a command runs.
//
//   zklock [OPTIONS] PATH -- COMMAND [ARG...]
//   zklock [OPTIONS] -c 'SHELL COMMAND' PATH
//   zklock [OPTIONS] PATH          (no COMMAND: print the fencing token, hold until stdin ends)
//
// One process, one io_context, one coroutine: connect, acquire (racing SIGINT/SIGTERM/SIGHUP), spawn the
// command, then wait for whichever comes first of: the child's exit (SIGCHLD), a signal to forward, or the
// loss of the lock. The session is pumped by the same io_context the whole time, so it keeps its
// heartbeats while the command runs. The goodbye (release, close) is bounded: a dead or frozen server
// never keeps zklock running long after COMMAND. See print_help() for the options and exit codes.
//
// The parts: options.cpp (the command line and --help), run.cpp (the coroutine), hold.cpp (the mode without
// COMMAND), child.cpp (COMMAND's environment and exit status), messages.cpp (stderr), exit_codes.hpp; main()
// runs the coroutine.
#include "exit_codes.hpp"
#include "messages.hpp"
#include "options.hpp"
#include "run.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

int run_once(const zklock_cli::options& o);

int main(int argc, char** argv)
{
    // A standard descriptor left closed by the caller (`zklock PATH <&-`) would be taken by the next one
    // zklock opens: the ZooKeeper socket or Asio's own would become the stdin read without COMMAND, or
    // COMMAND's stdout. /dev/null in its place: a closed stdin ends at once, a closed stdout discards.
    for (int fd = 0; fd <= 2; ++fd) {
        if (::fcntl(fd, F_GETFD) >= 0) continue;
        if (const int null = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY); null >= 0 && null != fd) {
            ::dup2(null, fd);
            ::close(null);
        }
    }
    zklock_cli::options o;
    if (auto code = zklock_cli::parse(argc, argv, o)) return *code;
    // `elect --again`: a supervisor's loop, one session per term, until a signal reaches zklock.
    for (;;) {
        const auto started = std::chrono::steady_clock::now();
        const int code = run_once(o);
        if (!o.again || zklock_cli::interrupted) return code;
        if (std::chrono::steady_clock::now() - started < std::chrono::seconds(1))
            std::this_thread::sleep_for(std::chrono::seconds(1));  // a COMMAND that fails at once: no busy loop
    }
}

// One run: connect, lock (or campaign, or an operator's action), release; zklock's exit code.
int run_once(const zklock_cli::options& o)
{
    int code = zklock_cli::ex_software;
    try {
        boost::asio::io_context ioc;
        boost::asio::co_spawn(ioc, zklock_cli::run(o), [&](std::exception_ptr e, int c) {
            ioc.stop();  // an unconfirmed close may still hold work on the io_context
            if (!e) {
                code = c;
                return;
            }
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                zklock_cli::say(x.what());
            }
            code = zklock_cli::ex_software;
        });
        ioc.run();
    } catch (const std::exception& x) {
        zklock_cli::say(x.what());
        return zklock_cli::ex_software;
    }
    if (zklock_cli::close_unconfirmed) {  // a helper thread still waits for a silent server: do not join it
        std::cout.flush();
        std::cerr.flush();
        std::_Exit(code);
    }
    return code;
}
