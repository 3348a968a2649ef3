// The leader observer's decisions (see leader_observer.hpp).
#include "leader_observer.hpp"

#include "node_data.hpp"
#include "schema.hpp"

#include <zklock/detail/sequence.hpp>
#include <zklock/error.hpp>

#include <algorithm>

namespace zklock::detail {

namespace {

/// The election recipes whose candidates an observer can order (and whose nodes must not share a path).
enum class election_family { selector, latch, kazoo, other };

election_family family_of(std::string_view name, const child_role& role)
{
    if (!role.contender) return election_family::other;
    if (role.schema == lock_schema::latch) return election_family::latch;
    if (role.schema != lock_schema::mutex) return election_family::other;
    // kazoo orders only its own names (it sorts "-lock-" ones last), Curator kazoo's by the whole name.
    if (name.find("__lock__") != std::string_view::npos) return election_family::kazoo;
    if (name.find("__rlock__") != std::string_view::npos) return election_family::other;
    return election_family::selector;
}

}  // namespace

candidates election_order(const std::vector<std::string>& children)
{
    candidates out;
    std::optional<election_family> family;
    for (const auto& c : children) {
        const auto role = classify(c);
        if (!role.schema) continue;
        const auto f = family_of(c, role);
        if (f == election_family::other || (family && *family != f)) {
            out.mixed = true;
            continue;
        }
        family = f;
        out.in_order.push_back(c);
    }
    if (out.mixed) {
        out.in_order.clear();
        return out;
    }
    if (out.in_order.empty()) return out;
    // Relative to one of them, so that the order stays right across the signed 32-bit wrap.
    const auto base = static_cast<std::uint32_t>(*parse_sequence(out.in_order.front()));
    auto rank = [&](const std::string& n) {
        return static_cast<std::int32_t>(static_cast<std::uint32_t>(*parse_sequence(n)) - base);
    };
    std::stable_sort(out.in_order.begin(), out.in_order.end(),
                     [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
    return out;
}

std::string encode_proclaimed(std::string_view node_name, std::string_view value)
{
    std::string out(node_name);
    out += '\n';
    out += value;
    return out;
}

std::optional<std::string> proclaimed_by(std::string_view data, std::string_view node_name)
{
    const auto nl = data.find('\n');
    if (nl == std::string_view::npos || data.substr(0, nl) != node_name) return std::nullopt;
    return std::string(data.substr(nl + 1));
}

leader_observer::leader_observer(std::string dir, std::optional<leader_info> known)
    : dir_(std::move(dir)), known_(std::move(known))
{
}

leader_observer::action leader_observer::start()
{
    seen_ = {};
    listing_watched_ = false;
    return {step::sync, dir_};
}

leader_observer::action leader_observer::failed(error_code ec)
{
    if (is_retryable(ec)) return {step::await_connected};
    error_ = ec;
    return {step::fail};
}

leader_observer::action leader_observer::on_synced(error_code ec)
{
    // A directory that does not exist is synced all the same (sync names a path, it does not read it).
    if (ec && ec != zk_errc::no_node) return failed(ec);
    return {step::list, dir_};
}

leader_observer::action leader_observer::on_listed(error_code ec, const std::vector<std::string>& children)
{
    if (ec == zk_errc::no_node) return conclude(false);  // no directory: nobody leads
    if (ec) return failed(ec);
    const auto order = election_order(children);
    if (order.mixed) {
        error_ = zklock::error::schema_mismatch;
        return {step::fail};
    }
    if (order.in_order.empty()) return conclude();
    seen_.node = dir_ + "/" + order.in_order.front();
    return {step::read_leader, seen_.node};
}

leader_observer::action leader_observer::on_checked(error_code ec, bool exists)
{
    if (ec) return failed(ec);
    if (exists) return start();  // made since the listing: a new round (the watch may fire later: one more)
    return {step::await_watch};
}

leader_observer::action leader_observer::on_leader_read(error_code ec, std::string_view data, std::int64_t czxid)
{
    if (ec == zk_errc::no_node) {  // it went since the listing (no watch was set): list again
        seen_ = {};
        return {step::list, dir_};
    }
    if (ec) return failed(ec);
    seen_.token = fencing_token{czxid, 0};
    // A revocation request (Curator's Revoker, zklock revoke) replaces the node's data, its id with it: the
    // same term, whose id is the one known (the node is the same, its creation zxid too). Not a change.
    if (data == revoke_request && known_ && known_->node == seen_.node && known_->token == seen_.token)
        seen_.id = known_->id;
    else
        seen_.id = decode_node_data(data).owner;
    return {step::read_value, dir_};
}

leader_observer::action leader_observer::on_value_read(error_code ec, std::string_view data)
{
    if (ec && ec != zk_errc::no_node) return failed(ec);
    if (!ec) {
        const auto own = std::string_view(seen_.node).substr(dir_.size() + 1);
        seen_.value = proclaimed_by(data, own);
        // A later term proclaimed since the leader was read: the leader read is stale, and "it with no
        // value" never existed. Read again.
        if (!seen_.value) {
            const auto by = data.substr(0, data.find('\n'));
            const auto theirs = parse_sequence(by), mine = parse_sequence(own);
            const auto later = [](std::int32_t x, std::int32_t y) {  // serial-number order, across the wrap
                return static_cast<std::int32_t>(static_cast<std::uint32_t>(x) - static_cast<std::uint32_t>(y)) > 0;
            };
            if (theirs && mine && later(*theirs, *mine)) return start();
        }
    }
    return conclude();
}

leader_observer::action leader_observer::conclude(bool directory_exists)
{
    if (!known_ || seen_ != *known_) return {step::report};
    if (seen_) return {step::await_watch};  // the reads of the leader's node and of the value set watches
    // Nobody leads, as the caller knows: watch the listing only now, when its answer is no news (a busy
    // election's observers watch its leader's node instead, never every change of the candidates).
    if (!directory_exists) return {step::watch_creation, dir_};
    if (listing_watched_) return {step::await_watch};
    listing_watched_ = true;
    return {step::list_watched, dir_};
}

leader_observer::action leader_observer::on_watch_fired() { return start(); }

}  // namespace zklock::detail
