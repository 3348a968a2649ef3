// The bare ZooKeeper C client on the calling thread, pumped by poll(2): what zklock_bench floor measures
// the protocols' floors with (bench_floor.cpp, bench_floor_rw.cpp). No Asio, no recipe.
#pragma once

#include "common.hpp"

#include <zookeeper/zookeeper.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace zklock_bench {

// The C client on this thread, pumped by poll(2) until `done()` says so.
class bare_client {
public:
    explicit bare_client(const std::string& hosts)
    {
        zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
        zh_ = zookeeper_init(hosts.c_str(), &bare_client::on_event, 30000, nullptr, this, 0);
        if (!zh_) throw std::runtime_error("floor: zookeeper_init failed");
        pump([this] { return connected_; });
    }
    ~bare_client() { zookeeper_close(zh_); }
    bare_client(const bare_client&) = delete;
    bare_client& operator=(const bare_client&) = delete;

    zhandle_t* handle() const { return zh_; }

    /// Makes one request by `call()`, sent as one TCP segment. The C client writes a request as two sends
    /// (its length, then its body) on a TCP_NODELAY socket: two segments, and the server's selector may
    /// wake for each. zklock corks its socket for a turn's requests; corked here too, the floor is the
    /// server's and not the C client's way of writing (uncorked, zklock's awaited cycle ran at 131-133%
    /// of this floor in the jobs of 2026-11-27 08:46 and 08:50).
    template <class Call>
    void send_one(Call call)
    {
        const int on = 1, off = 0;
        if (fd_ >= 0) ::setsockopt(fd_, IPPROTO_TCP, TCP_CORK, &on, sizeof on);
        call();
        if (fd_ >= 0) ::setsockopt(fd_, IPPROTO_TCP, TCP_CORK, &off, sizeof off);
    }

    template <class Done>
    void pump(Done done)
    {
        bare_client* one[] = {this};
        pump_all(one, done);
    }

    /// Runs the C clients of `clients` (on this thread) until `done()` says so.
    template <class Done>
    static void pump_all(std::span<bare_client* const> clients, Done done)
    {
        const auto give_up = clk::now() + std::chrono::seconds(120);
        std::vector<pollfd> p(clients.size());
        while (!done()) {
            if (clk::now() > give_up) throw std::runtime_error("floor: no answer from ZooKeeper in 120 s");
            int wait_ms = 1000;
            for (std::size_t i = 0; i < clients.size(); ++i) {
                int fd = -1, interest = 0;
                timeval tv{};
                zookeeper_interest(clients[i]->zh_, &fd, &interest, &tv);
                clients[i]->fd_ = fd;
                p[i] = {fd, static_cast<short>(((interest & ZOOKEEPER_READ) ? POLLIN : 0) |
                                               ((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0)),
                        0};
                wait_ms = std::min(wait_ms, static_cast<int>(tv.tv_sec * 1000 + tv.tv_usec / 1000));
            }
            ::poll(p.data(), p.size(), wait_ms);
            for (std::size_t i = 0; i < clients.size(); ++i) {
                zhandle_t* zh = clients[i]->zh_;
                zookeeper_process(zh, ((p[i].revents & POLLIN) ? ZOOKEEPER_READ : 0) |
                                          ((p[i].revents & POLLOUT) ? ZOOKEEPER_WRITE : 0));
                // It reads one answer per call: the answers already in the socket are read before polling
                // again, as zklock's pump does, so that the floor is the server's and not this loop's.
                int available = 0;
                while (p[i].fd >= 0 && ::ioctl(p[i].fd, FIONREAD, &available) == 0 && available > 0 &&
                       zookeeper_process(zh, ZOOKEEPER_READ) == ZOK) {
                }
            }
        }
    }

private:
    static void on_event(zhandle_t*, int, int state, const char*, void* ctx)
    {
        if (state == ZOO_CONNECTED_STATE) static_cast<bare_client*>(ctx)->connected_ = true;
    }
    zhandle_t* zh_ = nullptr;
    int fd_ = -1;  // the C client's socket at the last look (requests are made between looks)
    bool connected_ = false;
};

// Creates the persistent node `path` (it may exist already).
inline void make_dir(bare_client& c, const std::string& path)
{
    struct answer {
        int rc = ZOK;
        bool in = false;
    } a;
    zoo_acreate(c.handle(), path.c_str(), "", 0, &ZOO_OPEN_ACL_UNSAFE, 0,
                [](int rc, const char*, const void* ctx) {
                    auto* r = static_cast<answer*>(const_cast<void*>(ctx));
                    r->rc = rc, r->in = true;
                },
                &a);
    c.pump([&] { return a.in; });
    if (a.rc != ZOK && a.rc != ZNODEEXISTS) throw std::runtime_error("floor: cannot create " + path + ": " + zerror(a.rc));
}

/// The read/write lock's protocol with no recipe (bench_floor_rw.cpp): `sections` sections between
/// `readers` and `writers` new sessions under the new directory `dir`; returns the seconds they took.
double run_rw_floor(const std::string& hosts, const std::string& dir, std::size_t readers, std::size_t writers,
                    std::int64_t sections);

}  // namespace zklock_bench
