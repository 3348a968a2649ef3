// The read/write lock's floor (zklock_bench floor: rw_4r1w, rw_16r1w): `rw READERS WRITERS` with no
// recipe. Each worker has a session of its own and loops as the benchmark's workers do: acquire, leave
// at once, release and wait for the delete's answer, acquire again. An acquire is one segment: the create
// of a sequential node (r- for a reader, w- for a writer) and the listing of the directory behind it,
// answered after it (the cheapest way to learn what is ahead: no round trip of its own). It then watches,
// with exists, every node ahead that keeps it out (a reader: each write node; a writer: every node), and
// holds when the last of them is gone: nobody lists again, and a deletion wakes only those it frees or
// brings closer. As in the ring's floors, nothing checks who holds: each holder leaves at once.
// Unlike the ring's floors this one lists: a recipe must find what is ahead of a node that others may
// have queued in front of, and the listing behind the create is the least that finds it.
#include "bare_client.hpp"

#include <charconv>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace zklock_bench {

namespace {

struct floor_rw_run {
    std::string dir;
    std::int64_t left = 0;    // sections still to start
    std::size_t running = 0;  // workers still looping
    int error = ZOK;
};

// A sequential node's number: the last ten digits of its name.
std::int64_t sequence_of(std::string_view name)
{
    std::int64_t n = -1;
    if (name.size() >= 10) std::from_chars(name.data() + name.size() - 10, name.data() + name.size(), n);
    return n;
}

struct floor_rw_worker {
    bare_client* client = nullptr;
    floor_rw_run* r = nullptr;
    bool writer = false;
    std::string prefix;           // DIR/r- or DIR/w-
    std::string node;             // ours, queued or held
    std::size_t keeping_out = 0;  // nodes ahead still there, each watched
    bool stopped = false;

    static floor_rw_worker* of(const void* ctx) { return static_cast<floor_rw_worker*>(const_cast<void*>(ctx)); }

    void acquire()
    {
        if (r->error != ZOK || r->left-- <= 0) return stop();
        client->send_one([this] {
            zoo_acreate(client->handle(), prefix.c_str(), "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL | ZOO_SEQUENCE,
                        &floor_rw_worker::created, this);
            zoo_aget_children(client->handle(), r->dir.c_str(), 0, &floor_rw_worker::listed, this);
        });
    }
    static void created(int rc, const char* path, const void* ctx)
    {
        if (rc != ZOK) return of(ctx)->fail(rc);
        of(ctx)->node = path;
    }
    // Answered after the create (one session's answers come in order), so our node is in the listing.
    static void listed(int rc, const struct String_vector* names, const void* ctx)
    {
        auto* w = of(ctx);
        if (rc != ZOK) return w->fail(rc);
        if (w->node.empty()) return;  // the create failed
        const auto ours = sequence_of(w->node);
        std::vector<std::string> ahead;
        for (int i = 0; i < names->count; ++i) {
            const std::string_view name = names->data[i];
            if (sequence_of(name) < ours && (w->writer || name.starts_with("w-"))) ahead.emplace_back(name);
        }
        w->keeping_out = ahead.size() + 1;  // (+1: not done before every watch is asked)
        w->client->send_one([&] {  // the watches in one segment
            for (const auto& name : ahead)
                zoo_awexists(w->client->handle(), (w->r->dir + "/" + name).c_str(), &floor_rw_worker::fired, w,
                             &floor_rw_worker::watched, w);
        });
        w->one_gone();
    }
    static void watched(int rc, const struct Stat*, const void* ctx)
    {
        if (rc == ZNONODE) of(ctx)->one_gone();  // gone before the watch was set
        else if (rc != ZOK) of(ctx)->fail(rc);
    }
    static void fired(zhandle_t*, int type, int, const char*, void* ctx)
    {
        if (type == ZOO_DELETED_EVENT) static_cast<floor_rw_worker*>(ctx)->one_gone();
    }
    void one_gone()
    {
        if (--keeping_out == 0) hold();
    }
    void hold()
    {
        if (r->error != ZOK) return stop();
        client->send_one([this] {
            zoo_adelete(client->handle(), node.c_str(), -1, &floor_rw_worker::released, this);
        });
    }
    static void released(int rc, const void* ctx)
    {
        if (rc != ZOK) return of(ctx)->fail(rc);
        of(ctx)->node.clear();
        of(ctx)->acquire();
    }
    void fail(int rc)
    {
        if (r->error == ZOK) r->error = rc;
        stop();
    }
    void stop()
    {
        if (!std::exchange(stopped, true)) --r->running;
    }
};

}  // namespace

double run_rw_floor(const std::string& hosts, const std::string& dir, std::size_t readers, std::size_t writers,
                    std::int64_t sections)
{
    floor_rw_run r{dir, sections};
    std::vector<floor_rw_worker> workers(readers + writers);
    // Closed before the workers go (declared after them): the close delivers the events still on their way.
    std::vector<std::unique_ptr<bare_client>> owned;
    std::vector<bare_client*> clients;
    for (std::size_t i = 0; i < workers.size(); ++i)
        clients.push_back(owned.emplace_back(std::make_unique<bare_client>(hosts)).get());
    make_dir(*clients[0], dir);
    r.running = workers.size();
    const auto t0 = clk::now();
    for (std::size_t i = 0; i < workers.size(); ++i) {
        const bool writer = i >= readers;
        workers[i] = floor_rw_worker{clients[i], &r, writer, dir + (writer ? "/w-" : "/r-"), {}, 0, false};
        workers[i].acquire();
    }
    bare_client::pump_all(clients, [&] { return r.running == 0; });
    const double took = seconds(clk::now() - t0);
    if (r.error != ZOK) throw std::runtime_error(std::string("floor: a read/write request failed: ") + zerror(r.error));
    return took;
}

}  // namespace zklock_bench
