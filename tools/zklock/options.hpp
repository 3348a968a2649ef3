// zklock's command line: OPTIONS PATH -- COMMAND [ARG...], OPTIONS -c STRING PATH, or OPTIONS PATH.
#pragma once

#include "exit_codes.hpp"

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace zklock_cli {

/// What zklock does with PATH: lock it (and run COMMAND), or an operator's action on someone else's lock.
/// stat: the queue at PATH in figures. elect: campaign in the election at PATH and run COMMAND while
/// leading; leader: print who leads PATH.
enum class action { lock, list, stat, revoke, force_break, elect, leader };

/// --on-revoke: when someone asks the holder to let go, keep the lock (ignore), stop COMMAND's job and release
/// (release), or send SIGUSR1 to the job and let COMMAND decide (signal).
enum class revoke_action { ignore, release, signal };

/// Which lock PATH is: a mutex (default), one side of a read/write lock, or a semaphore of `limit`.
enum class lock_mode { mutex, read, write, limit };

struct options {
    action what = action::lock;
    lock_mode mode = lock_mode::mutex;
    std::optional<std::chrono::milliseconds> lease;  // --lease: the hold-time limit
    std::size_t limit = 0;
    std::string hosts;
    std::optional<std::chrono::milliseconds> timeout;  // -n: zero
    std::chrono::milliseconds session_timeout{10'000};  // --session-timeout (session_config's default)
    int conflict_exit_code = ex_tempfail;                // -E: the exit code when not obtained in time
    std::chrono::milliseconds kill_after{5'000};
    revoke_action on_revoke = revoke_action::ignore;
    bool verbose = false;
    std::string id;      // elect --id: the participant id (default: hostname:pid)
    bool again = false;  // elect --again: campaign again after each term, as a supervisor
    std::string style = "selector";  // elect --style: selector, latch or kazoo (zklock::election_style)
    bool watch = false;  // leader --watch: a line at every change until interrupted
    bool json = false;   // ls --json, stat --json: JSON instead of text
    std::string path;
    // COMMAND and its arguments, or /bin/sh -c STRING for -c; empty: no COMMAND, hold the lock until stdin
    // ends or a signal comes (hold.cpp).
    std::vector<std::string> command;
};

// Fills `o` (and sets `quiet` for -q). Returns an exit code if the program should stop (help, version,
// usage error: the help, version or error message is already printed), else nullopt.
std::optional<int> parse(int argc, char** argv, options& o);

}  // namespace zklock_cli
