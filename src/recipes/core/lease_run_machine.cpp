#include "lease_run_machine.hpp"

#include "schema.hpp"

#include <zklock/error.hpp>

namespace zklock::detail {

using R = run_action::type;

lease_run_machine::actions lease_run_machine::start()
{
    actions out;
    if (!schema_known_) out.push_back({R::check_schema});
    else lock(out);
    return out;
}

void lease_run_machine::lock(actions& out)
{
    out.push_back({R::lock, 0, 0, one_look_});
    locked_ = true;
}

lease_run_machine::actions lease_run_machine::on_schema(error_code ec, const std::vector<std::string>& children)
{
    actions out;
    if (finished_) return out;
    if (ec && ec != zk_errc::no_node) {
        finish(out, ec);
        return out;
    }
    if (foreign_to_semaphore(children)) {  // (a missing PATH has no children: nothing foreign)
        finish(out, zklock::error::schema_mismatch);
        return out;
    }
    out.push_back({R::schema_ok});
    lock(out);
    return out;
}

lease_run_machine::actions lease_run_machine::on_locked(error_code ec)
{
    actions out;
    if (finished_) return out;
    if (ec) finish(out, ec);
    else create_leases(out);
    return out;
}

// Pipelined: the creates, then the listing, which ZooKeeper answers after them. Speculating: the listing,
// then the internal lock's delete and the creates (see the header). Only a holder of the internal lock
// makes leases: without it, the lock is taken again first.
void lease_run_machine::create_leases(actions& out)
{
    if (!locked_) return lock(out);
    const auto r = ++round_;
    created_.assign(n_, lease_node{});
    counted_ = false;
    speculating_ = std::exchange(speculate_, false);
    if (speculating_) {
        out.push_back({R::list_leases, r});
        out.push_back({R::unlock});
        locked_ = false;
    }
    for (std::size_t i = 0; i < n_; ++i) {
        run_action a{R::create_lease, r, i};
        a.joins_unlock = speculating_;
        out.push_back(std::move(a));
    }
    if (!speculating_) out.push_back({R::list_leases, r});
}

lease_run_machine::actions lease_run_machine::on_created(std::uint64_t r, std::size_t i, error_code ec, std::string node,
                                                         std::int64_t czxid)
{
    actions out;
    if (finished_ || r != round_) {
        // Given up (or a round that was): what was made goes; what may have been made is looked for.
        // A run that holds its leases never looks: they share its name (and a lost answer fails the
        // current round's requests with it, so that run failed).
        if (!ec) out.push_back({R::delete_node, 0, 0, false, std::move(node)});
        else if (is_retryable(ec) && finished_ && !succeeded_) out.push_back({R::find_orphans});
        else if (is_retryable(ec)) unknown_create_ = true;
        return out;
    }
    if (!ec) {
        created_[i] = {std::move(node), czxid};
        if (czxid == 0) out.push_back({R::read_lease, r, i, false, created_[i].node});  // made in a multi
        else hold_if_ready(out);
        return out;
    }
    if (ec == zk_errc::no_node) {
        // PATH/leases is missing (PATH exists: the internal lock made PATH/locks): make it, then again.
        ++round_;
        delete_created(out);
        out.push_back({R::make_leases_dir});
        return out;
    }
    if (is_retryable(ec)) unknown_create_ = true;
    finish(out, ec == zk_errc::no_auth ? error_code(zklock::error::no_create_permission) : ec);
    return out;
}

lease_run_machine::actions lease_run_machine::on_dir_made(error_code ec)
{
    actions out;
    if (finished_) return out;
    if (ec && ec != zk_errc::node_exists) finish(out, ec);
    else create_leases(out);
    return out;
}

lease_run_machine::actions lease_run_machine::on_listed(std::uint64_t r, error_code ec, const std::vector<std::string>& leases)
{
    actions out;
    if (finished_ || r != round_) return out;
    if (speculating_) {  // counted before our creates, under the lock
        if (ec == zk_errc::no_node) make_again(out);  // no directory yet: our creates fail too; again, under the lock
        else if (ec) finish(out, ec);
        else if (leases.size() + n_ > max_) over_the_count(out);
        else {
            counted_ = true;
            hold_if_ready(out);
        }
        return out;
    }
    if (ec) {
        finish(out, ec);
        return out;
    }
    for (const auto& c : created_) {
        const auto held = lease_holds(leases, std::string_view(c.node).substr(c.node.rfind('/') + 1), max_);
        if (!held) {  // our lease node is gone (deleted by someone): make new ones
            make_again(out);
            return out;
        }
        if (!*held) {
            if (one_look_) over_the_count(out);
            else {
                held_at_first_count_ = false;
                waited_ = true;
                out.push_back({R::wait_leases, r});  // another lease goes, or another waiter's: look again then
            }
            return out;
        }
    }
    counted_ = true;
    hold_if_ready(out);
    return out;
}

lease_run_machine::actions lease_run_machine::on_lease_read(std::uint64_t r, std::size_t i, error_code ec,
                                                            std::optional<std::int64_t> czxid)
{
    actions out;
    if (finished_ || r != round_ || i >= created_.size()) return out;
    if (ec) finish(out, ec);
    else if (!czxid) make_again(out);  // our lease was deleted by someone: make new ones
    else {
        created_[i].czxid = *czxid;
        hold_if_ready(out);
    }
    return out;
}

// Held once the count allows it and every lease is made and its token known.
void lease_run_machine::hold_if_ready(actions& out)
{
    if (!counted_) return;
    for (const auto& c : created_)
        if (c.node.empty() || c.czxid == 0) return;
    if (!waited_) held_at_first_count_ = true;
    finish(out, {});
}

// More leases than max_permits with ours: wait under the lock, or give up (one look). A speculating round
// no longer has the lock: its leases go, and the lock is taken again, and kept this time.
void lease_run_machine::over_the_count(actions& out)
{
    held_at_first_count_ = false;
    waited_ = true;
    if (one_look_) finish(out, zklock::error::timeout);
    else make_again(out);
}

// This round's leases go (those not answered yet are deleted when they are), and new ones are made.
void lease_run_machine::make_again(actions& out)
{
    ++round_;
    delete_created(out);
    create_leases(out);
}

lease_run_machine::actions lease_run_machine::on_leases_changed(std::uint64_t r)
{
    actions out;
    if (finished_ || r != round_) return out;
    out.push_back({R::list_leases, ++round_});
    return out;
}

lease_run_machine::actions lease_run_machine::abandon()
{
    actions out;
    if (finished_) return out;
    finished_ = true;
    if (locked_) out.push_back({R::unlock});
    delete_created(out);
    return out;
}

void lease_run_machine::finish(actions& out, error_code ec)
{
    finished_ = true;
    succeeded_ = !ec;
    if (locked_) out.push_back({R::unlock});  // the next waiter's create queues behind its delete
    if (ec) delete_created(out);
    out.push_back({R::done, 0, 0, false, {}, ec});
}

void lease_run_machine::delete_created(actions& out)
{
    for (auto& c : std::exchange(created_, {}))
        if (!c.node.empty()) out.push_back({R::delete_node, 0, 0, false, std::move(c.node)});
    // A create whose answer was lost may have happened: find it by its protected name once reconnected.
    if (std::exchange(unknown_create_, false)) out.push_back({R::find_orphans});
}

}  // namespace zklock::detail
