// What a session remembers of a lock key between its lock objects: the sequence proof and the directory
// watch it needs (core/sequence_proof.hpp). A mutex made per request, as the README's examples make
// them, then saves the listing as a long-lived one does: the proof is about this session's own nodes on
// the path, not about a lock object.
#pragma once

#include "core/sequence_proof.hpp"

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
    /// A watch is on the server (or asked for) for this memo: it must not be dropped before it fires.
    bool holds_a_watch() const noexcept { return asked || directory_watch.armed(); }
};

}  // namespace zklock::detail
