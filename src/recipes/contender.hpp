// The shell around contender_machine: performs its actions on the session, feeds the answers back.
#pragma once

#include "core/contender_machine.hpp"
#include "lock_base.hpp"

#include <zklock/acl.hpp>
#include <zklock/watch.hpp>

#include <array>
#include <cstdint>
#include <optional>

namespace zklock::detail {

class contender;

/// Who hears a contender's reports (acquired, waiting, failed, lost, followers waiting).
class contender_owner {
public:
    virtual ~contender_owner() = default;
    virtual void on_contender(const contender* c, const contender_action& report) = 0;
    /// A create of `c`'s, sent on connection `sent_on`, answered with `node`: true if the owner can prove
    /// from its sequence alone that it is first in the directory (core/sequence_proof.hpp). Asked of every
    /// create that succeeds.
    virtual bool created(const contender* c, const std::string& node, std::uint64_t sent_on) = 0;
};

class contender : public std::enable_shared_from_this<contender> {
public:
    /// `owner` is held weakly: it lives as long as a lock object or a guard does, and its end abandons
    /// this contender.
    /// `data`: what the node holds when created (core/node_data.hpp's format, or an election's id).
    /// `kazoo_name`: named as kazoo's Lock names its nodes ("<hex>__lock__N"), not Curator's.
    contender(std::shared_ptr<session_impl> s, std::weak_ptr<contender_owner> owner, std::string dir,
              contender_kind kind, zklock::acl acl, bool watch_followers, std::string data, bool kazoo_name = false);

    /// `next`: the sequence the sequence proof expects the node to get (none: no proof expected). With
    /// one, the create goes without the listing, for the owner to prove the node first (see created), and
    /// may go in a multi with the session's other creates, its node's token read right behind it.
    void start(std::optional<std::int32_t> next = std::nullopt)
    {
        next_ = next;
        perform(machine_.start(next.has_value()));
    }
    /// Nobody wants the lock any more: delete the node now, or when its create completes.
    void abandon() { perform(machine_.abandon()); }
    /// From now on, report another contender queuing behind the held node (followers_waiting).
    void watch_followers() { perform(machine_.follow()); }
    /// Watch our own node while held: its deletion is reported as lost, a revocation request as such.
    void watch_own() { perform(machine_.watch_own_node()); }
    /// Before start: see contender_machine::pass_over.
    void pass_over(std::string child) { machine_.pass_over(std::move(child)); }
    /// Before start: see contender_machine::grant_only_on_listing.
    void grant_only_on_listing() { machine_.grant_only_on_listing(); }
    /// Deletes the node; `done` (may be empty) gets ZooKeeper's answer.
    void release(handler<> done);

    const std::string& node() const noexcept { return machine_.node(); }
    std::uint32_t node_changes() const noexcept { return machine_.node_changes(); }
    std::int64_t zxid() const noexcept { return machine_.zxid(); }

private:
    void perform(const contender_machine::actions& actions);
    void perform(const contender_action& a);
    watch* slot(watch_slot w, std::size_t index) noexcept;

    std::shared_ptr<session_impl> s_;
    std::weak_ptr<contender_owner> owner_;
    zklock::acl acl_;
    std::string data_;
    contender_machine machine_;
    handler<> release_done_;
    std::optional<std::int32_t> next_;  // the sequence start() expects the first create to get
    std::array<watch, max_watched_ahead> pred_watches_;  // the nodes ahead, by the index of their get_data
    watch own_watch_, followers_watch_, waiting_own_watch_;
    std::uint64_t ahead_watched_at_ = 0;  // session_impl::connections when the nodes ahead were watched
};

}  // namespace zklock::detail
