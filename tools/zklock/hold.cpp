// zklock PATH without COMMAND: whoever feeds zklock's stdin (a script's coproc, a pipe) holds the lock until
// it closes its end. stdin is read on the event loop that also pumps the session: a blocking read would stop
// the heartbeats, and the session would expire while the lock looked held.
#include "hold.hpp"

#include "admin.hpp"

#include "exit_codes.hpp"
#include "messages.hpp"
#include "revocation.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

namespace zklock_cli {
namespace {

namespace asio = boost::asio;
using namespace boost::asio::experimental::awaitable_operators;
using boost::system::error_code;

// stdin, read asynchronously until its end. What it reads is thrown away: only the end counts.
class standard_input {
public:
    explicit standard_input(const asio::any_io_executor& ex) : d_(ex)
    {
        struct stat st {};
        // Closed, or a regular file: nothing to wait for (a file's end is there already, and reading all of
        // it would only block the loop on the disk).
        if (::fstat(STDIN_FILENO, &st) != 0 || S_ISREG(st.st_mode)) return;
        // Asio makes its descriptor non-blocking, a flag of the open file description: on a dup of fd 0 that
        // would hit every process sharing the terminal or pipe too (the shell that started zklock, when it
        // reads again). Opening stdin again through /proc gives a description of our own (a terminal, a pipe,
        // a FIFO, a device); a socket cannot be opened so, and gets a dup whose flags are put back after.
        // O_NONBLOCK: the open of a pipe whose writers are gone must not wait for a new one. O_NOCTTY: a
        // terminal must not become zklock's controlling terminal.
        int fd = ::open("/proc/self/fd/0", O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0) {
            shared_flags_ = ::fcntl(STDIN_FILENO, F_GETFL);
            fd = ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0);
        }
        if (fd < 0) {
            failed_ = error_code(errno, boost::system::system_category());
            return;
        }
        d_.assign(fd, failed_);
        if (failed_) ::close(fd);
        else open_ = true;
    }
    standard_input(const standard_input&) = delete;
    standard_input& operator=(const standard_input&) = delete;
    ~standard_input()
    {
        error_code ignored;
        d_.close(ignored);
        if (shared_flags_ && *shared_flags_ >= 0) ::fcntl(STDIN_FILENO, F_SETFL, *shared_flags_);
    }

    // asio::error::eof at the end of stdin, another error if it cannot be read, operation_aborted if cancelled.
    asio::awaitable<error_code> until_end()
    {
        if (failed_) co_return failed_;
        if (!open_) co_return asio::error::eof;
        std::array<char, 4096> buf;
        for (;;) {
            auto [ec, n] = co_await d_.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
            if (ec) co_return ec;
        }
    }

private:
    asio::posix::stream_descriptor d_;
    bool open_ = false;
    error_code failed_;
    std::optional<int> shared_flags_;  // fd 0's status flags, when d_ shares its open file description
};

// Why the lock was lost, once it is. An error from the wait means "not lost" (released or cancelled): when
// cancelled, the race is over; otherwise (it cannot happen while hold() has the guard) the other branches of
// the race decide, so wait on until they do.
asio::awaitable<error_code> loss(zklock::guard& g)
{
    auto [ec, why] = co_await g.async_wait_lost(asio::as_tuple(asio::use_awaitable));
    if (!ec) co_return why;
    if (ec == asio::error::operation_aborted) co_return ec;
    asio::steady_timer never(co_await asio::this_coro::executor, asio::steady_timer::time_point::max());
    co_await never.async_wait(asio::as_tuple(asio::use_awaitable));
    co_return ec;
}

// All of `text` on fd; false (errno set) if it cannot be written.
bool write_all(int fd, std::string_view text)
{
    while (!text.empty()) {
        const ssize_t n = ::write(fd, text.data(), text.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return false;
        text.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

}  // namespace

asio::awaitable<hold_result> hold(const options& o, zklock::guard& g, asio::signal_set& interrupts)
{
    // Nothing is spawned without COMMAND, so nothing inherits these. A reader of stdout that has gone (EPIPE)
    // is then reported and the lock released, instead of SIGPIPE killing zklock and leaving its node until the
    // session expires; and reading a terminal from the background fails (EIO) instead of stopping zklock
    // (SIGTTIN) while its session expires.
    ::signal(SIGPIPE, SIG_IGN);
    ::signal(SIGTTIN, SIG_IGN);
    if (!write_all(STDOUT_FILENO, g.token().to_string() + "\n")) {
        const int err = errno;
        say("cannot write the fencing token on stdout (" + std::string(std::strerror(err)) + "); releasing " + o.path);
        co_return hold_result{ex_software, {}};
    }

    standard_input in(co_await asio::this_coro::executor);
    auto r = co_await (in.until_end() || interrupts.async_wait(asio::as_tuple(asio::use_awaitable)) || loss(g) ||
                       revocation(g, o.on_revoke == revoke_action::release));
    if (r.index() == 0) {
        if (const auto ec = std::get<0>(r); ec != asio::error::eof) {
            say("cannot read stdin (" + ec.message() + "); releasing " + o.path);
            co_return hold_result{ex_software, {}};
        }
        co_return hold_result{};  // the end of stdin: release
    }
    if (r.index() == 1) co_return hold_result{};  // SIGINT, SIGTERM or SIGHUP: release
    if (r.index() == 3) {
        tell("lock " + o.path + " revoked (someone asked its holder to let go; --on-revoke release): releasing it");
        co_return hold_result{ex_software, {}};
    }
    const auto why = std::get<2>(r);
    tell("lock " + o.path + " lost while held (" + loss_words(why, o) + ")");
    co_return hold_result{ex_software, why};
}

}  // namespace zklock_cli
