// zklock ls / revoke / break PATH: one participants snapshot (zklock::async_participants), then a
// revocation request to each holder, or the deletion of each holder's node.
#include "admin.hpp"

#include "exit_codes.hpp"
#include "messages.hpp"

#include <zklock/error.hpp>
#include <zklock/participants.hpp>
#include <zklock/revoke.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <iostream>
#include <tuple>

namespace zklock_cli {

namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;

constexpr int ex_nobody_holds = 1;

std::string age_of(const zklock::participant& p)
{
    const auto age = std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now() - p.created);
    return seconds(std::max(age, milliseconds::zero()));
}

// The lease left by this machine's clock (the holder wrote its own clock's deadline): an estimate.
std::string lease_left(const zklock::participant& p)
{
    if (!p.lease_until) return "-";
    const auto left = std::chrono::duration_cast<milliseconds>(*p.lease_until - std::chrono::system_clock::now());
    return left > milliseconds::zero() ? seconds(left) : "over";
}

std::string owner_of(const zklock::participant& p)
{
    if (p.revoke_requested) return "(revocation requested)";
    return p.owner.empty() ? "-" : shown(p.owner);
}

void print(const std::vector<zklock::participant>& list)
{
    std::cout << "ROLE    STATE  NODE  OWNER  AGE  LEASE-LEFT\n";
    for (const auto& p : list)
        std::cout << p.role << std::string(p.role.size() < 8 ? 8 - p.role.size() : 1, ' ') << (p.holds ? "HOLDS  " : "WAITS  ")
                  << shown(p.node) << "  " << owner_of(p) << "  " << age_of(p) << "  " << lease_left(p) << "\n";
    std::cout.flush();
}

}  // namespace

std::string loss_words(boost::system::error_code why, const options& o)
{
    if (why == zklock::error::lease_expired && o.lease) return "lease expired after " + seconds(*o.lease);
    return why.message();
}

asio::awaitable<int> admin(const options& o, zklock::session& s)
{
    auto [ec, list] = co_await zklock::async_participants(s, o.path, asio::as_tuple(asio::use_awaitable));
    if (ec) {
        say("cannot read the lock at " + o.path + ": " + ec.message());
        co_return ex_software;
    }
    if (o.what == action::list) {
        print(list);
        co_return ex_ok;
    }
    int done = 0, failed = 0;
    for (const auto& p : list) {
        if (!p.holds) continue;
        const bool revoke = o.what == action::revoke;
        boost::system::error_code aec;
        if (revoke) std::tie(aec) = co_await zklock::async_request_revoke(s, p.node, asio::as_tuple(asio::use_awaitable));
        else std::tie(aec) = co_await s.async_remove(p.node, -1, asio::as_tuple(asio::use_awaitable));
        if (aec == zklock::zk_errc::no_node) continue;  // let go meanwhile
        if (aec) {
            say("cannot " + std::string(revoke ? "revoke " : "remove ") + p.node + ": " + aec.message());
            ++failed;
            continue;
        }
        ++done;
        std::cout << (revoke ? "asked to let go: " : "removed: ") << shown(p.node) << "  owner " << owner_of(p)
                  << "  age " << age_of(p) << "\n";
    }
    std::cout.flush();
    if (failed) co_return ex_software;
    if (done == 0) {
        tell("nobody holds " + o.path);
        co_return ex_nobody_holds;
    }
    co_return ex_ok;
}

}  // namespace zklock_cli
