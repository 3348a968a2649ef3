// The semaphore's protocol, one run per waiter at a time: the requests of core/lease_run_machine.
#include "lease_run.hpp"

#include "core/node_data.hpp"

#include "uuid.hpp"

#include <zklock/detail/sequence.hpp>

namespace zklock::detail {

lease_run::lease_run(std::shared_ptr<semaphore_queue> q, std::size_t n, bool one_look)
    : q_(q), s_(q->s), internal_lock_(q->internal_lock), path_(q->path), leases_dir_(q->path + "/leases"),
      prefix_(protected_prefix("lease-", false)), node_data_(encode_node_data(q->s->cfg.owner, std::nullopt, q->max_permits)),
      acl_(q->opts.acl),
      machine_(n, q->max_permits, one_look, q->schema_checked, q->last_run_held_at_first_count)
{
}

void lease_run::start() { perform(machine_.start()); }

void lease_run::abandon() { perform(machine_.abandon()); }

void lease_run::perform(const lease_run_machine::actions& out)
{
    using R = run_action::type;
    auto self = shared_from_this();
    for (const auto& a : out) {
        switch (a.what) {
        case R::check_schema:
            s_->get_children(path_, nullptr, [self](error_code ec, std::vector<std::string> names, stat) {
                if (ec != zk_errc::no_node && !ec)
                    if (auto foreign = foreign_to_semaphore(names)) log_schema_refusal(*self->s_, self->path_, describe(*foreign));
                self->perform(self->machine_.on_schema(ec, names));
            });
            break;
        case R::schema_ok:
            if (auto q = q_.lock()) q->schema_checked = true;
            break;
        case R::lock: {
            lock_waiter_ = internal_lock_->new_id();
            const deadline d = a.one_look ? deadline(zklock::clock::now()) : deadline();
            internal_lock_->acquire(lock_waiter_, d, std::nullopt, [self](error_code ec, guard g) {
                if (self->machine_.finished()) return;  // g goes, and with it the internal lock
                self->lock_ = std::move(g);
                self->perform(self->machine_.on_locked(ec));
            });
            break;
        }
        case R::create_lease:
            s_->create(op::create{leases_dir_ + "/" + prefix_, node_data_,
                                  create_mode::ephemeral_sequential, acl_},
                       [self, r = a.round, i = a.index](error_code ec, std::string p, stat st) {
                           self->perform(self->machine_.on_created(r, i, ec, std::move(p), st.czxid));
                       });
            break;
        case R::list_leases:
            s_->get_children(leases_dir_, &leases_watch_, [self, r = a.round](error_code ec, std::vector<std::string> names, stat) {
                self->perform(self->machine_.on_listed(r, ec, names));
            });
            break;
        case R::wait_leases:
            leases_watch_.async_wait([self, r = a.round](error_code ec, watch_event) {
                if (!ec) self->perform(self->machine_.on_leases_changed(r));
            });
            break;
        case R::make_leases_dir:
            s_->create(op::create{leases_dir_, "", create_mode::container, acl_}, [self](error_code ec, std::string, stat) {
                self->perform(self->machine_.on_dir_made(ec));
            });
            break;
        case R::delete_node: delete_node(s_, a.node, {}); break;
        case R::find_orphans: find_orphans(); break;
        case R::unlock:
            leases_watch_ = watch{};
            if (!lock_) internal_lock_->cancel_waiter(lock_waiter_, asio::error::operation_aborted);
            lock_ = guard{};  // released in the background
            break;
        case R::done:
            if (auto q = q_.lock()) {
                q->last_run_held_at_first_count = machine_.held_at_first_count();
                q->on_run_done(this, a.ec, a.ec ? std::vector<lease_node>{} : machine_.take_leases());
            } else {
                for (auto& l : machine_.take_leases()) delete_node(s_, l.node, {});
            }
            break;
        }
    }
}

// A create whose answer was lost may have happened: find it by its protected name once reconnected.
void lease_run::find_orphans()
{
    s_->wait_state(session_state::connecting, [s = s_, dir = leases_dir_, prefix = prefix_](error_code, session_state st) {
        if (st != session_state::connected) return;
        s->get_children(dir, nullptr, [s, dir, prefix](error_code ec, std::vector<std::string> names, stat) {
            if (ec) return;
            for (const auto& n : names)
                if (n.compare(0, prefix.size(), prefix) == 0) delete_node(s, dir + "/" + n, {});
        });
    });
}

}  // namespace zklock::detail
