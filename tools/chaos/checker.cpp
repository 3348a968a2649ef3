#include "checker.hpp"

#include <algorithm>
#include <istream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

namespace zklock_chaos {
namespace {

struct event {
    std::int64_t t = 0;
    std::string what;
    std::vector<std::string> args;
};

struct token {
    std::int64_t zxid = 0;
    std::uint64_t local = 0;
    auto operator<=>(const token&) const = default;
};

std::optional<token> parse_token(const std::string& s) {
    token t;
    char dot = 0;
    std::istringstream in(s);
    if (in >> t.zxid >> dot >> t.local && dot == '.' && in.peek() == EOF) return t;
    return std::nullopt;
}

// The three locks of a run: the mutex, the read/write lock, the semaphore.
enum class lock_id { mutex, rw, sem };

struct holder {
    lock_id lock;
    std::string kind;
    std::int64_t entered;
};

struct lock_state {
    std::map<std::string, holder> inside;
    std::optional<token> last_exclusive;  // the mutex's, or the rw lock's last writer's
    std::int64_t last_entry = 0;
    std::optional<std::int64_t> waiting_since_heal;
};

struct judge {
    verdict v;
    std::set<std::string> ever_warned;
    std::map<lock_id, lock_state> locks;
    std::int64_t start = 0;

    void problem(const std::string& p) {
        if (v.problems.size() < 10) v.problems.push_back(p);
    }

    void enter(const event& e) {
        if (e.args.size() != 3) return void(++v.malformed);
        const auto& [who, kind, tok] = std::tie(e.args[0], e.args[1], e.args[2]);
        const lock_id id = kind == "mutex" ? lock_id::mutex : kind == "sem" ? lock_id::sem : lock_id::rw;
        if (kind != "mutex" && kind != "sem" && kind != "read" && kind != "write") return void(++v.malformed);
        const auto t = parse_token(tok);
        if (!t) return void(++v.malformed);
        ++v.sections;
        lock_state& l = locks[id];
        stall(id, l, e.t);
        l.last_entry = e.t;
        if (l.waiting_since_heal) {
            v.worst_recovery_ns = std::max(v.worst_recovery_ns, e.t - *l.waiting_since_heal);
            v.total_recovery_ns += e.t - *l.waiting_since_heal;
            ++v.recoveries;
            l.waiting_since_heal.reset();
        }
        // Who may not be inside with this holder.
        std::vector<std::string> conflicting;
        std::size_t others = 0;
        for (const auto& [name, h] : l.inside) {
            ++others;
            const bool conflict = id == lock_id::mutex || kind == "write" || (kind == "read" && h.kind == "write");
            if (conflict) conflicting.push_back(name);
        }
        if (id == lock_id::sem && v.sem_limit > 0 && others >= v.sem_limit) {
            // One holder too many for each lease beyond the limit: blame those warned (late) first, as
            // they are the ones who should have left.
            std::vector<std::string> inside;
            for (const auto& [name, h] : l.inside) inside.push_back(name);
            std::stable_partition(inside.begin(), inside.end(), [&](const std::string& n) { return ever_warned.contains(n); });
            inside.resize(others + 1 - v.sem_limit);
            conflicting = std::move(inside);
        }
        for (const auto& other : conflicting) {
            if (ever_warned.contains(other)) {
                ++v.late_warnings;
                problem("late warning: " + who + " entered (" + kind + ") while " + other + " was inside, warned only later");
            } else {
                ++v.overlaps;
                problem("overlap: " + who + " entered (" + kind + ") while " + other + " was inside");
            }
        }
        if (id == lock_id::mutex || kind == "write") {
            if (l.last_exclusive && !(*l.last_exclusive < *t)) {
                ++v.token_regressions;
                problem("token regression: " + who + " entered with " + tok);
            }
            l.last_exclusive = std::max(l.last_exclusive.value_or(*t), *t);
        }
        l.inside[who] = {id, kind, e.t};
        unsigned readers = 0;
        for (const auto& [name, h] : l.inside) readers += h.kind == "read";
        const auto n = static_cast<unsigned>(l.inside.size());
        if (id == lock_id::mutex) v.max_inside_mutex = std::max(v.max_inside_mutex, n);
        if (id == lock_id::sem) v.max_inside_sem = std::max(v.max_inside_sem, n);
        v.max_inside_read = std::max(v.max_inside_read, readers);
    }

    // A lock that went from its last entry (or the start) until `now` without a new holder.
    void stall(lock_id id, const lock_state& l, std::int64_t now) {
        const std::int64_t from = std::max(l.last_entry, start);
        if (now - from <= v.longest_stall_ns) return;
        v.longest_stall_ns = now - from;
        auto since_start = [&](std::int64_t t) { return std::to_string((t - start) / 1'000'000) + " ms"; };
        const char* names[] = {"the mutex", "the read/write lock", "the semaphore"};
        v.longest_stall_at = std::string(names[static_cast<int>(id)]) + ", from " + since_start(from) + " to " + since_start(now);
    }

    void leave(const std::string& who) {
        for (auto& [id, l] : locks) l.inside.erase(who);
    }

    void write(const event& e) {
        if (e.args.size() != 6) return void(++v.malformed);
        if (e.args[5] == "fenced") return void(++v.fenced_writes);
        ++v.accepted_writes;
        if (e.args[3] != e.args[4]) {
            ++v.lost_updates;
            problem("lost update: " + e.args[0] + " wrote " + e.args[1] + " from " + e.args[3] + ", which was " + e.args[4] + " by then");
        }
    }

    void on(const event& e) {
        if (e.what == "enter") enter(e);
        else if (e.what == "warned" && e.args.size() == 1) {
            ++v.warnings;
            leave(e.args[0]);
        } else if (e.what == "exit" && e.args.size() == 1) leave(e.args[0]);
        else if (e.what == "write") write(e);
        else if (e.what == "limit" && e.args.size() == 2) v.sem_limit = static_cast<unsigned>(std::stoul(e.args[1]));
        else if (e.what == "nemesis" && !e.args.empty() && e.args[0] == "start") ++v.faults;
        else if (e.what == "nemesis" && !e.args.empty() && e.args[0] == "heal") {
            for (auto id : {lock_id::mutex, lock_id::rw, lock_id::sem})
                if (!locks[id].waiting_since_heal) locks[id].waiting_since_heal = e.t;
        } else if (e.what == "orphans" && e.args.size() == 2) {
            const auto n = std::stoul(e.args[1]);
            v.orphans += n;
            if (n > 0) problem("orphans: " + e.args[1] + " under " + e.args[0]);
        } else if (e.what == "end") {
            for (auto& [id, l] : locks) stall(id, l, e.t);
        } else
            ++v.malformed;
    }
};

}  // namespace

verdict check(std::istream& log) {
    std::vector<event> events;
    judge j;
    for (std::string line; std::getline(log, line);) {
        if (line.empty()) continue;
        std::istringstream in(line);
        event e;
        if (!(in >> e.t >> e.what)) {
            ++j.v.malformed;
            continue;
        }
        for (std::string a; in >> a;) e.args.push_back(a);
        events.push_back(std::move(e));
    }
    std::stable_sort(events.begin(), events.end(), [](const event& a, const event& b) { return a.t < b.t; });
    for (const auto& e : events)
        if (e.what == "warned" && !e.args.empty()) j.ever_warned.insert(e.args[0]);
    if (!events.empty()) j.start = events.front().t;
    for (const auto& e : events) {
        try {
            j.on(e);
        } catch (const std::exception&) {  // a number that is not one
            ++j.v.malformed;
        }
    }
    return j.v;
}

std::string summary(const verdict& v) {
    std::ostringstream o;
    o << "sections=" << v.sections << " overlaps=" << v.overlaps << " late_warnings=" << v.late_warnings
      << " token_regressions=" << v.token_regressions << " lost_updates=" << v.lost_updates << " orphans=" << v.orphans
      << " malformed=" << v.malformed << " warnings=" << v.warnings << " writes=" << v.accepted_writes
      << " fenced=" << v.fenced_writes << " max_inside=" << v.max_inside_mutex << '/' << v.max_inside_read << '/'
      << v.max_inside_sem << " faults=" << v.faults << " longest_stall_ms=" << v.longest_stall_ns / 1'000'000
      << " worst_recovery_ms=" << v.worst_recovery_ns / 1'000'000
      << " mean_recovery_ms=" << (v.recoveries ? v.total_recovery_ns / static_cast<std::int64_t>(v.recoveries) / 1'000'000 : 0)
      << " verdict=" << (v.ok() ? "pass" : "FAIL");
    return o.str();
}

}  // namespace zklock_chaos
