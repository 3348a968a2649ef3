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

// Pipelined: the creates, then the listing, which ZooKeeper answers after them (and, speculating, the
// internal lock's delete, which it performs after the listing). Only a holder of the internal lock makes
// leases: without it, the lock is taken again first.
void lease_run_machine::create_leases(actions& out)
{
    if (!locked_) return lock(out);
    const auto r = ++round_;
    created_.assign(n_, lease_node{});
    for (std::size_t i = 0; i < n_; ++i) out.push_back({R::create_lease, r, i});
    out.push_back({R::list_leases, r});
    speculating_ = std::exchange(speculate_, false);
    if (speculating_) {
        out.push_back({R::unlock});
        locked_ = false;
    }
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
    if (ec) {
        finish(out, ec);
        return out;
    }
    for (const auto& c : created_) {
        const auto held = lease_holds(leases, std::string_view(c.node).substr(c.node.rfind('/') + 1), max_);
        if (!held) {  // our lease node is gone (deleted by someone): make new ones
            ++round_;
            delete_created(out);
            create_leases(out);
            return out;
        }
        if (!*held) {
            held_at_first_count_ = false;
            waited_ = true;
            if (one_look_) finish(out, zklock::error::timeout);
            else if (speculating_) {  // no waiting without the lock: again, keeping it this time
                ++round_;
                delete_created(out);
                create_leases(out);
            } else {
                out.push_back({R::wait_leases, r});  // another lease goes, or another waiter's: look again then
            }
            return out;
        }
    }
    if (!waited_) held_at_first_count_ = true;
    finish(out, {});
    return out;
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
