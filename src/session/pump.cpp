// The pump: the session's executor drives the single-threaded C client through its socket and timeout.
#include "c_client.hpp"

#include <algorithm>

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace zklock::detail {

// --- The pump -----------------------------------------------------------------------------------
// interest -> wait for the socket or the C client's timeout -> process -> interest ...
void session_impl::pump()
{
    uncork();
    if (!zh_ || is_final(state)) return;
    int fd = -1, interest = 0;
    timeval tv{};
    int rc;
    {
        c_call scope(log.get());
        rc = zookeeper_interest(zh_, &fd, &interest, &tv);
    }
    if (rc == ZINVALIDSTATE && leave_if_unrecoverable()) return;
    // ZCONNECTIONLOSS and ZOPERATIONTIMEOUT are transient: the C client reconnects on a later interest.
    sync_socket(fd);
    if (c_queue_stale_ && sock_.is_open() && zoo_state(zh_) == ZOO_ASSOCIATING_STATE) {
        // The handshake of the connection after a silent close is out: closing this connection now
        // makes the C client fail and clear what it still holds of the old one (see notice_silent_close).
        c_queue_stale_ = false;
        log->write(log_level::info, "zklock: dropping the first connection after a silent close, so that the C "
                                    "client forgets the requests of the old one");
        drop_connection();
    }
    if (sock_.is_open()) {
        auto arm = [this](asio::posix::stream_descriptor::wait_type type, bool& armed, int event) {
            armed = true;
            sock_.async_wait(type, [self = shared_from_this(), gen = sock_gen_, &armed, event](error_code ec) {
                if (gen != self->sock_gen_) return;  // an old socket: its flags were reset when it was closed
                armed = false;
                if (!ec) self->process(event);
            });
        };
        if ((interest & ZOOKEEPER_READ) && !read_armed_) arm(asio::posix::stream_descriptor::wait_read, read_armed_, ZOOKEEPER_READ);
        if ((interest & ZOOKEEPER_WRITE) && !write_armed_) arm(asio::posix::stream_descriptor::wait_write, write_armed_, ZOOKEEPER_WRITE);
    }
    // Re-armed only when the C client's deadline comes sooner: a timer re-armed at every pass would cost
    // a cancelled wait (a handler) per answer. Firing before a deadline that moved later is harmless.
    const auto due = std::chrono::steady_clock::now() + std::chrono::seconds(tv.tv_sec) +
                     std::chrono::microseconds(tv.tv_usec);
    if (timer_armed_ && timer_.expiry() <= due) return;
    timer_armed_ = true;
    timer_.expires_at(due);
    timer_.async_wait([w = weak_from_this()](error_code ec) {
        if (ec) return;  // cancelled by a sooner deadline, which armed it again
        if (auto self = w.lock()) {
            self->timer_armed_ = false;
            self->process(0);
        }
    });
}

bool session_impl::leave_if_unrecoverable()
{
    const auto st = port_->state();
    if (st != session_state::expired && st != session_state::auth_failed) return false;
    if (st == session_state::expired && renews_on_expiry()) {
        renew();
        return true;
    }
    enter_final(st, st == session_state::auth_failed ? error_code(zklock::error::auth_failed)
                                                     : error_code(zklock::error::session_expired));
    return true;
}

// The C client sends each request as it is made (nonblocking_send, zookeeper.c), and when that send
// fails (a connection reset by a killed server, or shut down) it closes the socket and marks itself not
// connected, with no session event and without failing the requests already sent on that socket: it
// reconnects at the next interest, and the server never answers them on the new connection. Nothing
// would tell our state or our waiters that the connection was lost, and those requests would wait for
// ever. So that loss is made what every other one is: the state goes to connecting, and each request
// out is answered connection_loss now (it may have been applied, as after any loss); the C client's own
// completion of it later only frees it. zoo_set_servers closes the socket in the same way when the
// current server leaves the list (update_addrs).
// The C client also keeps those requests in its queue of sent requests, and would match the next
// connection's answers against them: "out of order", which drops that connection too and fails the
// requests sent on it (runtime inconsistency), with every request made since the close. Only its own
// error path clears that queue, so it is walked down that path at once, before any other request is
// made (clear_c_queue). Should that not be possible, the next connection is dropped as soon as its
// handshake is out (pump), which clears the queue too, but also fails what was made in between.
void session_impl::notice_silent_close()
{
    if (!zh_ || state != session_state::connected || zoo_state(zh_) != ZOO_NOTCONNECTED_STATE) return;
    log->write(log_level::warning, "zklock: the connection to ZooKeeper was closed under the session; "
                                   "the requests out on it fail with connection loss, and the client reconnects");
    close_socket();
    set_state(session_state::connecting);
    const bool stale = !inflight_.empty();
    // In the order they were sent (their ids), as the C client fails a broken connection's requests: the
    // in-flight table's own order is its hash's.
    std::vector<std::pair<std::uint64_t, request_base*>> out(inflight_.begin(), inflight_.end());
    inflight_.clear();
    std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (auto& [rid, r] : out) {
        count_unanswered(*r, zk_errc::connection_loss);
        if (r->watch) drop_watch(r->watch);
        r->fail(zk_errc::connection_loss);
        r->owner.reset();
    }
    c_queue_stale_ = stale && !clear_c_queue();  // their C completions only free them now
    // Deletes held back while a batch was out: that batch is answered now.
    if (!removes_.empty()) asio::post(ex, [self = shared_from_this()] { self->send_removes(); });
}

// The C client opens a connection (zookeeper_interest), which is shut down before it can answer; processing
// it, the C client meets the failure (a refused connect, a handshake that cannot be sent, or a closed
// socket) and runs its error path, which fails and frees every request it held and leaves it disconnected
// (state 0), to connect again at the next interest. It opens none while it waits between attempts.
bool session_impl::clear_c_queue()
{
    c_call scope(log.get());
    int fd = -1, interest = 0;
    timeval tv{};
    // A synchronous failure (socket() or connect() refused, the handshake's send) has run the C client's
    // error path already: the queue is cleared, and the state says so (review 4, L3). No connection opened
    // with no failure (waiting between attempts): nothing was cleared.
    if (zookeeper_interest(zh_, &fd, &interest, &tv) != ZOK) return zoo_state(zh_) == 0;
    if (fd < 0) return false;
    ::shutdown(fd, SHUT_RDWR);
    zookeeper_process(zh_, ZOOKEEPER_READ | ZOOKEEPER_WRITE);
    return zoo_state(zh_) == 0;
}

void session_impl::process(int events)
{
    if (!zh_ || is_final(state)) return;
    int rc;
    {
        c_call scope(log.get());
        rc = zookeeper_process(zh_, events);
    }
    // zookeeper_process also says ZINVALIDSTATE when it merely has no socket (between connection
    // attempts): only the handle's own state tells an expired session.
    if (rc == ZINVALIDSTATE && leave_if_unrecoverable()) return;
    if (events & ZOOKEEPER_READ) drain_answers();
    pump();
}

// zookeeper_process reads one answer per call: with many requests in flight, going back to the reactor
// after each (a wait, a readiness event, a re-arm) would cost more than the answer. The answers already
// in the socket are read here, a bounded number, so that other handlers still get their turn. Not once
// every request is answered: what else may have come (a watch event) is rare, and the reactor reports it,
// so the look into the socket (a system call) would mostly find nothing.
void session_impl::drain_answers()
{
    for (int i = 0; i < 64 && zh_ && !is_final(state) && sock_.is_open() && !inflight_.empty(); ++i) {
        int available = 0;
        if (::ioctl(sock_.native_handle(), FIONREAD, &available) != 0 || available <= 0) return;
        int rc;
        {
            c_call scope(log.get());
            rc = zookeeper_process(zh_, ZOOKEEPER_READ);
        }
        if (rc == ZINVALIDSTATE && leave_if_unrecoverable()) return;
        if (rc != ZOK) return;  // connection loss and the like: the pump takes it from here
    }
}

// Several requests made in one handler share one pump pass; every zoo_a* may leave bytes unsent (or
// even close the socket), so the pump must look again.
void session_impl::kick()
{
    if (kick_posted_) return;
    kick_posted_ = true;
    asio::post(ex, [w = weak_from_this()] {
        if (auto self = w.lock()) {
            self->kick_posted_ = false;
            self->pump();
        }
    });
}

// The C client's socket changes on every reconnect and fd numbers are reused, so the socket is known
// by its inode, and Asio watches a dup() of it: closing our dup never closes ZooKeeper's socket, and
// deregistering it never touches a reused number.
// The inode is not asked again at every pass (a system call per answer) while the handle stays
// connected on the same number: only zookeeper_interest makes a socket, and it leaves the handle
// connecting or associating until the server answers its handshake, which takes further passes here. So
// a handle seen connected on number n at one pass and at the next has kept its socket in between.
void session_impl::sync_socket(int fd)
{
    if (fd < 0) {
        close_socket();
        return;
    }
    const bool connected = zoo_state(zh_) == ZOO_CONNECTED_STATE;
    if (connected && fd == connected_fd_ && sock_.is_open()) return;
    connected_fd_ = -1;
    struct ::stat st{};
    if (::fstat(fd, &st) != 0) {
        close_socket();
        return;
    }
    if (sock_.is_open() && st.st_ino == sock_ino_) {
        if (connected) connected_fd_ = fd;
        return;
    }
    // The C client leaves its socket inheritable: a child process (zklock's COMMAND) must not get it.
    ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) | FD_CLOEXEC);
    close_socket();
    int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) return;
    error_code ec;
    sock_.assign(copy, ec);
    if (ec) {
        ::close(copy);
        return;
    }
    sock_ino_ = st.st_ino;
    if (connected) connected_fd_ = fd;
    if (state == session_state::connecting) watch_handshake();
}

void session_impl::watch_handshake()
{
    using namespace std::chrono_literals;
    const auto limit = std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(cfg.session_timeout / 3),
                                  std::chrono::milliseconds(200), std::chrono::milliseconds(2000));
    handshake_timer_.expires_after(limit);
    handshake_timer_.async_wait([w = weak_from_this(), gen = sock_gen_, limit](error_code ec) {
        auto self = w.lock();
        if (ec || !self || self->sock_gen_ != gen || self->state != session_state::connecting || !self->sock_.is_open())
            return;
        self->log->write(log_level::warning, "a ZooKeeper server accepted the connection but did not answer within " +
                                                 std::to_string(limit.count()) + " ms; trying the next one");
        self->drop_connection();
    });
}

// The C client sends each request as two writes (its length, then its body) and flushes at every call;
// on its TCP_NODELAY socket each write is a segment, and each segment wakes the server. Corked from the
// first request of a turn of the loop until the pump that kick() posted for it runs, a turn's requests
// leave together. The pump always runs (kick), so nothing waits for the kernel's 200 ms cork limit.
void session_impl::cork()
{
    if (corked_ || !sock_.is_open() || state != session_state::connected) return;
    int on = 1;
    if (::setsockopt(sock_.native_handle(), IPPROTO_TCP, TCP_CORK, &on, sizeof on) == 0) corked_ = true;
}

void session_impl::uncork()
{
    if (!std::exchange(corked_, false) || !sock_.is_open()) return;
    int off = 0;
    ::setsockopt(sock_.native_handle(), IPPROTO_TCP, TCP_CORK, &off, sizeof off);
}

void session_impl::close_socket()
{
    ++sock_gen_;
    uncork();  // what this turn wrote leaves now: the C client still owns the connection (zookeeper_close)
    read_armed_ = write_armed_ = false;
    if (sock_.is_open()) {
        error_code ignored;
        sock_.close(ignored);
    }
    sock_ino_ = 0;
    connected_fd_ = -1;
}

int session_impl::release_socket()
{
    int fd = -1;
    if (sock_.is_open() && zh_ && zoo_state(zh_) == ZOO_CONNECTED_STATE) {
        uncork();
        fd = sock_.release();  // (pending waits end with operation_aborted; their generation is old by then)
    }
    close_socket();
    return fd;
}

void session_impl::drop_connection() { port_->drop(); }

}  // namespace zklock::detail
