// Port safety: a port is "ours" while we hold an flock on /tmp/zklock-ports/<port>. Every harness in
// every test binary goes through that lock, so two harnesses never pick the same port even though the
// JVM binds it only a second later. A foreign process can still take a port in that window; then the
// JVM dies with "Address already in use" and the ensemble is launched again with fresh ports (ensemble.cpp).
#include "ports.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace zklock::testing::detail {
namespace {

constexpr const char* port_lock_dir = "/tmp/zklock-ports";

unique_fd bind_ephemeral_port() {
    unique_fd sock(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (sock.get() < 0) throw_errno("socket");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw_errno("bind");
    return sock;
}

std::uint16_t local_port(int sock) {
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    if (::getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &len) != 0) throw_errno("getsockname");
    return ntohs(addr.sin_port);
}

}  // namespace

port_lease reserve_port() {
    // World-writable and sticky, so harnesses run by different users share the registry. The lock
    // files are never unlinked: unlinking a file someone else may be about to flock breaks the scheme.
    if (::mkdir(port_lock_dir, 01777) == 0) ::chmod(port_lock_dir, 01777);
    // Bound sockets are kept open until we are done so the kernel does not hand us the same port again.
    std::vector<unique_fd> probes;
    for (int attempt = 0; attempt < 100; ++attempt) {
        unique_fd sock = bind_ephemeral_port();
        const std::uint16_t port = local_port(sock.get());
        probes.push_back(std::move(sock));
        const std::string path = std::string(port_lock_dir) + "/" + std::to_string(port);
        unique_fd lock(::open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0666));
        if (lock.get() < 0) continue;  // e.g. another user's file we cannot read: treat as taken
        if (::flock(lock.get(), LOCK_EX | LOCK_NB) == 0) return port_lease{port, std::move(lock)};
    }
    throw std::runtime_error("zklock::testing: could not reserve a free loopback port");
}

}  // namespace zklock::testing::detail
