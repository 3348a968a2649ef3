// What a session remembers of a lock key between its lock objects: the sequence proof and the directory
// watch it needs (core/sequence_proof.hpp). A mutex made per request, as the README's examples make
// them, then saves the listing as a long-lived one does: the proof is about this session's own nodes on
// the path, not about a lock object.
#pragma once

#include "core/sequence_proof.hpp"

#include "../session/session_impl.hpp"

#include <zklock/watch.hpp>

#include <memory>
#include <string>

namespace zklock::detail {

struct sequence_memo {
    sequence_proof proof;
    watch directory_watch;     // the exists watch on the lock directory the proof needs
    bool asked = false;        // ... its request is in flight

    /// The proof, ended first if the watch fired or is gone: the session marks a firing the moment it
    /// reads it, and the watch's handler would only come later.
    sequence_proof& current() noexcept
    {
        if (!directory_watch.armed()) proof.directory_changed();
        return proof;
    }
};

/// The session's memo for `key` ("mutex:/locks/a"; each side of a read/write lock has its own: a reader's
/// held node proves nothing for a writer), or null if the key never went back to ZooKeeper.
inline std::shared_ptr<sequence_memo> find_sequence_memo(session_impl& s, const std::string& key)
{
    auto it = s.memos.find(key);
    return it == s.memos.end() ? nullptr : std::static_pointer_cast<sequence_memo>(it->second);
}

/// ... made on first use: a key's first node going back to ZooKeeper. The session keeps a bounded number.
inline std::shared_ptr<sequence_memo> make_sequence_memo(session_impl& s, const std::string& key)
{
    if (auto found = find_sequence_memo(s, key)) return found;
    if (s.memos.size() >= 4096) s.memos.clear();  // a bound, not an eviction policy: the proofs start over
    auto made = std::make_shared<sequence_memo>();
    s.memos.emplace(key, made);
    return made;
}

}  // namespace zklock::detail
