// A read-mostly cache on the read/write lock (zklock::shared_mutex): reader processes read a config
// that refreshers rewrite now and then. The config is two znodes, PATH/config and PATH/config-sum (its
// checksum), written one after the other: a reader that read during a refresh would find them
// disagree. The read side lets readers in together; the write side keeps them (and other refreshers)
// out while a refresh writes. (ZooKeeper's multi makes two writes atomic by itself; a lock is for
// updates that also read, compute or call elsewhere in between, as real refreshes do.)
//
//   cache_refresher [--hosts HOSTS] [--readers N] [--clients N] [--reads N] [--refreshers N]
//                   [--refreshes N] [--path ZNODE]
//
// Each session stands for a process: --readers sessions with --clients coroutines each doing --reads
// reads, and --refreshers sessions doing --refreshes refreshes each. Without --hosts it starts a local
// ZooKeeper. Exit status 0 only if no read was inconsistent, no reader met a writer, and every refresh
// counted (the final version is refreshers x refreshes).
#include <zklock/session.hpp>
#include <zklock/shared_mutex.hpp>
#include <zklock/testing/server.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);  // errors as values

struct options {
    std::string hosts;  // empty: start a local ZooKeeper
    int readers = 3, clients = 4, reads = 25, refreshers = 2, refreshes = 10;
    std::string path = "/zklock-demo/cache";
};

[[noreturn]] void usage(int code)
{
    std::cerr << "usage: cache_refresher [--hosts HOSTS] [--readers N] [--clients N (per reader)] [--reads N (per"
                 " client)] [--refreshers N] [--refreshes N (per refresher)] [--path ZNODE]\n";
    std::exit(code);
}

options parse(int argc, char** argv)
{
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        auto number = [&]() {
            if (i + 1 >= argc) usage(64);
            char* end = nullptr;
            const long n = std::strtol(argv[++i], &end, 10);
            if (*argv[i] == '\0' || *end != '\0' || n < 1 || n > 100'000) usage(64);
            return static_cast<int>(n);
        };
        if (a == "--hosts" && i + 1 < argc) o.hosts = argv[++i];
        else if (a == "--path" && i + 1 < argc) o.path = argv[++i];
        else if (a == "--readers") o.readers = number();
        else if (a == "--clients") o.clients = number();
        else if (a == "--reads") o.reads = number();
        else if (a == "--refreshers") o.refreshers = number();
        else if (a == "--refreshes") o.refreshes = number();
        else if (a == "-h" || a == "--help") usage(0);
        else usage(64);
    }
    return o;
}

/// FNV-1a, in hex: any reader in any language can recompute it.
std::string checksum(std::string_view data)
{
    std::uint64_t h = 14695981039346656037ull;
    for (unsigned char c : data) h = (h ^ c) * 1099511628211ull;
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

/// What a refresh "fetched from the source of truth": its version and settings that depend on it.
std::string make_config(int version)
{
    return "version=" + std::to_string(version) + "\nendpoint=backend-" + std::to_string(version % 3) +
           ".internal:8080\nttl_s=" + std::to_string(30 + version % 5) + "\n";
}
int version_of(const std::string& config) { return std::atoi(config.c_str() + config.find('=') + 1); }

/// What everyone saw. All coroutines run on one thread, so plain counters are enough; the in-process
/// room counts who is inside, so a reader meeting a writer is caught even if the checksums agreed.
struct stats {
    int reads = 0, refreshes = 0, inconsistent = 0, overlaps = 0, lost_refreshes = 0;
    int readers_inside = 0, writers_inside = 0, most_readers = 0, held_at_once = 0;
    std::set<int> versions_seen;
    void enter_read()
    {
        if (writers_inside > 0) ++overlaps;
        most_readers = std::max(most_readers, ++readers_inside);
    }
    void enter_write()
    {
        if (readers_inside > 0 || writers_inside > 0) ++overlaps;
        ++writers_inside;
    }
};

struct paths {
    std::string lock, value, sum;
    explicit paths(const std::string& base) : lock(base + "/lock"), value(base + "/config"), sum(value + "-sum") {}
};

/// A reader: each read stands for a request that needs the config, consistent, under the read side.
asio::awaitable<void> reader(zklock::session& s, paths p, int reads, stats& st)
{
    zklock::shared_mutex rw(s, p.lock);
    for (int i = 0; i < reads; ++i) {
        // A timeout rather than waiting forever: a stuck refresher must not hang every request. Here it
        // throws (system_error with error::timeout); order_server shows errors as values instead.
        auto g = co_await rw.acquire_shared(10s, asio::use_awaitable);
        st.enter_read();
        auto [value, vst] = co_await s.async_get_data(p.value, asio::use_awaitable);
        auto [sum, sst] = co_await s.async_get_data(p.sum, asio::use_awaitable);
        if (checksum(value) != sum) ++st.inconsistent;  // a half-done refresh: the lock failed us
        st.versions_seen.insert(version_of(value));
        ++st.reads;
        --st.readers_inside;
        co_await g.release(asio::use_awaitable);
    }
}

/// A refresher: read-modify-write of the config under the write side, then a downgrade to the read
/// side to check what it wrote while readers come back in (but no other writer can).
asio::awaitable<void> refresher(zklock::session& s, paths p, int refreshes, stats& st)
{
    zklock::shared_mutex rw(s, p.lock);
    for (int i = 0; i < refreshes; ++i) {
        auto [ec, w] = co_await rw.acquire(10s, use_tuple);
        if (ec) throw boost::system::system_error(ec, "write side of " + p.lock);  // timeout included
        st.enter_write();
        auto [old, ost] = co_await s.async_get_data(p.value, asio::use_awaitable);
        const std::string value = make_config(version_of(old) + 1);
        // Two unconditional writes: between them the config is inconsistent, which only the lock hides.
        co_await s.async_set_data(p.value, value, -1, asio::use_awaitable);
        co_await s.async_set_data(p.sum, checksum(value), -1, asio::use_awaitable);
        --st.writers_inside;

        auto r = co_await rw.acquire_shared(w, asio::use_awaitable);  // downgrade: no writer slips in
        co_await w.release(asio::use_awaitable);                        // readers may come in now
        st.enter_read();
        auto [back, bst] = co_await s.async_get_data(p.value, asio::use_awaitable);
        if (back != value) ++st.lost_refreshes;  // another writer slipped in between
        --st.readers_inside;
        co_await r.release(asio::use_awaitable);
        ++st.refreshes;
    }
}

/// Writes `data` to `path`, creating it and its missing ancestors (empty) if need be.
asio::awaitable<void> put(zklock::session& s, const std::string& path, const std::string& data)
{
    for (std::size_t pos = path.find('/', 1); pos != std::string::npos; pos = path.find('/', pos + 1)) {
        auto [ec, created, st] =
            co_await s.async_create(path.substr(0, pos), std::string(), zklock::create_mode::persistent, use_tuple);
        if (ec && ec != zklock::zk_errc::node_exists) throw boost::system::system_error(ec, "create " + path);
    }
    auto [ec, created, st] = co_await s.async_create(path, data, zklock::create_mode::persistent, use_tuple);
    if (ec == zklock::zk_errc::node_exists) co_await s.async_set_data(path, data, -1, asio::use_awaitable);
    else if (ec) throw boost::system::system_error(ec, "create " + path);
}

asio::awaitable<void> run(const options& o, stats& st)
{
    auto ex = co_await asio::this_coro::executor;
    zklock::session_config cfg;
    cfg.hosts = o.hosts;
    std::vector<std::unique_ptr<zklock::session>> sessions;  // the readers', then the refreshers'
    for (int i = 0; i < o.readers + o.refreshers; ++i) {
        sessions.push_back(std::make_unique<zklock::session>(ex, cfg));
        co_await sessions.back()->async_connect(asio::use_awaitable);
    }
    const auto readers = static_cast<std::size_t>(o.readers);
    auto& admin = *sessions.back();

    // The first version, written under the write side like every later one.
    const paths p(o.path);
    zklock::shared_mutex rw(admin, p.lock);
    auto w = co_await rw.acquire(10s, asio::use_awaitable);
    co_await put(admin, p.value, make_config(0));
    co_await put(admin, p.sum, checksum(make_config(0)));
    co_await w.release(asio::use_awaitable);

    // Readers share: the read side held by every reader session at once (each would wait for a
    // writer), while a writer's one look (try_acquire) is turned away with error::timeout.
    std::vector<zklock::shared_mutex> locks;
    std::vector<zklock::guard> held;
    for (std::size_t i = 0; i < readers; ++i) locks.emplace_back(*sessions[i], p.lock);
    for (auto& l : locks) held.push_back(co_await l.acquire_shared(5s, asio::use_awaitable));
    auto [ec, none] = co_await rw.try_acquire(use_tuple);
    if (ec != zklock::error::timeout) throw std::runtime_error("a writer got in while readers held the lock");
    st.held_at_once = static_cast<int>(held.size());
    for (auto& g : held) co_await g.release(asio::use_awaitable);
    std::cout << "cache_refresher: " << st.held_at_once << " reader sessions held the read side at once; a writer's"
              << " try_acquire: " << ec.message() << std::endl;

    // Everyone at once; `done` is woken when the last one finishes or the first one fails.
    const auto start = std::chrono::steady_clock::now();
    int running = o.readers * o.clients + o.refreshers;
    std::exception_ptr failure;
    asio::steady_timer done(ex, std::chrono::steady_clock::time_point::max());
    auto finished = [&](std::exception_ptr e) {
        if (e && !failure) failure = e;
        if (--running == 0 || e) done.cancel();
    };
    for (std::size_t i = 0; i < sessions.size(); ++i) {
        if (i >= readers) asio::co_spawn(ex, refresher(*sessions[i], p, o.refreshes, st), finished);
        else
            for (int c = 0; c < o.clients; ++c) asio::co_spawn(ex, reader(*sessions[i], p, o.reads, st), finished);
    }
    while (running > 0 && !failure) co_await done.async_wait(use_tuple);
    if (failure) std::rethrow_exception(failure);
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    auto [last, lst] = co_await admin.async_get_data(p.value, asio::use_awaitable);
    for (auto& s : sessions) co_await s->async_close(use_tuple);

    std::printf("\nsummary\n");
    std::printf("  reads                 %d\n", st.reads);
    std::printf("  refreshes             %d\n", st.refreshes);
    std::printf("  inconsistent reads    %d\n", st.inconsistent);
    std::printf("  lock overlaps         %d   (a reader and a writer, or two writers, inside at once)\n", st.overlaps);
    std::printf("  lost refreshes        %d\n", st.lost_refreshes);
    std::printf("  final version         %d\n", version_of(last));
    std::printf("  versions seen         %zu   (distinct versions the readers read)\n", st.versions_seen.size());
    std::printf("  readers held at once  %d   (one per reader session, before the run)\n", st.held_at_once);
    std::printf("  most readers at once  %d   (during the run)\n", st.most_readers);
    std::printf("  elapsed               %.2f s\n", elapsed);
    const bool ok = st.inconsistent == 0 && st.overlaps == 0 && st.lost_refreshes == 0 &&
                    st.reads == o.readers * o.clients * o.reads && version_of(last) == o.refreshers * o.refreshes;
    std::printf("  result                %s\n", ok ? "OK: every read consistent" : "FAILED");
    if (!ok) throw std::runtime_error("the figures are wrong");
}

}  // namespace

int main(int argc, char** argv)
{
    options o = parse(argc, argv);
    try {
        std::unique_ptr<zklock::testing::server> local;  // no --hosts: bring our own ZooKeeper
        if (o.hosts.empty()) {
            local = std::make_unique<zklock::testing::server>();
            o.hosts = local->connect_string();
        }
        asio::io_context ioc;
        stats st;
        std::exception_ptr failure;
        asio::co_spawn(ioc, run(o, st), [&](std::exception_ptr e) {
            failure = e;
            ioc.stop();  // coroutines still running after a failure end with the process
        });
        ioc.run();
        if (failure) std::rethrow_exception(failure);
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "cache_refresher: " << e.what() << "\n";
        return 1;
    }
}
