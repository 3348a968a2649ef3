// Performs the local queue's actions. Everything here runs on the session's executor.
#include "lock_queue.hpp"

#include "core/node_data.hpp"

#include <zklock/detail/sequence.hpp>

namespace zklock::detail {

// A name of its own in the namespace: the library may compile in unity batches (ZKLOCK_UNITY_BUILD).
using queue_act = queue_action::type;

lock_queue::lock_queue(std::shared_ptr<session_impl> session, std::string k, std::string lock_path,
                       lock_queue_options o)
    : lock_base(std::move(session)), key(std::move(k)), path(std::move(lock_path)), opts(std::move(o)),
      machine_(opts.queue), memo_(registry_of(*s).find_memo(key))
{
    if (opts.stats_label) count_into(path, *opts.stats_label);
}

void lock_queue::subscribe()
{
    listener_ = s->subscribe([w = weak_from_this()](session_state st) {
        auto q = w.lock();
        if (!q) return;
        if (renewed(*q->s, st)) q->on_renewal();
        else if (is_final(st)) {
            q->step([&](local_queue& m) { return m.on_session_final(final_error(st)); });
            q->end_place_waits(final_error(st));
        }
        // Reconnected: a waiter may have been kept from a node that became ours while disconnected.
        // (While disconnected nothing is done here: the loss clock runs from the newest answer either way.)
        else if (st == session_state::connected) q->step([](local_queue& m) { return m.on_connected(); });
    });
}

void lock_queue::on_renewal()
{
    const auto cut = machine_.holder_ids();
    const bool counted = bool(counted_loss_);  // their loss was counted before the renewal
    step([&](local_queue& m) { return m.on_session_renewed(requeues(*s)); });
    for (auto holder : cut) {
        stop_lease(holder);  // its hold is over: no lease runs out on it later
        losses.set(holder, machine_.lost(holder));
        if (!counted) meter.lost(machine_.lost(holder));
    }
}

lock_queue::~lock_queue()
{
    // Forget this path in the session, unless a newer queue took the slot meanwhile.
    forget_shared_state(*s, key);
    s->unsubscribe(listener_);
    perform(machine_.teardown(), nullptr, now());
    end_place_waits(error_code(asio::error::operation_aborted));
    if (memo_) registry_of(*s).keep_memo(key, std::move(memo_));  // after the teardown, which may release
}

void lock_queue::observe_session(time_point at)
{
    const bool final = is_final(s->state);
    machine_.observe(s->state == session_state::connected, final ? final_error(s->state) : error_code{},
                     loss_clock_ran_out(at));
}

template <class Event>
void lock_queue::step(Event event, release_completion* done, time_point at)
{
    observe_session(at);
    perform(event(machine_), done, at);
    losses.set_all(machine_.has_holders() ? machine_.lost(*machine_.holder_ids().begin()) : error_code{});
    count_losses();
    rearm();
}

void lock_queue::count_losses()
{
    if (!machine_.has_holders()) {
        counted_loss_ = {};
        return;
    }
    const auto& holders = machine_.holder_ids();
    const auto why = machine_.lost(*holders.begin());
    if (why && !counted_loss_) meter.lost(why, holders.size());
    counted_loss_ = why;
}

void lock_queue::add_gauges(lock_stats& into) const
{
    into.holders += machine_.holder_ids().size();
    into.waiters += waiters_.size();
    into.contenders += current_ ? 1 : 0;
}

void lock_queue::acquire(std::uint64_t id, deadline d, lease_length lease, handler<guard> h)
{
    const auto t = now();
    if (auto ec = path == "/"                              ? error_code(zklock::error::invalid_path)
                  : lease && *lease <= lease_length::value_type::zero() ? error_code(zklock::error::invalid_lease)
                                                                         : acquire_refusal(path)) {
        meter.acquire_done(ec, t, t, false);
        s->post_completion(std::move(h), ec, guard{});
        return;
    }
    waiters_.emplace(id, waiter{std::move(h), lease, t});
    const bool one_look = clock().start_waiter(id, d, t, s->one_look_limit());
    step([&](local_queue& m) { return m.acquire(id, one_look); }, nullptr, t);
}

void lock_queue::cancel_waiter(std::uint64_t id, error_code why)
{
    step([&](local_queue& m) { return m.cancel(id, why); });
}

void lock_queue::drain()
{
    std::vector<std::uint64_t> ids;
    waiters_.for_each([&](std::uint64_t id, const waiter&) { ids.push_back(id); });
    for (auto id : ids) cancel_waiter(id, zklock::error::draining);
    // As a revocation request does: holders hear it, and a lingering node (nobody holds) goes now.
    step([](local_queue& m) { return m.on_revoke_requested(); });
}

guard lock_queue::enter(std::uint64_t holder, error_code& why)
{
    observe_session(now());  // what the machine knows of the session, fresh (as step does)
    const auto seq = machine_.next_seq();
    const auto h = machine_.enter(holder, &why);
    if (h == 0 || !current_) {
        if (!why) why = zklock::error::not_held;
        return guard{};
    }
    if (auto end = lease_end(holder)) start_lease(h, *end);  // a second hold ends with the first one's lease
    return guard(shared_from_this(), h, granted_node(), fencing_token{current_->zxid(), seq}, now());
}

void lock_queue::release(std::uint64_t holder, release_completion done)
{
    const auto at = now();
    meter.hold_ended(holder, at);
    stop_lease(holder);
    losses.forget(holder);
    step([&](local_queue& m) { return m.release(holder, done.awaited()); }, &done, at);
}

void lock_queue::wait_lost(std::uint64_t id, std::uint64_t holder, handler<error_code> h)
{
    lost_waiters_.emplace(id, std::move(h));
    step([&](local_queue& m) { return m.wait_lost(id, holder); });
}

void lock_queue::cancel_lost(std::uint64_t id)
{
    step([&](local_queue& m) { return m.cancel_lost(id); });
}

void lock_queue::wait_revoked(std::uint64_t id, std::uint64_t holder, handler<> h)
{
    revoke_waiters_.emplace(id, std::move(h));
    step([&](local_queue& m) { return m.wait_revoked(id, holder); });
}

void lock_queue::cancel_revoked(std::uint64_t id)
{
    step([&](local_queue& m) { return m.cancel_revoked(id); });
}

error_code lock_queue::lost(std::uint64_t holder) const
{
    if (machine_.cut_off(holder)) return machine_.lost(holder);
    if (!machine_.holds(holder)) return {};
    // The session's end is known the moment its state changes; listeners hear of it a moment later.
    if (is_final(s->state)) return final_error(s->state);
    return machine_.lost(holder);
}

void lock_queue::wait_place(std::uint64_t id, std::size_t known, handler<std::size_t> h)
{
    if (place_ != known) return s->post_completion(std::move(h), error_code{}, place_);
    if (is_final(s->state)) return s->post_completion(std::move(h), final_error(s->state), place_);
    place_waiters_.emplace(id, std::make_pair(known, std::move(h)));
    watch_queue();
}

void lock_queue::watch_queue()
{
    if (watching_queue_ || place_waiters_.empty() || !current_ || current_->node().empty() || machine_.has_holders())
        return;
    watching_queue_ = true;
    s->get_children(path, &queue_watch_, [w = weak_from_this()](error_code ec, std::vector<std::string> names, stat) {
        auto q = w.lock();
        if (!q) return;
        if (ec || !q->current_) {
            q->watching_queue_ = false;  // tried again at the next wait or report
            return;
        }
        const auto v = decide(q->opts.kind, names, q->node_name());
        if (v.found && !v.holds) q->set_place(v.ahead);
        q->queue_watch_.async_wait([w](error_code, watch_event) {
            auto qq = w.lock();
            if (!qq) return;
            qq->watching_queue_ = false;
            qq->watch_queue();
        });
    });
}

void lock_queue::cancel_place(std::uint64_t id)
{
    if (auto it = place_waiters_.find(id); it != place_waiters_.end()) {
        auto h = std::move(it->second.second);
        place_waiters_.erase(it);
        s->post_completion(std::move(h), error_code(asio::error::operation_aborted), std::size_t{0});
    }
}

void lock_queue::end_place_waits(error_code why)
{
    for (auto& [id, w] : std::exchange(place_waiters_, {}))
        s->post_completion(std::move(w.second), why, place_);
}

void lock_queue::set_place(std::size_t place)
{
    place_ = place;
    for (auto it = place_waiters_.begin(); it != place_waiters_.end();) {
        if (it->second.first == place) {
            ++it;
            continue;
        }
        s->post_completion(std::move(it->second.second), error_code{}, place);
        it = place_waiters_.erase(it);
    }
}

std::optional<std::int32_t> lock_queue::current_sequence() const
{
    return parse_sequence(node_name());  // none for an empty name
}

bool lock_queue::created(const contender* c, const std::string& node, std::uint64_t sent_on)
{
    if (c != current_.get() || !memo_) return false;
    const auto seq = parse_sequence(node);
    return seq && memo_->current().created(*seq, answered_on(sent_on, s->connections));
}

void lock_queue::watch_directory()
{
    if (!memo_) return;
    auto& m = *memo_;
    if (m.asked || m.current().watched(s->connections)) return;
    // A directory watch stays on the server until the directory changes, whatever becomes of the memo:
    // a bounded number at once (recipe_registry::max_directory_watches); past it, no proof, a listing.
    auto& reg = registry_of(*s);
    if (reg.directory_watches >= recipe_registry::max_directory_watches) return;
    ++reg.directory_watches;  // one less when it fires, or when the answer says it was not set
    m.asked = true;
    s->exists(path, &m.directory_watch,
              [w = std::weak_ptr<sequence_memo>(memo_), ws = s->weak_from_this(),
               sent_on = s->connections](error_code ec, std::optional<stat> st) {
                  auto memo = w.lock();
                  auto session = ws.lock();
                  if (!memo || !session) return;  // the session is going: its watches go with it
                  memo->asked = false;
                  const auto on = answered_on(sent_on, session->connections);
                  if (!ec && st && on && memo->directory_watch.armed()) {
                      memo->proof.watching(*on);
                      memo->directory_watch.async_wait([ws](error_code, watch_event) {
                          if (auto ss = ws.lock(); ss && ss->extension) --registry_of(*ss).directory_watches;
                      });
                      return;
                  }
                  // Else gone (that watch waits for a creation: ours, right after), no answer, or not known
                  // on which connection.
                  memo->directory_watch = watch{};
                  --registry_of(*session).directory_watches;
              });
}

void lock_queue::on_contender(const contender* c, const contender_action& report)
{
    if (c != current_.get()) return;  // a contender given up earlier
    using ct = contender_action::type;
    if (report.what == ct::failed && expired_into_renewal(*s, report.ec)) return;  // the renewal takes it up
    if (report.what == ct::acquired) {
        set_place(0);
        if (auto seq = current_sequence(); seq && memo_) {
            memo_->proof.held(*seq);
            // Others queued ahead of this node, and are likely to queue again between our creates: the
            // next one goes with its listing, where a create by sequence would likely miss (and then cost
            // a listing, the predicted name's read and a read of its token).
            if (queued_behind_) memo_->proof.contended();
        }
    } else if (report.what == ct::waiting && report.index > 0) {
        queued_behind_ = true;
        set_place(report.index);
        watch_queue();
    } else if (report.what == ct::followers_waiting || report.what == ct::followers_changed) {
        if (memo_) memo_->proof.contended();
    }
    step([&](local_queue& m) {
        switch (report.what) {
        case contender_action::type::acquired: return m.on_acquired();
        case contender_action::type::waiting: return m.on_queued();
        case contender_action::type::failed: return m.on_failed(report.ec);
        case contender_action::type::lost: return m.on_lost(report.ec);
        case contender_action::type::revoke_requested:
            meter.revocation_received();
            return m.on_revoke_requested();
        case contender_action::type::followers_none: return m.on_followers_none();
        case contender_action::type::followers_changed: return m.on_followers_changed();
        default: return m.on_followers_waiting();
        }
    });
}

std::shared_ptr<contender> lock_queue::drop_contender()
{
    if (current_) s->release_keepalive();  // the session's keepalive is no longer needed for it
    clock().stop_own_watch();
    granted_node_.reset();
    return std::exchange(current_, nullptr);
}

const std::shared_ptr<const std::string>& lock_queue::granted_node()
{
    // Made again when the contender's node changed, not only once a contender: the name is the node's,
    // whichever node that is.
    if (!granted_node_ || granted_changes_ != current_->node_changes()) {
        granted_node_ = std::make_shared<const std::string>(current_->node());
        granted_changes_ = current_->node_changes();
    }
    return granted_node_;
}

void lock_queue::complete_waiter(std::uint64_t id, error_code ec, guard g, time_point at)
{
    if (auto w = waiters_.take(id)) complete_waiter(id, std::move(*w), ec, std::move(g), at);
}

void lock_queue::complete_waiter(std::uint64_t id, waiter w, error_code ec, guard g, time_point at, bool local_grant,
                                 fencing_token token)
{
    meter.acquire_done(ec, w.started, at, local_grant, token);
    clock().stop_waiter(id);
    s->post_completion(std::move(w.h), ec, std::move(g));
}

namespace {
/// Completes listener `id` of `listeners` (a loss or revocation wait) with `ec` and `args`, if it still waits.
template <class... Args>
void answer(session_impl& s, std::map<std::uint64_t, handler<Args...>>& listeners, std::uint64_t id, error_code ec,
            Args... args)
{
    auto it = listeners.find(id);
    if (it == listeners.end()) return;
    auto h = std::move(it->second);
    listeners.erase(it);
    s.post_completion(std::move(h), ec, std::move(args)...);
}
}  // namespace

void lock_queue::perform(const local_queue::actions& actions, release_completion* done, time_point at)
{
    for (const auto& a : actions) {
        switch (a.what) {
        case queue_act::grant: {
            auto w = waiters_.take(a.id);
            if (w && w->lease) start_lease(a.holder, at + *w->lease);
            meter.hold_started(a.holder, at);
            const fencing_token token{current_->zxid(), a.seq};
            // Made even for a waiter that is gone, so that its hold is released as the guard goes.
            guard g(shared_from_this(), a.holder, granted_node(), token, at);
            if (w) complete_waiter(a.id, std::move(*w), {}, std::move(g), at, a.seq > 0, token);
            publish_lease();
            break;
        }
        case queue_act::fail_waiter: complete_waiter(a.id, a.ec, guard{}, at); break;
        case queue_act::start_contender: {
            auto self = shared_from_this();
            watch_directory();  // sent first: the watch must be in place before the node is created
            const auto next = memo_ ? memo_->current().next(s->connections) : std::nullopt;
            // A lingering node needs to know at once who queues behind it (others ask at their first
            // hand-off or join: local_queue::grant).
            current_ = std::make_shared<contender>(s, std::weak_ptr<contender_owner>(self), path, opts.kind, opts.acl,
                                                   opts.queue.linger,
                                                   opts.node_data.value_or(encode_node_data(s->cfg.owner, std::nullopt)),
                                                   opts.kazoo_name);
            if (!opts.passed_over.empty()) current_->pass_over(opts.passed_over);
            if (opts.grant_only_on_listing) current_->grant_only_on_listing();
            s->retain_keepalive();
            data_version_ = 0, published_.reset(), data_foreign_ = false;  // a new node: its data as created
            queued_behind_ = false;
            current_->start(next);
            break;
        }
        case queue_act::abandon_contender:
            if (auto c = drop_contender()) c->abandon();
            break;
        case queue_act::release_contender: {
            const auto seq = current_sequence();
            if (auto c = drop_contender()) {
                // Kept in the session when this queue goes (not for a one-off key: nobody looks it up).
                if (!memo_ && !opts.one_off) memo_ = std::make_shared<sequence_memo>();
                if (seq && memo_) memo_->proof.released(*seq);
                // The delete's answer also tells the proof that the node is gone (a later lock object on
                // the key may be the one to use it).
                c->release([m = memo_, ss = s, seq, done = a.answer && done ? done->share() : nullptr](error_code ec) {
                    if (!ec && seq && m) m->proof.deleted(*seq);
                    if (done) done->complete(*ss, ec);
                });
            }
            break;
        }
        case queue_act::forget_contender: drop_contender(); break;
        case queue_act::release_done:
            if (done) done->complete(*s, a.ec);
            break;
        case queue_act::notify_lost: answer(*s, lost_waiters_, a.id, error_code{}, a.ec); break;
        case queue_act::abort_lost_waiter:
            answer(*s, lost_waiters_, a.id, error_code(asio::error::operation_aborted), error_code{});
            break;
        case queue_act::notify_revoked: answer(*s, revoke_waiters_, a.id, error_code{}); break;
        case queue_act::abort_revoke_waiter:
            answer(*s, revoke_waiters_, a.id, error_code(asio::error::operation_aborted));
            break;
        case queue_act::watch_followers:
            if (current_) current_->watch_followers();
            break;
        case queue_act::watch_own:
            if (current_) current_->watch_own();
            break;
        case queue_act::start_own_watch_clock:
            // A new node stops it (drop_contender).
            clock().start_own_watch(at + std::chrono::milliseconds(local_queue::own_watch_delay_ms));
            break;
        case queue_act::arm_loss_clock: arm_loss_clock(); break;
        case queue_act::cancel_loss_clock: cancel_loss_clock(); break;
        case queue_act::confirm_touch:
            confirm_touch([w = weak_from_this()] {
                if (auto q = w.lock()) q->step([](local_queue& m) { return m.on_touch_confirmed(); });
            });
            break;
        case queue_act::confirm_node: confirm_node(a.seq); break;
        }
    }
}

// The node became ours while the session was away. Read behind a sync: the server reconnected to may lag
// behind the one left, and still show a node deleted meanwhile.
void lock_queue::confirm_node(std::uint64_t node_seq)
{
    if (!current_) return;
    s->sync(path, [](error_code) {});
    s->exists(current_->node(), nullptr, [w = weak_from_this(), node_seq](error_code ec, std::optional<stat> st) {
        auto q = w.lock();
        if (!q) return;
        if (!ec && !st) ec = zk_errc::no_node;
        q->step([&](local_queue& m) { return m.on_node_confirmed(node_seq, ec); });
    });
}

void lock_queue::alarm_rang(const clock_alarm& a)
{
    if (a.what == clock_alarm::type::deadline) cancel_waiter(a.id, zklock::error::timeout);
    else if (a.what == clock_alarm::type::own_watch && current_) step([](local_queue& m) { return m.on_own_watch_due(); });
}

void lock_queue::lease_ran_out(std::uint64_t holder)
{
    s->log->write(log_level::warning, "zklock: a lease on " + path + " ran out; the lock was released");
    meter.hold_ended(holder, now(), true);
    step([&](local_queue& m) { return m.on_lease_expired(holder); });
    if (machine_.cut_off(holder)) {
        losses.set(holder, zklock::error::lease_expired);
        meter.lost(zklock::error::lease_expired);
    }
}

// The deadline shown is the latest lease among the holders when every one has a lease (readers may share
// a node), else none. Written with the version we last wrote, so that it never overwrites a revocation
// request; once someone else wrote, we stop (their request is in the data, the data watch tells us).
void lock_queue::publish_lease()
{
    // Nothing published and no lease to publish (most locks, at every grant): nothing more to read.
    if (!published_ && !clock().has_leases()) return;
    if (!current_ || data_foreign_ || current_->node().empty() || opts.node_data) return;
    if (writing_) {
        rewrite_ = true;
        return;
    }
    std::optional<std::int64_t> until;
    for (const auto h : machine_.holder_ids()) {
        const auto end = lease_end_ms(h);
        if (!end) {
            until.reset();
            break;
        }
        until = std::max(until.value_or(*end), *end);
    }
    if (until == published_) return;
    published_ = until;
    writing_ = true;
    s->set_data(current_->node(), encode_node_data(s->cfg.owner, until), data_version_,
                [w = weak_from_this(), c = std::weak_ptr<contender>(current_)](error_code ec, stat st) {
                    auto q = w.lock();
                    if (!q) return;
                    q->writing_ = false;
                    if (q->current_ == c.lock()) {  // else another node by now, with its data as created
                        if (!ec) q->data_version_ = st.version;
                        else if (ec == zk_errc::bad_version) q->data_foreign_ = true;
                    }
                    if (std::exchange(q->rewrite_, false)) q->publish_lease();
                });
}

void lock_queue::grace_passed()
{
    step([](local_queue& m) { return m.on_uncertain(); });
}

std::shared_ptr<lock_queue> find_lock_queue(const std::shared_ptr<session_impl>& s, const std::string& key,
                                            const std::string& path, const lock_queue_options& o, error_code& refusal)
{
    return shared_state_for<lock_queue>(
        s, key, [&](const lock_queue& q) { return q.opts == o; },
        [&] { return std::make_shared<lock_queue>(s, key, path, o); }, refusal);
}

}  // namespace zklock::detail
