// zklock ls / stat / revoke / break PATH: one participants snapshot (zklock::async_participants), printed
// as a list or in figures (as text, or JSON with --json), then a revocation request to each holder, or the
// deletion of each holder's node.
#include "admin.hpp"

#include "exit_codes.hpp"
#include "messages.hpp"

#include <zklock/error.hpp>
#include <zklock/participants.hpp>
#include <zklock/revoke.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <tuple>

namespace zklock_cli {

namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;

constexpr int ex_nobody_holds = 1;

milliseconds age_ms(const zklock::participant& p)
{
    const auto age = std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now() - p.created);
    return std::max(age, milliseconds::zero());
}

std::string age_of(const zklock::participant& p) { return seconds(age_ms(p)); }

// The lease left by this machine's clock (the holder wrote its own clock's deadline): an estimate; zero
// once over, none without a lease.
std::optional<milliseconds> lease_left_ms(const zklock::participant& p)
{
    if (!p.lease_until) return std::nullopt;
    const auto left = std::chrono::duration_cast<milliseconds>(*p.lease_until - std::chrono::system_clock::now());
    return std::max(left, milliseconds::zero());
}

std::string lease_left(const zklock::participant& p)
{
    const auto left = lease_left_ms(p);
    if (!left) return "-";
    return *left > milliseconds::zero() ? seconds(*left) : "over";
}

// A JSON string: quotes, backslashes and control bytes escaped (the owner is whatever a client wrote).
std::string json(std::string_view text)
{
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char esc[8];
            std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
            out += esc;
        } else {
            out += c;
        }
    }
    return out + '"';
}

std::string json(std::optional<milliseconds> ms) { return ms ? std::to_string(ms->count()) : "null"; }
std::string json(std::optional<std::size_t> n) { return n ? std::to_string(*n) : "null"; }

std::string json(const zklock::participant& p)
{
    return "{\"role\":" + json(p.role) + ",\"holds\":" + (p.holds ? "true" : "false") + ",\"node\":" + json(p.node) +
           ",\"owner\":" + json(p.owner) + ",\"age_ms\":" + std::to_string(age_ms(p).count()) +
           ",\"lease_left_ms\":" + json(lease_left_ms(p)) + ",\"revoke_requested\":" +
           (p.revoke_requested ? "true" : "false") + ",\"session_id\":" + std::to_string(p.session_id) +
           ",\"max_permits\":" + json(p.max_permits) + "}";
}

void print_json(const std::vector<zklock::participant>& list)
{
    std::cout << "[";
    for (std::size_t i = 0; i < list.size(); ++i) std::cout << (i ? ",\n " : "") << json(list[i]);
    std::cout << "]\n";
    std::cout.flush();
}

/// zklock stat: the queue in figures. The oldest hold and the least lease left are over the holders; the
/// longest wait over the waiters (their nodes' ages: since they queued).
struct figures {
    std::size_t holders = 0, waiters = 0;
    std::optional<milliseconds> oldest_hold, least_lease_left, longest_wait;
    bool revoke_requested = false;
    explicit figures(const std::vector<zklock::participant>& list)
    {
        auto most = [](std::optional<milliseconds>& m, milliseconds v) { m = std::max(m.value_or(v), v); };
        for (const auto& p : list) {
            if (!p.holds) {
                ++waiters;
                most(longest_wait, age_ms(p));
                continue;
            }
            ++holders;
            most(oldest_hold, age_ms(p));
            if (auto left = lease_left_ms(p)) least_lease_left = std::min(least_lease_left.value_or(*left), *left);
            revoke_requested = revoke_requested || p.revoke_requested;
        }
    }
};

void print_stat(const std::string& path, const std::vector<zklock::participant>& list, bool as_json)
{
    const figures f(list);
    if (as_json) {
        std::cout << "{\"path\":" << json(path) << ",\"holders\":" << f.holders << ",\"waiters\":" << f.waiters
                  << ",\"oldest_hold_ms\":" << json(f.oldest_hold) << ",\"least_lease_left_ms\":"
                  << json(f.least_lease_left) << ",\"longest_wait_ms\":" << json(f.longest_wait)
                  << ",\"revoke_requested\":" << (f.revoke_requested ? "true" : "false") << "}\n";
    } else {
        auto shown_ms = [](std::optional<milliseconds> ms) { return ms ? seconds(*ms) : std::string("-"); };
        std::cout << "holders           " << f.holders << "\n"
                  << "waiters           " << f.waiters << "\n"
                  << "oldest hold       " << shown_ms(f.oldest_hold) << "\n"
                  << "least lease left  " << shown_ms(f.least_lease_left) << "\n"
                  << "longest wait      " << shown_ms(f.longest_wait) << "\n"
                  << "revoke requested  " << (f.revoke_requested ? "yes" : "no") << "\n";
    }
    std::cout.flush();
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
        if (o.json) print_json(list);
        else print(list);
        co_return ex_ok;
    }
    if (o.what == action::stat) {
        print_stat(o.path, list, o.json);
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
