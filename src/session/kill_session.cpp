// testing::kill_session: the ZooKeeper FAQ's way to expire a session on purpose. A second client opens
// the same session (same id and password), which moves it away from the first, then closes it, which
// ends it on the server. Lives in the session layer because it speaks to the C client directly.
#include <zklock/session.hpp>
#include <zklock/testing/server.hpp>

#include "c_client.hpp"
#include "session_impl.hpp"

#include <zookeeper/zookeeper.h>

#include <cstring>
#include <stdexcept>

#include <poll.h>

namespace zklock::testing {
namespace {

// Done when the server lets us into the session (we then close it), or says it has expired already.
void note_outcome(zhandle_t*, int type, int state, const char*, void* ctx)
{
    if (type == ZOO_SESSION_EVENT && (state == ZOO_CONNECTED_STATE || state == ZOO_EXPIRED_SESSION_STATE))
        *static_cast<bool*>(ctx) = true;
}

}  // namespace

void kill_session(const zklock::session& s, std::chrono::milliseconds timeout)
{
    const auto [id, password] = s.impl()->credentials();
    if (id == 0 || password.size() != sizeof(clientid_t::passwd))
        throw std::runtime_error("kill_session: the session was never connected");
    clientid_t cid{};
    cid.client_id = id;
    std::memcpy(cid.passwd, password.data(), sizeof cid.passwd);

    bool connected = false;
    // The C client's process-wide mutex only around each call into it (as the sessions' pumps hold it),
    // never across the waits: other sessions' pumps of this process go on meanwhile (review 4).
    zhandle_t* zh = nullptr;
    {
        std::lock_guard<std::mutex> lock(zklock::detail::c_client_mutex());
        zh = zookeeper_init2(s.config().hosts.c_str(), note_outcome, static_cast<int>(s.negotiated_timeout().count()),
                             &cid, &connected, 0, [](const char*) {});  // this helper's client logs nothing
    }
    if (!zh) throw std::runtime_error("kill_session: cannot make a ZooKeeper handle");
    // Drive the handle ourselves (no event loop here) until the server has answered.
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!connected && std::chrono::steady_clock::now() < deadline) {
        int fd = -1, interest = 0;
        timeval tv{};
        {
            std::lock_guard<std::mutex> lock(zklock::detail::c_client_mutex());
            zookeeper_interest(zh, &fd, &interest, &tv);
        }
        pollfd p{fd, static_cast<short>(((interest & ZOOKEEPER_READ) ? POLLIN : 0) |
                                        ((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0)),
                 0};
        const int wait_ms = std::min<int>(100, static_cast<int>(tv.tv_sec * 1000 + tv.tv_usec / 1000));
        ::poll(&p, fd >= 0 ? 1 : 0, wait_ms);
        std::lock_guard<std::mutex> lock(zklock::detail::c_client_mutex());
        zookeeper_process(zh, ((p.revents & POLLIN) ? ZOOKEEPER_READ : 0) | ((p.revents & POLLOUT) ? ZOOKEEPER_WRITE : 0));
    }
    // Closing the session ends it on the server. It may wait for the server (seconds, for a silent one):
    // off the mutex, as close_handle does, since this handle logs nothing.
    zklock::detail::close_handle(zh, nullptr);
    if (!connected) throw std::runtime_error("kill_session: no ZooKeeper server answered");
}

}  // namespace zklock::testing
