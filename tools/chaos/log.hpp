// zklock_chaos's event log: one line per event, "NANOSECONDS WHAT ...", appended by the library's
// workers (threads of the chaos process) and by the command's sections (processes of their own) to one
// file. The time is CLOCK_MONOTONIC, which every process of the machine shares, read under the writer's
// lock so that the order of the lines of one process is the order of their times; the checker sorts by it.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

namespace zklock_chaos {

std::int64_t monotonic_ns();

class event_log {
public:
    explicit event_log(const std::string& path);  // appends; throws std::system_error
    ~event_log();
    event_log(const event_log&) = delete;
    event_log& operator=(const event_log&) = delete;

    /// Appends "NOW BODY\n" in one write(2) (O_APPEND: lines of several processes never interleave).
    void write(const std::string& body);

private:
    int fd_;
    std::mutex mutex_;
};

}  // namespace zklock_chaos
