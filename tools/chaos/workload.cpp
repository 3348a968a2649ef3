#include "workload.hpp"

#include <zklock/mutex.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/session.hpp>
#include <zklock/shared_mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <memory>
#include <random>

namespace zklock_chaos {
namespace {

namespace asio = boost::asio;
using namespace boost::asio::experimental::awaitable_operators;
using namespace std::chrono_literals;
using boost::system::error_code;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);
constexpr auto acquire_timeout = 10s;

enum class kind { mutex, read, write, sem };
const char* name(kind k) { return k == kind::mutex ? "mutex" : k == kind::read ? "read" : k == kind::write ? "write" : "sem"; }

asio::awaitable<void> pause(std::chrono::milliseconds d) {
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(tuple_awaitable);
}

struct machine {
    workload& w;
    asio::io_context& ioc;
    int index;
    long running = 0;  // workers not finished
    std::shared_ptr<zklock::session> s;
    bool replacing = false;
    unsigned long next_holder = 0;

    std::shared_ptr<zklock::session> make_session() const {
        zklock::session_config cfg;
        cfg.hosts = w.hosts;
        cfg.session_timeout = 4s;
        cfg.connect_timeout = 30s;
        return std::make_shared<zklock::session>(ioc, std::move(cfg));
    }

    // After an expiry the machine gets a new session; the old one closes with its last user.
    asio::awaitable<void> replace(const std::shared_ptr<zklock::session>& old) {
        if (s != old || replacing) co_return;
        replacing = true;
        while (!w.stop) {
            auto fresh = make_session();
            auto [ec] = co_await fresh->async_connect(tuple_awaitable);
            if (!ec) {
                s = std::move(fresh);
                break;
            }
            co_await pause(200ms);
        }
        replacing = false;
    }

    // The section: the resource is used until done or until the warning, whichever comes first.
    asio::awaitable<void> section(kind k, zklock::guard& g, std::mt19937_64& rng) {
        const std::string who = "lib-" + std::to_string(index) + "-" + std::to_string(++next_holder);
        const std::string token = g.token().to_string();
        w.log.write("enter " + who + ' ' + name(k) + ' ' + token);
        // Mostly short; one in twenty outlasts the loss grace (T/2 = 2 s), so that faults land inside.
        auto hold = std::chrono::milliseconds(rng() % 20 == 0 ? 500 + rng() % 3500 : 1 + rng() % 20);
        if (!w.cut_short) hold = std::chrono::milliseconds(3000 + rng() % 2000);  // deaf: be inside when it comes
        const fenced_counter* resource = k == kind::mutex ? &w.mutex_resource : k == kind::write ? &w.rw_resource : nullptr;
        auto work = [&]() -> asio::awaitable<void> {
            if (!w.cut_short) co_await asio::this_coro::reset_cancellation_state(asio::disable_cancellation());
            const long read = resource ? resource->read() : 0;
            co_await pause(hold);
            // A timer already done when `||` cancelled us resumes us anyway: look before touching the resource.
            if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) co_return;
            if (resource) resource->write(token, read, who, w.log);
        };
        auto warned = [&]() -> asio::awaitable<void> {
            auto [ec, reason] = co_await g.async_wait_lost(tuple_awaitable);
            if (ec) co_return;  // released, or cancelled because the work finished first
            if (!w.cut_short) {  // deaf: it goes on using the resource, and heeds the warning 10 s late
                co_await asio::this_coro::reset_cancellation_state(asio::disable_cancellation());
                co_await pause(10s);
            }
            w.log.write("warned " + who);
        };
        co_await (work() || warned());
        w.log.write("exit " + who);
    }

    asio::awaitable<void> worker(kind k, std::uint64_t seed) {
        std::mt19937_64 rng(seed);
        while (!w.stop) {
            if (replacing) {
                co_await pause(100ms);
                continue;
            }
            const auto sp = s;
            std::optional<zklock::mutex> m;
            std::optional<zklock::shared_mutex> rw;
            std::optional<zklock::semaphore> sem;
            error_code ec;
            zklock::guard g;
            if (k == kind::mutex) {
                m.emplace(*sp, mutex_path, zklock::mutex_options{.local_handoff_limit = 3});
                std::tie(ec, g) = co_await m->acquire(acquire_timeout, tuple_awaitable);
            } else if (k == kind::sem) {
                sem.emplace(*sp, sem_path, w.sem_limit);
                std::tie(ec, g) = co_await sem->acquire(acquire_timeout, tuple_awaitable);
            } else {
                rw.emplace(*sp, rw_path);
                if (k == kind::write) std::tie(ec, g) = co_await rw->acquire(acquire_timeout, tuple_awaitable);
                else std::tie(ec, g) = co_await rw->acquire_shared(acquire_timeout, tuple_awaitable);
            }
            if (ec) {
                ++w.errors;
                if (ec == zklock::error::session_expired || ec == zklock::error::session_closed || is_final(sp->state()))
                    co_await replace(sp);
                else if (ec != zklock::error::timeout)
                    co_await pause(100ms);  // no busy loop on an error that comes at once
                continue;
            }
            if (!g.lost()) co_await section(k, g, rng);
            co_await g.release(tuple_awaitable);  // after a loss: the reason, nothing to do
        }
    }
};

}  // namespace

void run_library_machine(workload& w, int index, std::uint64_t seed) {
    asio::io_context ioc;
    machine m{w, ioc, index, 0, nullptr, false, 0};
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
        while (!w.stop) {  // the first connection may come during a fault
            m.s = m.make_session();
            auto [ec] = co_await m.s->async_connect(tuple_awaitable);
            if (!ec) break;
            m.s.reset();
        }
        if (!m.s) co_return;
        const kind kinds[] = {kind::mutex, kind::mutex, kind::write, kind::read, kind::read, kind::sem, kind::sem};
        std::uint64_t n = 0;
        for (auto k : kinds) {
            ++m.running;
            asio::co_spawn(ioc, m.worker(k, seed * 1000003 + ++n), [&m](std::exception_ptr e) {
                if (e) ++m.w.errors;
                --m.running;
            });
        }
        // `stop` comes from another thread: look at it, then let the workers finish (each acquire has its
        // deadline) before the session closes, which ends the loop.
        while (!w.stop) co_await pause(100ms);
        for (int i = 0; i < 600 && m.running > 0; ++i) co_await pause(100ms);
        if (m.running > 0) ++w.errors;  // wedged: the close below fails what is pending
        m.s->close();
    }, asio::detached);
    ioc.run();
}

}  // namespace zklock_chaos
