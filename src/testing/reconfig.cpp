// A short synchronous use of the single-threaded C client (it has no synchronous calls): poll its socket
// until the one request is answered. Only the test harness does this; the library drives the C client
// from Asio.
#include "reconfig.hpp"

#include <zookeeper/zookeeper.h>

#include <poll.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace zklock::testing::detail {
namespace {

struct answer {
    bool done = false;
    int rc = 0;
    std::string config;
};

void on_answer(int rc, const char* value, int len, const struct Stat*, const void* data)
{
    auto* a = static_cast<answer*>(const_cast<void*>(data));
    a->rc = rc;
    if (rc == ZOK && value && len > 0) a->config.assign(value, static_cast<std::size_t>(len));
    a->done = true;
}

void quiet(const char*) {}  // the C client's chatter: the caller reports what matters

/// Whether `config` has every server of `joining` ("server.4=...,server.5=...") and none of `leaving` ("1,2").
bool applied(const std::string& config, const std::string& joining, const std::string& leaving)
{
    auto listed = [&](const std::string& id) { return config.find("server." + id + "=") != std::string::npos; };
    std::istringstream join(joining), leave(leaving);
    for (std::string entry; std::getline(join, entry, ',');)
        if (entry.starts_with("server.") && !listed(entry.substr(7, entry.find('=') - 7))) return false;
    for (std::string id; std::getline(leave, id, ',');)
        if (listed(id)) return false;
    return true;
}

struct handle_closer {
    void operator()(zhandle_t* zh) const { zookeeper_close(zh); }
};

}  // namespace

std::string reconfig(const std::string& host, const std::string& joining, const std::string& leaving,
                     std::chrono::milliseconds limit)
{
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + limit;
    answer a;  // before the handle: closing it may still complete the request into `a`
    std::unique_ptr<zhandle_t, handle_closer> zh(zookeeper_init2(host.c_str(), nullptr, 10'000, nullptr, nullptr, 0, quiet));
    if (!zh) throw std::runtime_error("zklock::testing: cannot make a ZooKeeper handle for " + host);
    // A reconfig that moves the leader may drop this connection before its answer comes: it was then
    // applied or not, and the configuration says which (read once connected again); if not, it is sent again.
    enum class step { reconfig, read_back } next = step::reconfig;
    bool sent = false;
    for (;;) {
        if (clock::now() >= deadline)
            throw std::runtime_error("zklock::testing: reconfig through " + host + " got no answer in time");
        int fd = -1, interest = 0;
        timeval tv{};
        if (const int rc = zookeeper_interest(zh.get(), &fd, &interest, &tv); rc != ZOK && rc != ZCONNECTIONLOSS &&
                                                                               rc != ZOPERATIONTIMEOUT)
            throw std::runtime_error(std::string("zklock::testing: reconfig through ") + host + ": " + zerror(rc));
        const int wait_ms = static_cast<int>(std::min<long>(tv.tv_sec * 1000 + tv.tv_usec / 1000, 100));
        pollfd p{fd, static_cast<short>(((interest & ZOOKEEPER_READ) ? POLLIN : 0) | ((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0)), 0};
        const int ready = ::poll(&p, fd >= 0 ? 1 : 0, wait_ms);
        int events = 0;
        if (ready > 0) {
            if (p.revents & (POLLIN | POLLHUP | POLLERR)) events |= ZOOKEEPER_READ;
            if (p.revents & POLLOUT) events |= ZOOKEEPER_WRITE;
        }
        zookeeper_process(zh.get(), events);
        if (a.done) {
            sent = false;
            a.done = false;
            if (a.rc == ZCONNECTIONLOSS || a.rc == ZOPERATIONTIMEOUT) {
                next = step::read_back;
            } else if (a.rc != ZOK) {
                throw std::runtime_error(std::string("zklock::testing: ZooKeeper refused the reconfig: ") + zerror(a.rc));
            } else if (next == step::reconfig || applied(a.config, joining, leaving)) {
                return a.config;
            } else {
                next = step::reconfig;  // read back, and not applied
            }
        }
        if (!sent && zoo_state(zh.get()) == ZOO_CONNECTED_STATE) {
            const int rc = next == step::reconfig
                               ? zoo_areconfig(zh.get(), joining.empty() ? nullptr : joining.c_str(),
                                               leaving.empty() ? nullptr : leaving.c_str(), nullptr, -1, on_answer, &a)
                               : zoo_agetconfig(zh.get(), 0, on_answer, &a);
            if (rc != ZOK) throw std::runtime_error(std::string("zklock::testing: reconfig refused: ") + zerror(rc));
            sent = true;
        }
    }
}

}  // namespace zklock::testing::detail
