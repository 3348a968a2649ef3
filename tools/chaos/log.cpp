#include "log.hpp"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace zklock_chaos {

std::int64_t monotonic_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

event_log::event_log(const std::string& path) : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "open " + path);
}

event_log::~event_log() { ::close(fd_); }

void event_log::write(const std::string& body) {
    std::lock_guard lock(mutex_);
    const std::string line = std::to_string(monotonic_ns()) + ' ' + body + '\n';
    if (::write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
        throw std::system_error(errno, std::generic_category(), "write to the event log");
}

}  // namespace zklock_chaos
