// zklock_bench floor N: what a lock cycle costs the bare ZooKeeper C client, with no recipe at all: the
// floor that zklock's uncontended and independent figures are measured against (issue 22).
//   serial:    N cycles of create(ephemeral, sequential) then delete, each waiting for its answer;
//   pipelined: one session, PATHS paths each running such cycles back to back (20 x N cycles in all),
//              so that PATHS creates or deletes are in flight at once, as zklock's `independent T=32`.
// No lock is taken: nobody lists, nobody watches. A recipe cannot do a cycle with fewer requests.
#include "common.hpp"

#include <zookeeper/zookeeper.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cinttypes>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace zklock_bench {

namespace {

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
        const auto give_up = clk::now() + std::chrono::seconds(120);
        while (!done()) {
            if (clk::now() > give_up) throw std::runtime_error("floor: no answer from ZooKeeper in 120 s");
            int fd = -1, interest = 0;
            timeval tv{};
            zookeeper_interest(zh_, &fd, &interest, &tv);
            fd_ = fd;
            pollfd p{fd, static_cast<short>(((interest & ZOOKEEPER_READ) ? POLLIN : 0) |
                                            ((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0)),
                     0};
            ::poll(&p, fd >= 0 ? 1 : 0, static_cast<int>(tv.tv_sec * 1000 + tv.tv_usec / 1000));
            zookeeper_process(zh_, ((p.revents & POLLIN) ? ZOOKEEPER_READ : 0) | ((p.revents & POLLOUT) ? ZOOKEEPER_WRITE : 0));
            // It reads one answer per call: the answers already in the socket are read before polling
            // again, as zklock's pump does, so that the floor is the server's and not this loop's.
            int available = 0;
            while (fd >= 0 && ::ioctl(fd, FIONREAD, &available) == 0 && available > 0 &&
                   zookeeper_process(zh_, ZOOKEEPER_READ) == ZOK) {
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

// One path's cycles: create, then delete what was created, then again, until `left` runs out.
struct path_cycles {
    bare_client* client = nullptr;
    std::string prefix;  // DIR/n-: the sequential node's name
    std::string node;    // the node created, being deleted
    std::int64_t* left = nullptr;
    std::size_t* running = nullptr;
    int error = ZOK;

    void next()
    {
        if ((*left)-- <= 0) {
            --*running;
            return;
        }
        client->send_one([this] {
            zoo_acreate(client->handle(), prefix.c_str(), "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL | ZOO_SEQUENCE,
                        &path_cycles::created, this);
        });
    }
    static void created(int rc, const char* path, const void* ctx)
    {
        auto* p = static_cast<path_cycles*>(const_cast<void*>(ctx));
        if (rc != ZOK) return p->fail(rc);
        p->node = path;
        p->client->send_one([p] { zoo_adelete(p->client->handle(), p->node.c_str(), -1, &path_cycles::deleted, p); });
    }
    static void deleted(int rc, const void* ctx)
    {
        auto* p = static_cast<path_cycles*>(const_cast<void*>(ctx));
        if (rc != ZOK) return p->fail(rc);
        p->next();
    }
    void fail(int rc)
    {
        error = rc;
        --*running;
    }
};

// Runs `cycles` cycles over `paths` paths under `dir`; returns the seconds it took.
double run_cycles(bare_client& c, const std::string& dir, std::size_t paths, std::int64_t cycles)
{
    std::vector<path_cycles> each(paths);
    std::size_t running = paths;
    std::int64_t left = cycles;
    const auto t0 = clk::now();
    for (std::size_t i = 0; i < paths; ++i) {
        each[i] = path_cycles{&c, dir + "/p" + std::to_string(i) + "-", {}, &left, &running};
        each[i].next();
    }
    c.pump([&] { return running == 0; });
    for (const auto& p : each)
        if (p.error != ZOK) throw std::runtime_error(std::string("floor: a request failed: ") + zerror(p.error));
    return seconds(clk::now() - t0);
}

// Creates the persistent node `path` (it may exist already).
void make_dir(bare_client& c, const std::string& path)
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

}  // namespace

void floor(const options& o, std::size_t n)
{
    constexpr std::size_t paths = 32;
    bare_client c(o.hosts);
    const auto dir = fresh_path();
    make_dir(c, dir.substr(0, dir.rfind('/')));
    make_dir(c, dir);
    const auto count = static_cast<std::int64_t>(n);
    const double serial = run_cycles(c, dir, 1, count);
    const double pipelined = run_cycles(c, dir, paths, 20 * count);
    std::printf("raw-c floor cycles=%zu serial_cycle_us=%.0f serial_cycles_per_s=%.0f paths=%zu pipelined_cycles=%" PRId64
                " pipelined_cycles_per_s=%.0f\n",
                n, 1e6 * serial / static_cast<double>(n), static_cast<double>(n) / serial, paths, 20 * count,
                static_cast<double>(20 * count) / pipelined);
}

}  // namespace zklock_bench
