// What the contender machine's table tests share: the fixture that drives one machine and shows its
// actions as a short string ("get_data(_c_v-lock-0000000004) waiting").
#pragma once

#include "recipes/core/contender_machine.hpp"

#include <zklock/error.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

using namespace zklock::detail;
using zklock::zk_errc;
namespace zerr = zklock;

namespace contender_test {

using T = contender_action::type;
using actions = contender_machine::actions;
using names = std::vector<std::string>;
using wet = zklock::watch_event_type;

const error_code ok{}, conn_loss = zk_errc::connection_loss, no_node = zk_errc::no_node, no_auth = zk_errc::no_auth;

inline const char* name_of(T t)
{
    static const char* const words[] = {"create_node", "create_container", "exists", "list", "get_data",
                                        "probe_delete", "sync", "await_watch", "drop_watch", "delete_node",
                                        "release_node", "await_connected", "note_permitted", "acquired", "waiting",
                                        "failed", "lost", "followers_waiting", "revoke_requested", "schema_found",
                                        "followers_none", "followers_changed"};
    return words[static_cast<int>(t)];
}

/// The error of the `failed` report in `out` (the test stops if there is none).
inline error_code failure(const actions& out)
{
    for (const auto& a : out)
        if (a.what == T::failed) return a.ec;
    BOOST_FAIL("no failed report");
    return {};
}

inline std::string seq_name(const std::string& prefix, int seq)
{
    char digits[16];
    std::snprintf(digits, sizeof digits, "%010d", seq);
    return prefix + digits;
}

struct fixture {
    std::string dir = "/locks/a";
    std::string prefix = "_c_u-lock-";
    contender_machine m{dir, prefix, contender_kind::exclusive, true, false};
    std::uint64_t r = 0;  // the newest round any action carried
    std::string own = seq_name(prefix, 5);
    std::string own_path = dir + "/" + own;

    void remake(contender_kind k, bool permitted = true, bool followers = false, std::string d = "/locks/a")
    {
        dir = std::move(d);
        prefix = "_c_u-" + std::string(marker(k));
        m = contender_machine(dir, prefix, k, permitted, followers);
        r = 0;
        own = seq_name(prefix, 5);
        own_path = dir + "/" + own;
    }
    /// The actions with their paths (relative to the lock directory), non-placing purposes, slots awaited and
    /// steps after a reconnect: "get_data(_c_v-lock-0000000004) waiting", "list[find_own]". Notes the round.
    std::string show(const actions& out)
    {
        static const char* const purposes[] = {"place", "find_own", "cleanup", "permissions", "followers"};
        static const char* const steps[] = {"start", "find_own", "relist", "watch_own", "watch_followers", "cleanup"};
        static const char* const slots[] = {"none", "predecessor", "own", "followers", "waiting_own"};
        std::string s;
        for (const auto& a : out) {
            r = std::max(r, a.round);
            s += (s.empty() ? "" : " ") + std::string(name_of(a.what));
            if (!a.path.empty() && a.path != dir && a.what != T::schema_found)
                s += "(" + (a.path.rfind(dir + "/", 0) == 0 ? a.path.substr(dir.size() + 1) : a.path) + ")";
            if (a.what == T::list && a.purpose != listing::place)
                s += "[" + std::string(purposes[int(a.purpose)]) + "]";
            if (a.what == T::await_connected) s += "[" + std::string(steps[int(a.step)]) + "]";
            if (a.what == T::await_watch) s += "[" + std::string(slots[int(a.slot)]) + "]";
        }
        return s;
    }

    /// start() and the create's answer: our node exists, the pipelined listing is still to come.
    void created()
    {
        show(m.start());
        BOOST_REQUIRE(m.on_created(r, ok, own_path, 100).empty());
    }
    std::string listed(const names& children) { return show(m.on_listed(r, listing::place, ok, children)); }
    /// Created and listed alone: the holder, watching its own node (as asked by a loss listener).
    void hold()
    {
        created();
        BOOST_REQUIRE(listed({own}) == "acquired");
        BOOST_REQUIRE(show(m.watch_own_node()) == "get_data(" + own + ")");
    }
};

const std::string v4 = seq_name("_c_v-lock-", 4);

}  // namespace contender_test
