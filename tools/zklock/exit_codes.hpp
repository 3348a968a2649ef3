// The zklock command's exit codes: sysexits.h values, spelled out (and documented in print_help()).
#pragma once

namespace zklock_cli {

constexpr int ex_ok = 0;
constexpr int ex_usage = 64;        // EX_USAGE: bad options, invalid PATH or host string
constexpr int ex_unavailable = 69;  // EX_UNAVAILABLE: no ZooKeeper server answered, or a host name unresolvable
constexpr int ex_software = 70;     // EX_SOFTWARE: the lock was lost while COMMAND ran, other errors
constexpr int ex_tempfail = 75;     // EX_TEMPFAIL: the lock was not obtained in time
constexpr int ex_noexec = 126;      // COMMAND found but not executable (as env(1), timeout(1))
constexpr int ex_notfound = 127;    // COMMAND not found

}  // namespace zklock_cli
