// One coroutine: connect, acquire (racing SIGINT/SIGTERM/SIGHUP), spawn the command, then wait for
// whichever comes first of: the child's exit (SIGCHLD), a signal to forward, or the loss of the lock. (Without
// COMMAND, hold.cpp waits instead for the end of stdin, a signal or the loss.) The goodbye (release, close) is
// bounded: a dead or frozen server never keeps zklock running long after COMMAND.
#include "run.hpp"

#include "admin.hpp"
#include "child.hpp"
#include "job.hpp"
#include "exit_codes.hpp"
#include "hold.hpp"
#include "leader.hpp"
#include "messages.hpp"
#include "revocation.hpp"

#include <zklock/config.hpp>
#include <zklock/election.hpp>
#include <zklock/error.hpp>
#include <zklock/guard.hpp>
#include <zklock/multi_lock.hpp>
#include <zklock/participants.hpp>
#include <zklock/session.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <variant>

#include <signal.h>
#include <unistd.h>

namespace zklock_cli {

bool close_unconfirmed = false;
bool interrupted = false;

namespace {

namespace asio = boost::asio;
using namespace boost::asio::experimental::awaitable_operators;
using boost::system::error_code;
using std::chrono::milliseconds;

constexpr milliseconds max_connect_timeout{10'000};
// Enough to leave one server that accepts TCP but never answers (the library gives up on it after 2 s).
constexpr milliseconds min_connect_timeout{3'000};
constexpr milliseconds release_limit{2'000};  // waiting for ZooKeeper to confirm the release

// The lock PATH names, by --read, --write or --limit (a mutex without them).
zklock::lock_item lock_of(zklock::session& s, const options& o)
{
    switch (o.mode) {
    case lock_mode::read: return zklock::lock_item::shared(zklock::shared_mutex(s, o.path));
    case lock_mode::write: return zklock::lock_item::exclusive(zklock::shared_mutex(s, o.path));
    case lock_mode::limit: return zklock::semaphore(s, o.path, o.limit);
    case lock_mode::mutex: break;
    }
    return zklock::mutex(s, o.path);
}
constexpr milliseconds close_limit{2'000};    // waiting for it to confirm the session's end

// Every user of a semaphore must give the same N: with different ones, more may hold it at once than the
// smaller N allows. Curator stores no N, but zklock's permit nodes do (participant::max_permits): warn when
// those of PATH name another. A look of at most 1 s; no answer in time, no warning.
asio::awaitable<void> warn_if_other_limits(zklock::session& s, const options& o)
{
    asio::steady_timer give_up(co_await asio::this_coro::executor, milliseconds(1'000));
    auto looked = co_await (zklock::async_participants(s, o.path, asio::as_tuple(asio::use_awaitable)) ||
                            give_up.async_wait(asio::as_tuple(asio::use_awaitable)));
    if (looked.index() != 0) co_return;
    auto& [ec, people] = std::get<0>(looked);
    if (ec) co_return;
    std::set<std::size_t> others;
    for (const auto& p : people)
        if (p.max_permits && *p.max_permits != o.limit) others.insert(*p.max_permits);
    if (others.empty()) co_return;
    std::string list;
    for (const auto n : others) list += (list.empty() ? "" : ", ") + std::to_string(n);
    say("warning: other holders of " + o.path + " use --limit " + list + ", this one " + std::to_string(o.limit) +
        ": every user of a semaphore must give the same N, or more may hold it at once than the smaller N allows");
}

// The participant id of `zklock elect` without --id: as the library's default owner, HOSTNAME:PID.
std::string default_id()
{
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    return std::string(host) + ":" + std::to_string(::getpid());
}

// Closes the session and waits at most `limit` for the server to confirm it (its ephemeral nodes gone).
asio::awaitable<bool> close_within(zklock::session& s, milliseconds limit)
{
    auto wake = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor, limit);
    auto done = std::make_shared<bool>(false);
    s.async_close([wake, done](error_code) {
        *done = true;
        wake->cancel();
    });
    co_await wake->async_wait(asio::as_tuple(asio::use_awaitable));
    if (!*done) close_unconfirmed = true;
    co_return *done;
}

}  // namespace

asio::awaitable<int> run(const options& o)
{
    auto ex = co_await asio::this_coro::executor;
    const auto started = std::chrono::steady_clock::now();
    // Registered first, so a signal that arrives at any point is ours (not the default action).
    asio::signal_set interrupts(ex, SIGINT, SIGTERM, SIGHUP);
    asio::signal_set sigchld(ex, SIGCHLD);

    zklock::session_config cfg;  // (designated initializers would trip -Wmissing-field-initializers)
    cfg.hosts = o.hosts;
    cfg.session_timeout = o.session_timeout;
    cfg.connect_timeout = max_connect_timeout;
    if (o.timeout) cfg.connect_timeout = std::clamp(*o.timeout, min_connect_timeout, max_connect_timeout);
    if (o.verbose) cfg.log = zklock::stderr_log_sink();
    // `leader --watch` follows the election until a signal: an expiry (ZooKeeper unreachable for the
    // session timeout) opens a new session and the watch goes on, rather than ending it.
    if (o.what == action::leader && o.watch) cfg.on_expiry = zklock::expiry_policy::renew_fail_pending;
    zklock::session s(ex, cfg);

    // Whatever happens after this, close the session before exiting, so no node is left behind.
    auto close_and = [&](int code) -> asio::awaitable<int> {
        if (!co_await close_within(s, close_limit) && s.id() != 0)
            tell("ZooKeeper did not confirm the end of the session within " + seconds(close_limit) +
                 "; a node of it under " + o.path + " may stay until the session expires");
        co_return code;
    };

    // 1. Connect, unless interrupted.
    {
        auto r = co_await (s.async_connect(asio::as_tuple(asio::use_awaitable)) ||
                           interrupts.async_wait(asio::use_awaitable));
        if (r.index() == 1) {
            interrupted = true;
            co_return co_await close_and(128 + std::get<1>(r));
        }
        auto [ec] = std::get<0>(r);
        if (ec == zklock::error::unresolvable_host) {
            say("cannot resolve a host name of '" + o.hosts + "': check the names and DNS (-v names it)");
            co_return co_await close_and(ex_unavailable);
        }
        if (ec == zklock::error::connect_timeout) {
            say("no ZooKeeper server answered at " + o.hosts + " within " + seconds(cfg.connect_timeout));
            co_return co_await close_and(ex_unavailable);
        }
        if (ec) {
            say("no ZooKeeper server answered at " + o.hosts + " (" + ec.message() + ")");
            co_return co_await close_and(ex_unavailable);
        }
    }

    if (o.what == action::leader) co_return co_await close_and(co_await print_leader(o, s, interrupts));
    if (o.what != action::lock && o.what != action::elect) co_return co_await close_and(co_await admin(o, s));
    const bool elect = o.what == action::elect;
    // What is held, in messages: "lock /a" or "leadership of /a".
    const std::string held_thing = (elect ? "leadership of " : "lock ") + o.path;

    // 2. Acquire, until the deadline (counted from the start: --timeout bounds the whole wait) or a signal.
    //    Giving up closes the session *first*: the server then drops our place in the queue (the
    //    ephemeral node) in one step, and the pending acquire completes with session_closed. (Cancelling the
    //    acquire instead would withdraw it request by request, and the session would still have to close.)
    const auto lock = lock_of(s, o);
    std::optional<zklock::election> candidate;
    if (elect) {
        zklock::election_options eo;
        eo.style = o.style == "latch"   ? zklock::election_style::latch
                   : o.style == "kazoo" ? zklock::election_style::kazoo
                                        : zklock::election_style::selector;
        candidate.emplace(s, o.path, o.id.empty() ? default_id() : o.id, eo);
    }
    // Starts the acquire (a leadership is a guard: the handler takes it as one).
    auto start = [&](std::optional<std::chrono::steady_clock::time_point> until, auto h) {
        if (!candidate) return lock.start(until, std::move(h));
        if (until) candidate->campaign_until(*until, std::move(h));
        else candidate->campaign(std::move(h));
    };
    zklock::guard g;
    {
        struct race {
            std::optional<std::tuple<error_code, zklock::guard>> acquired;
            int signal = 0;
            bool timed_out = false;
        };
        auto st = std::make_shared<race>();
        asio::steady_timer wake(ex, asio::steady_timer::time_point::max());  // cancelled when the acquire completes
        asio::steady_timer deadline(ex);
        auto on_acquired = [st, &wake](error_code ec, zklock::guard gd) {
            st->acquired.emplace(ec, std::move(gd));
            wake.cancel();
        };
        if (o.timeout && std::chrono::steady_clock::now() >= started + *o.timeout) {
            start(std::chrono::steady_clock::now(), on_acquired);  // --timeout 0, or connecting used it up: one look
        } else {
            start(std::nullopt, on_acquired);
            if (o.timeout) {
                deadline.expires_at(started + *o.timeout);
                deadline.async_wait([st, &s](error_code ec) {
                    if (ec || st->acquired) return;
                    st->timed_out = true;
                    s.close();
                });
            }
        }
        interrupts.async_wait([st, &s](error_code ec, int sig) {
            if (ec || st->acquired) return;
            st->signal = sig;
            s.close();
        });
        while (!st->acquired) co_await wake.async_wait(asio::as_tuple(asio::use_awaitable));
        deadline.cancel();
        interrupts.cancel();  // a signal arriving from now on waits for the next async_wait

        error_code ec;
        std::tie(ec, g) = std::move(*st->acquired);
        // (A guard won at the last moment goes with the closed session.)
        if (st->signal) {
            interrupted = true;
            co_return co_await close_and(128 + st->signal);
        }
        if (st->timed_out || ec == zklock::error::timeout) {
            tell(o.path + (elect ? " is led by another candidate" : " is locked by someone else") + "; gave up after " +
                 seconds(o.timeout.value_or(milliseconds::zero())));
            co_return co_await close_and(o.conflict_exit_code);
        }
        // The session ended while waiting (ZooKeeper unreachable for the session timeout): 69, as when no
        // server answers at all. 70 is kept for a lock lost while held, and other errors.
        if (ec == zklock::error::session_expired) {
            say((elect ? "cannot campaign at " : "cannot lock ") + o.path + ": " + ec.message());
            co_return co_await close_and(ex_unavailable);
        }
        if (ec) {
            say((elect ? "cannot campaign at " : "cannot lock ") + o.path + ": " + ec.message());
            co_return co_await close_and(ex_software);
        }
        if (o.mode == lock_mode::limit) co_await warn_if_other_limits(s, o);
        // The lease starts now, a moment after the grant; when it runs out the library releases the lock
        // and the loss below stops COMMAND.
        if (o.lease) {
            auto [lec] = co_await g.async_extend_lease(*o.lease, asio::as_tuple(asio::use_awaitable));
            if (lec) {
                say("cannot give " + o.path + " its lease: " + lec.message());
                co_return co_await close_and(ex_software);
            }
        }
    }

    // 3. Run COMMAND while holding the lock, or without COMMAND hold it until stdin ends.
    const std::string node = g.node();
    int status = 0;
    error_code lost;
    bool revoked = false;  // --on-revoke release stopped COMMAND: exit 70
    if (o.command.empty()) {
        auto held = co_await hold(o, g, interrupts);
        status = held.status;
        lost = held.lost;
    } else {
        auto env = child_environment(g);
        auto envp = c_strings(env);
        auto args = o.command;
        auto argv = c_strings(args);
        int err = 0;
        auto j = job::start(argv, envp, err);
        if (!j) {
            say("cannot run " + o.command[0] + ": " + std::strerror(err));
            g = {};  // released in the background; closing the session waits for it
            co_return co_await close_and(err == ENOENT ? ex_notfound : ex_noexec);
        }
        const pid_t group = j->pid();
        const std::string job_words = o.command[0] + "'s process group (" + std::to_string(group) + ")";
        auto job_gone = std::make_shared<bool>(false);
        asio::steady_timer killer(ex);  // SIGKILL, --kill-after the SIGTERM that stops the job
        asio::steady_timer poll(ex);
        std::optional<int> exited;
        bool watching_loss = true;
        bool revoke_wanted = o.on_revoke != revoke_action::ignore;
        // Set once the job is being stopped (a loss, or a revocation under --on-revoke release).
        bool stopping = false;
        auto stop_job = [&](const std::string& why) {
            stopping = true;
            tell(held_thing + " " + why + "; sending SIGTERM to " + job_words);
            j->signal(SIGTERM);
            killer.expires_after(o.kill_after);
            killer.async_wait([job_gone, group, job_words, after = seconds(o.kill_after)](error_code kec) {
                if (kec || *job_gone) return;
                tell(job_words + " still runs " + after + " after SIGTERM; sending SIGKILL");
                ::kill(-group, SIGKILL);
            });
        };
        for (;;) {
            exited = j->reap();  // it may have exited before SIGCHLD was waited for
            // After a loss zklock waits for COMMAND's whole job: nothing of it may run on without the lock.
            if (exited && !(stopping && j->running())) break;
            if (exited) {
                // Not all of what is left is zklock's child (a grandchild's parent may still run): look
                // again at every SIGCHLD, and at least every 50 ms, until --kill-after's SIGKILL.
                poll.expires_after(milliseconds(50));
                co_await (sigchld.async_wait(asio::as_tuple(asio::use_awaitable)) ||
                          poll.async_wait(asio::as_tuple(asio::use_awaitable)));
                continue;
            }
            if (watching_loss) {
                auto r = co_await (sigchld.async_wait(asio::as_tuple(asio::use_awaitable)) ||
                                   interrupts.async_wait(asio::as_tuple(asio::use_awaitable)) ||
                                   g.async_wait_lost(asio::as_tuple(asio::use_awaitable)) ||
                                   revocation(g, revoke_wanted));
                if (r.index() == 3) {
                    revoke_wanted = false;  // asked once: a second request changes nothing
                    if (o.on_revoke == revoke_action::release) {
                        revoked = true;
                        stop_job("revoked (someone asked its holder to let go; --on-revoke release)");
                        watching_loss = false;
                    } else {
                        tell(held_thing + " revoked (someone asked its holder to let go); sending SIGUSR1 to " +
                             job_words);
                        j->signal(SIGUSR1);
                    }
                } else if (r.index() == 1) {
                    auto [sec, sig] = std::get<1>(r);
                    if (!sec) {
                        j->signal(sig);
                        interrupted = true;
                    }
                } else if (r.index() == 2) {
                    auto [wec, why] = std::get<2>(r);
                    if (!wec) {  // success means lost; an error means released or cancelled
                        lost = why;
                        stop_job("lost while COMMAND ran (" + loss_words(why, o) + ")");
                    }
                    watching_loss = false;
                }
            } else {
                auto r = co_await (sigchld.async_wait(asio::as_tuple(asio::use_awaitable)) ||
                                   interrupts.async_wait(asio::as_tuple(asio::use_awaitable)));
                if (r.index() == 1) {
                    auto [sec, sig] = std::get<1>(r);
                    if (!sec) {
                        j->signal(sig);
                        interrupted = true;
                    }
                }
            }
        }
        *job_gone = true;
        killer.cancel();
        j.reset();  // the watchdog stands down; the terminal comes back to zklock
        status = *exited;
    }

    // 4. Release (deletes the node at once, so the next waiter need not wait for the session to close), but
    //    wait for ZooKeeper's word at most release_limit: a cancelled release goes on in the background.
    asio::steady_timer limit(ex, release_limit);
    auto r = co_await (g.release(asio::as_tuple(asio::use_awaitable)) ||
                       limit.async_wait(asio::as_tuple(asio::use_awaitable)));
    if (r.index() == 1) {
        tell("ZooKeeper did not confirm the release of " + o.path + " within " + seconds(release_limit) +
             "; the lock node " + node + " is left until the session expires (" + seconds(s.negotiated_timeout()) +
             " after ZooKeeper last heard from zklock)");
        co_await close_within(s, close_limit / 4);  // the server is silent: only let the close go out
        co_return lost || revoked ? ex_software : status;
    }
    auto [rel] = std::get<0>(r);
    if (!lost && rel && rel != zklock::error::not_held) {
        // The loss was noticed only now: COMMAND ran (at least at its end) without the lock.
        lost = rel;
        tell(held_thing + " was lost before " + (o.command.empty() ? "its release" : "COMMAND exited") + " (" +
             rel.message() + ")");
    }
    co_return co_await close_and(lost || revoked ? ex_software : status);
}

}  // namespace zklock_cli
