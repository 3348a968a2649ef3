// zklock leader PATH: one zklock::async_leader; with --watch, async_wait_leader_change in a loop, raced
// against the signals that end it.
#include "leader.hpp"

#include "exit_codes.hpp"
#include "messages.hpp"

#include <zklock/election.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <iostream>

namespace zklock_cli {

namespace {
namespace asio = boost::asio;
using namespace boost::asio::experimental::awaitable_operators;

constexpr int ex_nobody_leads = 1;

void print(const zklock::leader_info& l)
{
    if (l) std::cout << shown(l.id) << " " << l.token.to_string() << "\n";
    else std::cout << "-\n";
    std::cout.flush();
}
}  // namespace

asio::awaitable<int> print_leader(const options& o, zklock::session& s, asio::signal_set& interrupts)
{
    auto [ec, now] = co_await zklock::async_leader(s, o.path, asio::as_tuple(asio::use_awaitable));
    if (ec) {
        say("cannot read the election at " + o.path + ": " + ec.message());
        co_return ex_software;
    }
    if (!o.watch) {
        if (!now) {
            tell("nobody leads " + o.path);
            co_return ex_nobody_leads;
        }
        print(now);
        co_return ex_ok;
    }
    print(now);
    for (;;) {
        auto r = co_await (zklock::async_wait_leader_change(s, o.path, now, asio::as_tuple(asio::use_awaitable)) ||
                           interrupts.async_wait(asio::as_tuple(asio::use_awaitable)));
        if (r.index() == 1) co_return ex_ok;
        auto [wec, next] = std::get<0>(r);
        // An expiry (the session is renewed: see run.cpp) or a connection loss does not end the watch: the
        // election is followed on, on the new session, after a short pause.
        if (wec == zklock::error::session_expired || wec == zklock::error::not_connected || zklock::is_retryable(wec)) {
            if (wec == zklock::error::session_expired) tell("the session expired; following " + o.path + " on a new one");
            asio::steady_timer delay(co_await asio::this_coro::executor, std::chrono::milliseconds(200));
            auto both = co_await (delay.async_wait(asio::as_tuple(asio::use_awaitable)) ||
                                  interrupts.async_wait(asio::as_tuple(asio::use_awaitable)));
            if (both.index() == 1) co_return ex_ok;
            continue;
        }
        if (wec) {
            say("cannot follow the election at " + o.path + ": " + wec.message());
            co_return ex_software;
        }
        now = std::move(next);
        print(now);
    }
}

}  // namespace zklock_cli
