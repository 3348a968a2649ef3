// The semaphore's protocol, one run per waiter at a time.
#include "lease_run.hpp"

#include "core/node_data.hpp"

#include <zklock/detail/sequence.hpp>

namespace zklock::detail {

lease_run::lease_run(std::shared_ptr<semaphore_queue> q, std::size_t n, deadline d)
    : q_(q), s_(q->s), path_(q->path), leases_dir_(q->path + "/leases"), prefix_("_c_" + make_uuid() + "-lease-"),
      acl_(q->opts.acl), n_(n), max_(q->max_leases), d_(d), one_look_(d && *d <= std::chrono::steady_clock::now())
{
}

void lease_run::start()
{
    auto q = q_.lock();
    if (!q) return;
    lock_waiter_ = q->internal_lock->new_id();
    q->internal_lock->acquire(lock_waiter_, d_, std::nullopt, [self = shared_from_this()](error_code ec, guard g) {
        self->on_locked(ec, std::move(g));
    });
}

void lease_run::abandon()
{
    if (finished_) return;
    finished_ = true;
    if (auto q = q_.lock(); q && !lock_) q->internal_lock->cancel_waiter(lock_waiter_, asio::error::operation_aborted);
    lock_ = guard{};  // released in the background
    leases_watch_ = watch{};
    delete_created();
}

void lease_run::on_locked(error_code ec, guard g)
{
    if (finished_) return;  // g goes, and with it the internal lock
    if (ec) return finish(ec, {});
    lock_ = std::move(g);
    create_leases();
}

// Pipelined: a look at PATH (once per session: is it a semaphore's?), the lease creates, then the listing
// of the leases, which ZooKeeper answers after the creates.
void lease_run::create_leases()
{
    const auto r = ++round_;
    auto self = shared_from_this();
    auto q = q_.lock();
    if (!q) return abandon();
    if (!q->schema_checked)
        s_->get_children(path_, nullptr, [self, r](error_code ec, std::vector<std::string> names, stat) {
            self->on_schema(r, ec, names);
        });
    created_.assign(n_, lease_node{});
    for (std::size_t i = 0; i < n_; ++i)
        s_->create(op::create{leases_dir_ + "/" + prefix_, encode_node_data(s_->cfg.owner, std::nullopt),
                              create_mode::ephemeral_sequential, acl_},
                   [self, r, i](error_code ec, std::string p, stat st) { self->on_created(r, i, ec, p, st); });
    s_->get_children(leases_dir_, &leases_watch_, [self, r](error_code ec, std::vector<std::string> names, stat) {
        self->on_listed(r, ec, names);
    });
}

void lease_run::on_schema(std::uint64_t r, error_code ec, const std::vector<std::string>& names)
{
    if (finished_ || r != round_ || ec) return;  // errors show in the other answers
    if (auto foreign = foreign_to_semaphore(names)) {
        log_schema_refusal(*s_, path_, describe(*foreign));
        return finish(zklock::error::schema_mismatch, {});
    }
    if (auto q = q_.lock()) q->schema_checked = true;
}

void lease_run::on_created(std::uint64_t r, std::size_t i, error_code ec, const std::string& p, const stat& st)
{
    if (finished_ || r != round_) {
        // Given up (or a round that was): what was made goes; what may have been made is looked for.
        if (!ec) delete_node(s_, p, {});
        else if (is_retryable(ec)) unknown_create_ = true;
        return;
    }
    if (!ec) {
        created_[i] = {p, st.czxid};
        return;
    }
    if (ec == zk_errc::no_node) {
        // PATH/leases is missing (PATH exists: the internal lock made PATH/locks): make it, then again.
        ++round_;
        delete_created();
        auto self = shared_from_this();
        s_->create(op::create{leases_dir_, "", create_mode::container, acl_}, [self](error_code cec, std::string, stat) {
            if (self->finished_) return;
            if (cec && cec != zk_errc::node_exists) return self->finish(cec, {});
            self->create_leases();
        });
        return;
    }
    if (is_retryable(ec)) unknown_create_ = true;
    finish(ec == zk_errc::no_auth ? error_code(zklock::error::no_create_permission) : ec, {});
}

void lease_run::on_listed(std::uint64_t r, error_code ec, const std::vector<std::string>& names)
{
    if (finished_ || r != round_) return;
    if (ec) return finish(ec, {});
    for (const auto& c : created_) {
        const auto held = lease_holds(names, c.node.substr(c.node.rfind('/') + 1), max_);
        if (!held) {  // our lease node is gone (deleted by someone): make new ones
            ++round_;
            delete_created();
            return create_leases();
        }
        if (!*held) {
            if (one_look_) return finish(zklock::error::timeout, {});
            // Another lease goes, or another waiter's: look again then.
            leases_watch_.async_wait([self = shared_from_this(), r](error_code wec, watch_event) {
                if (self->finished_ || r != self->round_ || wec) return;
                const auto r2 = ++self->round_;
                self->s_->get_children(self->leases_dir_, &self->leases_watch_,
                                       [self, r2](error_code e, std::vector<std::string> n, stat) {
                                           self->on_listed(r2, e, n);
                                       });
            });
            return;
        }
    }
    finish({}, std::move(created_));
}

void lease_run::finish(error_code ec, std::vector<lease_node> leases)
{
    if (finished_) return;
    finished_ = true;
    leases_watch_ = watch{};
    lock_ = guard{};  // the internal lock goes in the background; the next waiter's create queues behind
    if (ec) delete_created();
    if (auto q = q_.lock()) q->on_run_done(this, ec, std::move(leases));
    else
        for (auto& l : leases) delete_node(s_, l.node, {});
}

void lease_run::delete_created()
{
    for (auto& c : std::exchange(created_, {}))
        if (!c.node.empty()) delete_node(s_, c.node, {});
    if (!std::exchange(unknown_create_, false)) return;
    // A create whose answer was lost may have happened: find it by its protected name once reconnected.
    auto s = s_;
    s_->wait_state(session_state::connecting, [s, dir = leases_dir_, prefix = prefix_](error_code, session_state st) {
        if (st != session_state::connected) return;
        s->get_children(dir, nullptr, [s, dir, prefix](error_code ec, std::vector<std::string> names, stat) {
            if (ec) return;
            for (const auto& n : names)
                if (n.compare(0, prefix.size(), prefix) == 0) delete_node(s, dir + "/" + n, {});
        });
    });
}

}  // namespace zklock::detail
