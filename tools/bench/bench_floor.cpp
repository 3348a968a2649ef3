// zklock_bench floor N: what a lock cycle costs the bare ZooKeeper C client, with no recipe at all: the
// floor that zklock's uncontended, dropped, independent, strict FIFO and semaphore figures are measured
// against (issue 22).
//   serial:    N cycles of create(ephemeral, sequential) then delete, each waiting for its answer;
//   pipelined: one session, PATHS paths each running such cycles back to back (20 x N cycles in all),
//              so that PATHS creates or deletes are in flight at once, as zklock's `independent T=32`;
//   multis:    N cycles of one multi, the delete of the last node and the create of the next (a dropped
//              guard's cycle);
//   ring:      N hand-offs between 4 sessions queued in one directory, each a multi and the watch event
//              that wakes the next (a hand-off through ZooKeeper, as in `contended 4 8` with
//              local_handoff_limit=0);
//   semaphore: the same between 8 sessions, each holder also creating its permit and counting the
//              permits before it lets the lock go (`semaphore 3 8`: SemaphoreV2's internal lock);
//   rw:        N sections of `rw 4 1` and of `rw 16 1`, the read/write lock's protocol (bench_floor_rw.cpp).
// Nobody lists a queue but the read/write lock, and nothing checks who holds. A recipe cannot do a cycle or
// a hand-off with fewer requests.
#include "bare_client.hpp"

#include <cinttypes>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace zklock_bench {

namespace {

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

// --- Hand-offs through ZooKeeper with no recipe: the floor of strict FIFO, and with one session the floor
// of a dropped guard's cycle. SESSIONS sessions on this thread each queue one node in one directory, in
// turn, and each watches the node just ahead of its own: its name is known in this process, so nobody
// lists. The holder hands off with one multi, the delete of its node and the create of its next one at
// the back; the session behind wakes on the watch's event and does the same. Alone, a session's multi
// answer is its next hold. A recipe cannot hand off with less: it must also find what is ahead of it.
// With permits, the ring is a semaphore's internal lock (Curator's SemaphoreV2): the holder creates its
// permit and counts the permits before its multi lets the lock go (the three in one segment, answered in
// order), and deletes the permit once the multi has answered. The count is asked as the protocol asks it,
// not compared: with sections this short, at most two permits are out at once.
struct ring {
    std::string prefix;         // DIR/n-
    std::string permits;        // DIR-permits, or empty: no permits
    std::string permit_prefix;  // DIR-permits/p-
    std::string tail;       // the newest node: a new one queues behind it
    std::int64_t left = 0;  // hand-offs still to make
    bool done = false;
    int error = ZOK;
};

struct ring_member {
    bare_client* client = nullptr;
    ring* r = nullptr;
    std::string node;    // ours, queued or held
    std::string permit;  // the permit it holds (with permits)
    char created[512] = {};
    zoo_op_t ops[2] = {};
    zoo_op_result_t results[2] = {};

    void hand_off()
    {
        if (r->done) return;  // (an event that the close delivers)
        if (r->left-- <= 0) {
            r->done = true;
            return;
        }
        zoo_delete_op_init(&ops[0], node.c_str(), -1);
        zoo_create_op_init(&ops[1], r->prefix.c_str(), "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL | ZOO_SEQUENCE,
                           created, sizeof created);
        client->send_one([this] {
            if (!r->permits.empty()) {
                zoo_acreate(client->handle(), r->permit_prefix.c_str(), "", 0, &ZOO_OPEN_ACL_UNSAFE,
                            ZOO_EPHEMERAL | ZOO_SEQUENCE, &ring_member::permit_created, this);
                zoo_aget_children(client->handle(), r->permits.c_str(), 0, &ring_member::counted, this);
            }
            zoo_amulti(client->handle(), 2, ops, results, &ring_member::multi_done, this);
        });
    }
    // The C client's callbacks carry the member as their context.
    static ring_member* of(const void* ctx) { return static_cast<ring_member*>(const_cast<void*>(ctx)); }
    static void permit_created(int rc, const char* path, const void* ctx)
    {
        if (rc != ZOK) return of(ctx)->fail(rc);
        of(ctx)->permit = path;
    }
    // The count and the permit's delete: their answers matter only when they fail.
    static void answered(int rc, const void* ctx)
    {
        if (rc != ZOK) of(ctx)->fail(rc);
    }
    static void counted(int rc, const struct String_vector*, const void* ctx) { answered(rc, ctx); }
    // Our new node queues behind the newest one (the hand-offs are one after the other, so the answers
    // come in the order of the creates), whose deletion we watch.
    static void multi_done(int rc, const void* ctx)
    {
        auto* m = of(ctx);
        if (rc != ZOK) return m->fail(rc);
        if (!m->permit.empty())  // (answered before the multi) the section is over
            m->client->send_one([m] {
                zoo_adelete(m->client->handle(), m->permit.c_str(), -1, &ring_member::answered, m);
            });
        const std::string deleted = std::exchange(m->node, m->created);
        const std::string ahead = std::exchange(m->r->tail, m->node);
        if (ahead == deleted) return m->hand_off();  // alone: nobody was ahead of the new node
        m->watch(ahead);
    }
    void watch(const std::string& ahead)
    {
        client->send_one([&] {
            zoo_awexists(client->handle(), ahead.c_str(), &ring_member::fired, this, &ring_member::watched, this);
        });
    }
    static void watched(int rc, const struct Stat*, const void* ctx)
    {
        if (rc == ZNONODE) of(ctx)->hand_off();  // gone before the watch was set: ours is first
        else if (rc != ZOK) of(ctx)->fail(rc);
    }
    static void fired(zhandle_t*, int type, int, const char*, void* ctx)
    {
        if (type == ZOO_DELETED_EVENT) static_cast<ring_member*>(ctx)->hand_off();
    }
    void fail(int rc)
    {
        r->error = rc;
        r->done = true;
    }
};

// Makes `handoffs` hand-offs between `sessions` new sessions, with permits or not; returns the seconds
// they took.
double run_ring(const std::string& hosts, std::size_t sessions, const std::string& dir, std::int64_t handoffs,
                bool permits = false)
{
    ring r{dir + "/n-", permits ? dir + "-permits" : "", dir + "-permits/p-", {}, handoffs};
    std::vector<ring_member> members(sessions);
    // Closed before the ring goes (declared after it): events still on their way when the last hand-off
    // is made are delivered by the close.
    std::vector<std::unique_ptr<bare_client>> owned;
    std::vector<bare_client*> clients;
    for (std::size_t i = 0; i < sessions; ++i)
        clients.push_back(owned.emplace_back(std::make_unique<bare_client>(hosts)).get());
    make_dir(*clients[0], dir);
    if (permits) make_dir(*clients[0], r.permits);
    for (std::size_t i = 0; i < clients.size(); ++i) {  // each queues a node, in turn
        auto& m = members[i];
        m.client = clients[i], m.r = &r;
        zoo_acreate(m.client->handle(), r.prefix.c_str(), "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL | ZOO_SEQUENCE,
                    [](int rc, const char* path, const void* ctx) {
                        if (rc != ZOK) return ring_member::of(ctx)->fail(rc);
                        ring_member::of(ctx)->node = path;
                    },
                    &m);
        m.client->pump([&] { return !m.node.empty() || r.error != ZOK; });
        if (r.error != ZOK) break;
        if (i > 0) m.watch(r.tail);
        r.tail = m.node;
    }
    const auto t0 = clk::now();
    if (r.error == ZOK) members[0].hand_off();  // the first holds
    bare_client::pump_all(clients, [&] { return r.done; });
    const double took = seconds(clk::now() - t0);
    if (r.error != ZOK) throw std::runtime_error(std::string("floor: a hand-off failed: ") + zerror(r.error));
    return took;
}

}  // namespace

void floor(const options& o, std::size_t n)
{
    constexpr std::size_t paths = 32, ring_sessions = 4, semaphore_sessions = 8;
    bare_client c(o.hosts);
    const auto dir = fresh_path();
    make_dir(c, dir.substr(0, dir.rfind('/')));
    make_dir(c, dir);
    const auto count = static_cast<std::int64_t>(n);
    const double serial = run_cycles(c, dir, 1, count);
    const double pipelined = run_cycles(c, dir, paths, 20 * count);
    const double multis = run_ring(o.hosts, 1, dir + "-alone", count);
    const double handoffs = run_ring(o.hosts, ring_sessions, dir + "-ring", count);
    const double sections = run_ring(o.hosts, semaphore_sessions, dir + "-semaphore", count, true);
    const double rw4 = run_rw_floor(o.hosts, dir + "-rw4", 4, 1, count);
    const double rw16 = run_rw_floor(o.hosts, dir + "-rw16", 16, 1, count);
    const auto per_s = [](std::int64_t k, double s) { return static_cast<double>(k) / s; };
    std::printf("raw-c floor cycles=%zu serial_cycle_us=%.0f serial_cycles_per_s=%.0f paths=%zu pipelined_cycles=%" PRId64
                " pipelined_cycles_per_s=%.0f multi_cycles_per_s=%.0f ring_sessions=%zu handoffs_per_s=%.0f"
                " semaphore_sessions=%zu semaphore_sections_per_s=%.0f rw_4r1w_sections_per_s=%.0f"
                " rw_16r1w_sections_per_s=%.0f\n",
                n, 1e6 * serial / static_cast<double>(n), per_s(count, serial), paths, 20 * count,
                per_s(20 * count, pipelined), per_s(count, multis), ring_sessions, per_s(count, handoffs),
                semaphore_sessions, per_s(count, sections), per_s(count, rw4), per_s(count, rw16));
}

}  // namespace zklock_bench
