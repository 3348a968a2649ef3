// What the recipes keep per session, in the one slot the session offers them (session_impl::extension):
// each lock key's shared state, the sequence proofs kept between a key's lock objects, and the lock
// directories whose ACL was checked. The session knows nothing of it; it is touched only on the session's
// executor.
#pragma once

#include "sequence_memo.hpp"

#include "../session/session_impl.hpp"

#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace zklock::detail {

class lock_base;
class session_drain;

class recipe_registry {
public:
    /// The recipes' per-key shared state ("mutex:/locks/a" -> lock_queue), so that every lock object of
    /// the session on one path shares one contender node. Held weakly: the lock objects and guards own it.
    std::unordered_map<std::string, std::weak_ptr<lock_base>> states;

    /// session::async_drain was called: no new acquire is taken (error::draining).
    bool draining = false;
    /// The drain, once asked for (recipes/drain.hpp).
    std::shared_ptr<session_drain> drain;

    /// The sequence memo of `key` (each side of a read/write lock has its own: a reader's held node proves
    /// nothing for a writer), or null if the key never went back to ZooKeeper.
    std::shared_ptr<sequence_memo> find_memo(const std::string& key) const
    {
        auto it = memos_.find(key);
        return it == memos_.end() ? nullptr : it->second;
    }
    /// Keeps `memo` for the next lock object on `key`. A lock queue makes its memo when its first node goes
    /// back to ZooKeeper and hands it over here when it goes: while it lives, every lock object on the
    /// key shares it, so that a release on the hot path touches no map. A bounded number is kept.
    void keep_memo(const std::string& key, std::shared_ptr<sequence_memo> memo)
    {
        if (auto it = memos_.find(key); it != memos_.end()) {
            it->second = std::move(memo);
            return;
        }
        if (memos_.size() >= max_memos)  // a bound, not an eviction policy: those proofs start over
            std::erase_if(memos_, [](const auto& kv) { return !kv.second->holds_a_watch(); });
        // A memo that holds a directory watch is never dropped before the watch fires: the C client cannot
        // take a watch back from the server, which would keep it unseen. At most max_directory_watches
        // hold one, fewer than max_memos: the erase above always makes room.
        memos_.emplace(key, std::move(memo));
    }

    /// Lock directories whose ACL was found to let this session list them and delete its nodes there.
    bool permitted(const std::string& dir) const { return permitted_dirs_.count(dir) != 0; }
    void note_permitted(const std::string& dir)
    {
        if (permitted_dirs_.size() >= max_permitted_dirs) permitted_dirs_.clear();  // a bound, as above
        permitted_dirs_.insert(dir);
    }

    /// Each memo's directory watch stays on the server until the directory changes (a persistent lock
    /// directory's for the session's life, review 3, P4): at most this many are out at once per session,
    /// whatever the number of paths (issue 48.11). Past it, a lock goes without the sequence proof (its
    /// acquire lists the directory, as without a memo) until one of them fires.
    static constexpr std::size_t max_directory_watches = 1024;
    /// Directory watches asked for or on the server now (see lock_queue::watch_directory).
    std::size_t directory_watches = 0;
    static constexpr std::size_t max_memos = 4096;
    static constexpr std::size_t max_permitted_dirs = 10'000;

private:
    std::unordered_map<std::string, std::shared_ptr<sequence_memo>> memos_;
    std::unordered_set<std::string> permitted_dirs_;
};

/// Tells the session's drain, if one is under way, that a hold ended (on the session's executor): a
/// release, or a lease that ran out (recipes/drain.cpp).
void note_release(session_impl& s);

/// Adds the gauges of the registry's counted lock states to a snapshot (session_impl::add_lock_gauges).
void add_lock_gauges(const recipe_registry& r, session_stats& into);

/// The session's registry, made on first use (on the session's executor).
inline recipe_registry& registry_of(session_impl& s)
{
    if (!s.extension) {
        auto made = std::make_shared<recipe_registry>();
        // The session owns both the registry and this hook: the registry outlives every call of it.
        s.add_lock_gauges = [r = made.get()](session_stats& into) { add_lock_gauges(*r, into); };
        s.extension = std::move(made);
    }
    return *std::static_pointer_cast<recipe_registry>(s.extension);
}

}  // namespace zklock::detail
