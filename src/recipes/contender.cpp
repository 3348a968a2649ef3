// Performs a contender's actions. Answers come back as posted completions on the session's executor
// and go straight into the machine; its new actions are performed in order.
#include "contender.hpp"

#include "core/node_data.hpp"

#include "uuid.hpp"

#include <zklock/detail/sequence.hpp>

namespace zklock::detail {

// A name of its own in the namespace: the library may compile in unity batches (ZKLOCK_UNITY_BUILD).
using contender_act = contender_action::type;

error_code final_error(session_state st)
{
    return st == session_state::expired       ? error_code(zklock::error::session_expired)
           : st == session_state::auth_failed ? error_code(zklock::error::auth_failed)
                                              : error_code(zklock::error::session_closed);
}

void delete_node(const std::shared_ptr<session_impl>& s, std::string node, handler<> done)
{
    auto path = node;
    s->remove(std::move(path), -1, [s, node = std::move(node), done = std::move(done)](error_code ec) mutable {
        if (ec == zk_errc::no_node) ec = {};
        if (is_retryable(ec)) {
            s->wait_state(session_state::connecting,
                          [s, node = std::move(node), done = std::move(done)](error_code, session_state st) mutable {
                              if (st == session_state::connected) delete_node(s, std::move(node), std::move(done));
                              else if (done) s->post_completion(std::move(done), final_error(st));
                          });
            return;
        }
        // `done` is the recipes' own (never a caller's), and this runs on the session's executor, out of
        // the C client: called at once, so that what the answer tells (the sequence proof's "deleted") is
        // known before the handler of the next answer, which may be the next create's, runs.
        if (done) std::move(done)(ec);
    }, true);
}

contender::contender(std::shared_ptr<session_impl> s, std::weak_ptr<contender_owner> owner, std::string dir,
                     contender_kind kind, zklock::acl acl, bool watch_followers, std::string data, bool kazoo_name)
    : s_(std::move(s)), owner_(std::move(owner)), acl_(std::move(acl)), data_(std::move(data)),
      machine_(dir, protected_prefix(kazoo_name ? "__lock__" : marker(kind), kazoo_name), kind,
               registry_of(*s_).permitted(dir),
               watch_followers)
{
}

void contender::release(handler<> done)
{
    release_done_ = std::move(done);
    perform(machine_.release());
}

watch* contender::slot(watch_slot w, std::size_t index) noexcept
{
    switch (w) {
    case watch_slot::predecessor: return &pred_watches_[index];
    case watch_slot::own: return &own_watch_;
    case watch_slot::followers: return &followers_watch_;
    case watch_slot::waiting_own: return &waiting_own_watch_;
    case watch_slot::none: break;
    }
    return nullptr;
}

void contender::perform(const contender_machine::actions& actions)
{
    for (const auto& a : actions) perform(a);
}

void contender::perform(const contender_action& a)
{
    // A report earlier in the list may have made the owner give this contender up: requests for a
    // finished machine are moot (the ones that clean up are not).
    const bool cleans_up =
        a.what == contender_act::list && (a.purpose == listing::cleanup || a.purpose == listing::find_own);
    switch (a.what) {
    case contender_act::create_node: case contender_act::create_container: case contender_act::exists:
    case contender_act::get_data: case contender_act::probe_delete: case contender_act::sync:
    case contender_act::await_watch: case contender_act::list:
        if (machine_.finished() && !cleans_up) return;
        break;
    default: break;
    }
    auto self = shared_from_this();
    const auto r = a.round;
    switch (a.what) {
    case contender_act::create_node:
    {
        auto answered = [self, r, sent_on = s_->connections](error_code ec, std::string path, stat st) {
            bool first = false;
            if (!ec && !self->machine_.finished())
                if (auto o = self->owner_.lock()) first = o->created(self.get(), path, sent_on);
            self->perform(self->machine_.on_created(r, ec, path, st.czxid, first));
        };
        op::create c{a.path, data_, create_mode::ephemeral_sequential, acl_};
        const auto next = std::exchange(next_, std::nullopt);  // only the first create is expected
        if (!a.batchable) s_->create_queued(std::move(c), std::move(answered));
        else s_->create_batched(std::move(c), next ? a.path + sequence_suffix(*next) : std::string{},
                                std::move(answered));
        break;
    }
    case contender_act::create_container:
        s_->create(op::create{a.path, "", create_mode::container, acl_},
                   [self, r, i = a.index](error_code ec, std::string, stat) {
                       self->perform(self->machine_.on_container_created(r, i, ec));
                   });
        break;
    case contender_act::exists:
        s_->exists(a.path, nullptr, [self, r, i = a.index](error_code ec, std::optional<stat> st) {
            self->perform(self->machine_.on_exists(r, i, ec, st.has_value()));
        });
        break;
    case contender_act::list:
        s_->get_children(a.path, slot(a.slot, 0),
                         [self, r, p = a.purpose](error_code ec, std::vector<std::string> names, stat) {
                             self->perform(self->machine_.on_listed(r, p, ec, names));
                         });
        break;
    case contender_act::get_data:
        if (a.slot == watch_slot::predecessor) ahead_watched_at_ = s_->connections;
        s_->get_data(a.path, slot(a.slot, a.index),
                     [self, r, w = a.slot, i = a.index](error_code ec, std::string data, stat st) {
                         self->perform(self->machine_.on_data(r, w, ec, st.czxid, data, i));
                     });
        break;
    case contender_act::probe_delete:
        s_->remove(a.path, -1, [self, r](error_code ec) { self->perform(self->machine_.on_probed(r, ec)); });
        break;
    case contender_act::sync: s_->sync(a.path, [](error_code) {}); break;  // only orders the listing behind it
    case contender_act::await_watch:
        slot(a.slot, a.index)->async_wait([self, r, w = a.slot](error_code ec, watch_event ev) {
            const bool crossed = w == watch_slot::predecessor && self->s_->connections != self->ahead_watched_at_;
            self->perform(self->machine_.on_watch_fired(r, w, ec, ev.type, crossed));
        });
        break;
    case contender_act::drop_watch:
        if (a.slot == watch_slot::predecessor) {
            for (auto& w : pred_watches_) w = watch{};
            waiting_own_watch_ = watch{};
        } else *slot(a.slot, 0) = watch{};
        break;
    case contender_act::delete_node: delete_node(s_, a.path, {}); break;
    case contender_act::release_node:
        if (a.path.empty()) {
            if (release_done_) s_->post_completion(std::move(release_done_), error_code{});
            break;
        }
        // The own-node watch goes once the delete is answered: the delete itself consumes it.
        delete_node(s_, a.path, [self, done = std::move(release_done_)](error_code ec) mutable {
            self->own_watch_ = watch{};
            if (done) std::move(done)(ec);  // the lock queue's (delete_node says why at once)
        });
        break;
    case contender_act::await_connected:
        s_->wait_state(session_state::connecting, [self, step = a.step](error_code, session_state st) {
            self->perform(self->machine_.on_reconnected(step, st == session_state::connected));
        });
        break;
    case contender_act::note_permitted: registry_of(*s_).note_permitted(a.path); break;
    case contender_act::schema_found:
        log_schema_refusal(*s_, machine_.dir(), a.path);
        break;
    case contender_act::acquired: case contender_act::waiting: case contender_act::failed: case contender_act::lost:
    case contender_act::followers_waiting: case contender_act::followers_none: case contender_act::followers_changed:
    case contender_act::revoke_requested:
        if (auto o = owner_.lock()) o->on_contender(this, a);
        break;
    }
}

}  // namespace zklock::detail
