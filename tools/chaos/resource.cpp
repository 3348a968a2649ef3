#include "resource.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <system_error>
#include <tuple>

namespace zklock_chaos {
namespace {

struct state {
    std::int64_t zxid = 0;
    std::uint64_t local = 0;
    long value = 0;
};

struct locked_file {
    int fd;
    locked_file(const std::string& path, int how) : fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
        if (fd < 0) throw std::system_error(errno, std::generic_category(), "open " + path);
        while (::flock(fd, how) != 0)
            if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "flock " + path);
    }
    ~locked_file() { ::close(fd); }
    state load() const {
        char buffer[128] = {};
        state s;
        if (::pread(fd, buffer, sizeof buffer - 1, 0) > 0)
            std::sscanf(buffer, "%" SCNd64 ".%" SCNu64 " %ld", &s.zxid, &s.local, &s.value);
        return s;
    }
};

}  // namespace

long fenced_counter::read() const { return locked_file(path_, LOCK_SH).load().value; }

bool fenced_counter::write(const std::string& token, long read_value, const std::string& holder, event_log& log) const {
    state mine;
    std::sscanf(token.c_str(), "%" SCNd64 ".%" SCNu64, &mine.zxid, &mine.local);
    locked_file f(path_, LOCK_EX);
    const state now = f.load();
    const bool accepted = std::tie(mine.zxid, mine.local) >= std::tie(now.zxid, now.local);
    if (accepted) {
        mine.value = read_value + 1;
        char buffer[128];
        const int n = std::snprintf(buffer, sizeof buffer, "%" PRId64 ".%" PRIu64 " %ld\n", mine.zxid, mine.local, mine.value);
        if (::ftruncate(f.fd, 0) != 0 || ::pwrite(f.fd, buffer, static_cast<std::size_t>(n), 0) != n)
            throw std::system_error(errno, std::generic_category(), "write " + path_);
    }
    log.write("write " + holder + ' ' + name_ + ' ' + token + ' ' + std::to_string(read_value) + ' ' +
              std::to_string(now.value) + (accepted ? " accepted" : " fenced"));
    return accepted;
}

}  // namespace zklock_chaos
