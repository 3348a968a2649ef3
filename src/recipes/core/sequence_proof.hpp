// Proves from a create's answer alone, without listing the directory, that a new node of ours is first.
//
// ZooKeeper names a sequential node after the count of children ever created in its parent (deletions
// do not count: since ZOOKEEPER-1046 the suffix is the parent's creation count, and the cversion a
// client reads is that count plus the deletions). So when our create answers with sequence n + 1 and
// our node n was the last one created before it, nobody else created a node in between, and the
// directory holds what it held when node n was made (less whatever was deleted since) plus the new
// node. If node n held the lock, nothing made before it was ahead of it once it held, and nothing
// ahead of n can be ahead of n + 1 except n itself; so once our delete of n has answered, n + 1 is
// first. That saves the listing on every cycle of a lock that one session takes again and again
// (a server's "independent" locks, a loop), a third of its requests.
//
// It holds in one parent node only: a directory deleted (an empty container reaped, an admin's
// rm -r) and made again restarts the count. So the directory carries a data watch (exists) set
// before node n was created, and any firing of it ends the proof; so does a new connection, since
// the watch's place in the request order is only known on the connection it was answered on.
//
// A pure record, fed by the lock queue on the session's executor (lock_queue.cpp).
#pragma once

#include <cstdint>

namespace zklock::detail {

class sequence_proof {
public:
    /// The directory's exists watch answered with the directory present, on connection `connection`.
    void watching(std::uint64_t connection) noexcept { watch_ = {true, connection}; }
    /// The watch fired (or is gone): every proof made so far ends.
    void directory_changed() noexcept { watch_ = {}, covered_ = {}, held_ = {}; }
    bool watched(std::uint64_t connection) const noexcept { return watch_.set && watch_.value == connection; }

    /// A create of ours answered with `seq` on `connection`. True: it is first in the directory.
    /// Either way it becomes the node a later proof starts from, if the watch covered its create.
    bool created(std::int32_t seq, std::uint64_t connection) noexcept
    {
        const bool first = watched(connection) && held_.set && deleted_ && follows(held_.value, seq);
        covered_ = {watched(connection), seq};
        held_ = {};
        return first;
    }
    /// The node with `seq` holds the lock (a listing, a predecessor's deletion or created() said so).
    void held(std::int32_t seq) noexcept
    {
        if (!covered_.is(seq)) return;
        held_ = covered_;
        released_ = deleted_ = false;
    }
    /// Another contender queued behind it: its next create cannot follow it directly (no listing saved).
    void contended() noexcept { held_ = {}; }
    /// Our delete of the held node was sent, and then answered (ok, or the node was already gone).
    void released(std::int32_t seq) noexcept { released_ = released_ || held_.is(seq); }
    void deleted(std::int32_t seq) noexcept { deleted_ = deleted_ || (released_ && held_.is(seq)); }

    /// Worth creating without the listing: a create made now would be proven first unless someone
    /// else creates a node meanwhile (its answer is then listed, one round trip later).
    bool expects(std::uint64_t connection) const noexcept { return watched(connection) && held_.set && released_; }

private:
    // The suffix is a signed 32-bit count that wraps as Java's int does.
    static bool follows(std::int32_t before, std::int32_t after) noexcept
    {
        return static_cast<std::uint32_t>(after) == static_cast<std::uint32_t>(before) + 1u;
    }
    template <class T>
    struct mark {  // (not std::optional: GCC 12 warns that its value may be read uninitialized)
        bool set = false;
        T value{};
        bool is(T v) const noexcept { return set && value == v; }
    };

    mark<std::uint64_t> watch_;  // the connection the watch was answered on
    mark<std::int32_t> covered_;  // our last create's sequence, if the watch was set before it
    mark<std::int32_t> held_;     // ... and that node held the lock
    bool released_ = false, deleted_ = false;
};

}  // namespace zklock::detail
