// Proves from a create's answer alone, without listing the directory, that a new node of ours is first.
//
// ZooKeeper names a sequential node after its parent's cversion, and the cversion counts the children
// ever created in that parent: a create raises it by one, a delete leaves it alone (ZooKeeper 3.8's
// PrepRequestProcessor and DataTree; a 3.3 server bumped it on delete too, which only makes the proof
// never hold). So when our create answers with sequence n + 1 and our node n was the last one created
// before it, nobody else created a node in between, and the directory holds what it held when node n
// was made (less whatever was deleted since) plus the new node. If node n held the lock, nothing made
// before it was ahead of it once it held, and nothing ahead of n can be ahead of n + 1 except n
// itself; so once our delete of n has answered, n + 1 is first. That saves the listing on every cycle
// of a lock that one session takes again and again (a server's "independent" locks, a loop), a third of
// its requests. Where others create between our cycles without ever queueing behind us, the proof
// would miss every time and cost its listing a round trip late: after a miss, creates go with their
// pipelined listing until one shows that the proof would have held (expects()).
//
// It holds in one parent node only: a directory deleted (an empty container reaped, an admin's
// rm -r) and made again restarts the count. So the directory carries a data watch (exists) set
// before node n was created, and any firing of it ends the proof. So does a new connection: the
// watch's place in the request order is only known on the connection it was answered on, and a watch
// asked again on a new connection starts from nothing (watching() clears what was proven). Every
// connection number given here is the one the answer certainly came on (answered_on), or none.
//
// A pure record, fed by the lock queue on the session's executor (lock_queue.cpp).
#pragma once

#include <zklock/detail/sequence.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace zklock::detail {

/// The connection an answer certainly came on: the one current when its request was sent, if that one
/// is still current when the answer's handler runs. Otherwise none: a request sent while disconnected
/// goes out on the next connection, and a reconnect may come between an answer and its handler.
inline std::optional<std::uint64_t> answered_on(std::uint64_t sent_on, std::uint64_t current) noexcept
{
    return sent_on == current ? std::optional<std::uint64_t>(sent_on) : std::nullopt;
}

class sequence_proof {
public:
    /// The directory's exists watch answered with the directory present, on connection `connection`.
    /// A watch on another connection than the last one proves nothing about what was proven on that
    /// one: every proof made so far ends.
    void watching(std::uint64_t connection) noexcept
    {
        if (!watched(connection)) covered_ = {}, held_ = {}, released_ = deleted_ = false;
        watch_ = {true, connection};
    }
    /// The watch fired (or is gone): every proof made so far ends.
    void directory_changed() noexcept { watch_ = {}, covered_ = {}, held_ = {}; }
    bool watched(std::uint64_t connection) const noexcept { return watch_.set && watch_.value == connection; }

    /// A create of ours answered with `seq` on `connection` (none: not known). True: it is first in the
    /// directory. Either way it becomes the node a later proof starts from, if the watch covered its create.
    bool created(std::int32_t seq, std::optional<std::uint64_t> connection) noexcept
    {
        const bool covered = connection && watched(*connection);
        const bool followed = covered && held_.set && deleted_;  // a held node of ours to follow, gone
        const bool first = followed && follows(held_.value, seq);
        // Asked of every create, with its listing or without: whether the proof would have held is the
        // evidence for trying it on the next create (expects()).
        if (followed) missed_ = !first;
        covered_ = {covered, seq};
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
    /// else creates a node meanwhile (its answer is then listed, one round trip later). Not after a
    /// miss: when someone else's create came between our last two, others take the lock between our
    /// cycles without queueing behind us (a read/write lock's other side, say), and the next create would
    /// likely miss too. Creates then go with their listing until one of them shows that the proof would
    /// have held.
    bool expects(std::uint64_t connection) const noexcept
    {
        return watched(connection) && held_.set && released_ && !missed_;
    }
    /// The sequence such a create would be proven first with: the held node's plus one (none unless
    /// expects()). Its name can be read before the create's answer comes.
    std::optional<std::int32_t> next(std::uint64_t connection) const noexcept
    {
        if (!expects(connection)) return std::nullopt;
        return static_cast<std::int32_t>(static_cast<std::uint32_t>(held_.value) + 1u);
    }

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
    bool missed_ = false;  // the last create that followed a held node of ours did not follow it directly
};

}  // namespace zklock::detail
