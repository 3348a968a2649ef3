#include "four_letter.hpp"

#include "unique_fd.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

namespace zklock::testing::detail {

namespace {
using clock_type = std::chrono::steady_clock;
}

std::string send_four_letter(std::uint16_t port, const std::string& command, std::chrono::milliseconds timeout) {
    const auto deadline = clock_type::now() + timeout;
    auto wait_for = [&](int fd, short events) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
        if (left.count() <= 0) return false;
        pollfd p{fd, events, 0};
        return ::poll(&p, 1, static_cast<int>(left.count())) == 1;
    };

    unique_fd sock(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (sock.get() < 0) return "";
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        if (errno != EINPROGRESS || !wait_for(sock.get(), POLLOUT)) return "";
        int error = 0;
        socklen_t len = sizeof error;
        if (::getsockopt(sock.get(), SOL_SOCKET, SO_ERROR, &error, &len) != 0 || error != 0) return "";
    }
    // MSG_NOSIGNAL: a server dying mid-command must not SIGPIPE the test binary.
    std::size_t sent = 0;
    while (sent < command.size()) {
        const auto n = ::send(sock.get(), command.data() + sent, command.size() - sent, MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<std::size_t>(n);
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (!wait_for(sock.get(), POLLOUT)) return "";
        } else {
            return "";
        }
    }
    std::string answer;
    char buffer[4096];
    for (;;) {
        const auto n = ::recv(sock.get(), buffer, sizeof buffer, 0);
        if (n > 0) {
            answer.append(buffer, static_cast<std::size_t>(n));
        } else if (n == 0) {
            break;
        } else if (errno == EAGAIN || errno == EINTR) {
            if (!wait_for(sock.get(), POLLIN)) break;
        } else {
            break;
        }
    }
    return answer;
}

}  // namespace zklock::testing::detail
