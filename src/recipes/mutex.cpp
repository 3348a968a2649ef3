// The mutex recipe: one contender node per (session, path), a local FIFO of coroutines behind it.
//
//   lock_queue  the coroutines of one session waiting for, or holding, one lock path; hands the lock
//               between them without a round trip, up to a bound (lock cohorting, Dice et al. 2012)
//   contender   one lock node's life: create, find its place, watch the one ahead, hold, delete
//
// Everything here runs on the session's executor; ZooKeeper's answers arrive as posted completions.
#include <zklock/detail/sequence.hpp>
#include <zklock/mutex.hpp>

#include "../session/session_impl.hpp"

#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <map>
#include <optional>

namespace zklock::detail {

class contender;

/// A release's completion, completed once: by ZooKeeper's answer, or earlier by a cancellation (the node
/// is then given up in the background). Shared with the cancellation slot, which holds it weakly.
struct pending_release {
    explicit pending_release(handler<> handler) : h(std::move(handler)) {}
    handler<> h;
    void complete(session_impl& s, error_code ec)
    {
        if (h) s.post_completion(std::move(h), ec);
    }
};

std::string recipe_key(const std::string& path) { return "mutex:" + path; }

error_code final_error(session_state st)
{
    return st == session_state::expired       ? error_code(zklock::error::session_expired)
           : st == session_state::auth_failed ? error_code(zklock::error::auth_failed)
                                              : error_code(zklock::error::session_closed);
}

class lock_queue : public std::enable_shared_from_this<lock_queue> {
public:
    lock_queue(std::shared_ptr<session_impl> session, std::string lock_path, mutex_options options)
        : s(std::move(session)), path(std::move(lock_path)), opts(std::move(options)), grace_(s->ex)
    {
    }
    // The last mutex and guard of this path are gone: waiters are aborted, the node given up.
    ~lock_queue();

    void subscribe()
    {
        listener_ = s->subscribe([w = weak_from_this()](session_state st) {
            if (auto q = w.lock()) q->on_session_state(st);
        });
    }

    /// Ids of waiters and of loss listeners, taken on the caller's thread (their cancellation slots are
    /// bound there, before the hop onto the session's executor).
    std::uint64_t new_id() noexcept { return next_id_.fetch_add(1, std::memory_order_relaxed); }

    void acquire(std::uint64_t id, deadline d, handler<guard> h);
    void release(std::uint64_t holder, std::shared_ptr<pending_release> done);
    void wait_lost(std::uint64_t id, std::uint64_t holder, handler<error_code> h);
    void finish_waiter(std::uint64_t id, error_code ec);
    void finish_lost_waiter(std::uint64_t id);
    error_code lost(std::uint64_t holder) const
    {
        if (!holder_active_ || holder != holder_gen_) return {};
        // The session's end is known the moment its state changes; listeners hear of it a moment later.
        if (is_final(s->state)) return final_error(s->state);
        return lost_reason_;
    }

    // From the contender (ignored unless it is the current one).
    void on_acquired(const contender* c);
    void on_waiting(const contender* c);
    void on_failed(const contender* c, error_code ec);
    void on_lost(const contender* c, error_code ec);
    void on_others_waiting(const contender* c);

    const std::shared_ptr<session_impl> s;
    const std::string path;
    const mutex_options opts;

private:
    struct waiter {
        handler<guard> h;
        std::unique_ptr<asio::steady_timer> timer;
        bool one_look = false;
    };

    void advance();
    void grant();
    void fail_all(error_code ec);
    void maybe_abandon();
    void on_session_state(session_state st);
    void report_lost(error_code ec);
    void arm_loss_clock();
    void fail_one_looks();
    bool holds_node() const;
    /// The contender goes; the session's keepalive is no longer needed for it.
    std::shared_ptr<contender> drop_contender();

    std::map<std::uint64_t, waiter> waiters_;  // ids increase, so begin() is the longest waiting
    std::atomic<std::uint64_t> next_id_{1};
    std::shared_ptr<contender> current_;
    bool holder_active_ = false;
    std::uint64_t holder_gen_ = 0;
    std::uint64_t grants_ = 0;  // grants since the current node became the head
    bool others_waiting_ = false;  // another contender queues behind the node we hold
    error_code lost_reason_;
    std::map<std::uint64_t, handler<error_code>> lost_waiters_;
    asio::steady_timer grace_;  // the loss clock: ownership uncertain without a fresh answer
    std::uint64_t listener_ = 0;
};

// Deletes a node, again after a reconnect if the connection was lost, until ZooKeeper confirms it is gone
// (or the session ends, which removes an ephemeral node anyway). `done` may be empty.
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
        if (done) s->post_completion(std::move(done), ec);
    });
}

class contender : public std::enable_shared_from_this<contender> {
public:
    explicit contender(std::shared_ptr<lock_queue> queue)
        : q_(queue), s_(queue->s), prefix_("_c_" + make_uuid() + "-lock-"), dir_(queue->path), acl_(queue->opts.acl),
          linger_(queue->opts.linger)
    {
    }

    bool held() const noexcept { return phase_ == phase::held; }
    bool waiting() const noexcept { return phase_ == phase::waiting; }
    const std::string& node() const noexcept { return node_; }
    std::int64_t zxid() const noexcept { return czxid_; }

    /// Creates the node and lists the directory in one round trip (ZooKeeper answers a session's
    /// requests in order, so the listing already contains the new node).
    void start()
    {
        if (!s_->permitted(dir_)) return check_permissions();
        const auto r = ++round_;
        czxid_ = 0;  // a new node: its own creation zxid is the token, never an earlier node's
        auto self = shared_from_this();
        s_->create(op::create{dir_ + "/" + prefix_, "", create_mode::ephemeral_sequential, acl_},
                   [self, r](error_code ec, std::string path, stat st) { self->on_created(r, ec, path, st); });
        s_->get_children(dir_, nullptr, [self, r](error_code ec, std::vector<std::string> names, stat) {
            self->on_listed(r, ec, names);
        });
    }

    /// Nobody wants the lock any more: delete the node now, or when its create completes.
    void abandon()
    {
        if (finished()) return;
        finish();
        if (!node_.empty()) delete_node(s_, node_, {});
    }

    /// Deletes the node; `done` (may be empty) gets ZooKeeper's answer.
    void release(handler<> done)
    {
        finish();
        if (node_.empty()) {
            if (done) s_->post_completion(std::move(done), error_code{});
            return;
        }
        // Keep the own-node watch until the delete is answered: the delete itself consumes it.
        delete_node(s_, node_, [self = shared_from_this(), done = std::move(done)](error_code ec) mutable {
            self->own_watch_ = watch{};
            if (done) self->s_->post_completion(std::move(done), ec);
        });
    }

private:
    enum class phase { creating, waiting, held };

    bool finished() const noexcept { return finished_; }
    void finish()
    {
        finished_ = true;  // late answers now only clean up
        pred_watch_ = watch{};
        kids_watch_ = watch{};
    }

    void on_created(std::uint64_t r, error_code ec, const std::string& path, const stat& st)
    {
        if (finished()) {
            // The waiter left while the create was in flight. A create lost with the connection may still
            // have happened: look for it by name once reconnected.
            if (!ec) delete_node(s_, path, {});
            else if (is_retryable(ec)) after_reconnect([](contender&) {});
            return;
        }
        if (r != round_) return;
        if (!ec) {
            node_ = path;
            name_ = path.substr(path.rfind('/') + 1);
            czxid_ = st.czxid;
            return;  // the pipelined listing follows
        }
        ++round_;  // the pipelined listing is moot
        if (ec == zk_errc::no_node) return make_parents();
        if (ec == zk_errc::no_auth) return fail(zklock::error::no_create_permission);
        if (is_retryable(ec)) return after_reconnect([](contender& c) { c.find_own_node(); });
        fail(ec);
    }

    void on_listed(std::uint64_t r, error_code ec, const std::vector<std::string>& names)
    {
        if (finished() || r != round_ || node_.empty()) return;
        if (is_retryable(ec)) return after_reconnect([](contender& c) { c.relist(); });
        if (ec) return fail(ec);
        // A create retried by the server (a lagging follower) may have made a second node of ours.
        for (const auto& n : names)
            if (n != name_ && n.compare(0, prefix_.size(), prefix_) == 0) delete_node(s_, dir_ + "/" + n, {});
        auto pos = locate(names, name_, 1, is_mutex_contender);
        if (!pos.found) {
            // Our node is gone (deleted by someone else, before we held it): queue again with a new one.
            node_.clear();
            return start();
        }
        if (pos.ahead == 0) return become_holder();
        phase_ = phase::waiting;
        pred_is_head_ = pos.predecessor_is_head;
        if (auto q = q_.lock()) q->on_waiting(this);
        if (!finished()) watch_predecessor(dir_ + "/" + pos.predecessor);
    }

    void relist()
    {
        const auto r = ++round_;
        s_->get_children(dir_, nullptr, [self = shared_from_this(), r](error_code ec, std::vector<std::string> names,
                                                                            stat) { self->on_listed(r, ec, names); });
    }

    // getData, not exists: a watch is set only if the node is there, so a vanished predecessor leaves none.
    void watch_predecessor(std::string pred)
    {
        const auto r = ++round_;
        auto self = shared_from_this();
        s_->get_data(std::move(pred), &pred_watch_, [self, r](error_code ec, std::string, stat) {
            if (self->finished() || r != self->round_) return;
            if (ec == zk_errc::no_node) return self->relist();
            if (is_retryable(ec)) return self->after_reconnect([](contender& c) { c.relist(); });
            if (ec) return self->fail(ec);
            self->pred_watch_.async_wait([self, r](error_code wec, watch_event ev) {
                if (self->finished() || r != self->round_ || wec) return;  // session end: the queue hears it
                // Nobody below the predecessor was left when we listed, and later nodes sort after us:
                // its deletion makes us the holder without another listing.
                if (ev.type == watch_event_type::deleted && self->pred_is_head_) return self->become_holder();
                self->relist();
            });
        });
    }

    void become_holder()
    {
        phase_ = phase::held;
        if (linger_) watch_contenders();
        if (czxid_ != 0) {
            watch_own_node();
            if (auto q = q_.lock()) q->on_acquired(this);
            return;
        }
        // Found again after a lost create answer: learn the node's czxid (the fencing token) first.
        announce_when_watched_ = true;
        watch_own_node();
    }

    // While held, a watch on our own node tells the holder if someone deletes it.
    void watch_own_node()
    {
        auto self = shared_from_this();
        s_->get_data(node_, &own_watch_, [self](error_code ec, std::string, stat st) {
            if (self->finished()) return;
            if (ec == zk_errc::no_node) return self->lose(zklock::error::lock_node_deleted);
            if (is_retryable(ec)) return self->after_reconnect([](contender& c) { c.watch_own_node(); });
            if (ec) return;  // the session ended: the queue hears it from the session
            if (self->czxid_ == 0) self->czxid_ = st.czxid;
            if (std::exchange(self->announce_when_watched_, false))
                if (auto q = self->q_.lock()) q->on_acquired(self.get());
            if (self->finished()) return;
            self->own_watch_.async_wait([self](error_code wec, watch_event ev) {
                if (self->finished() || wec) return;
                if (ev.type == watch_event_type::deleted) return self->lose(zklock::error::lock_node_deleted);
                self->watch_own_node();  // data changed: keep watching
            });
        });
    }

    // While held, a child watch on the lock directory says when another contender queues behind us, so
    // that an idle node lingers (mutex_options::linger) only while nobody else waits.
    void watch_contenders()
    {
        auto self = shared_from_this();
        s_->get_children(dir_, &kids_watch_, [self](error_code ec, std::vector<std::string> names, stat) {
            if (self->finished()) return;
            if (is_retryable(ec)) return self->after_reconnect([](contender& c) { c.watch_contenders(); });
            if (ec) return;
            for (const auto& n : names)
                if (n != self->name_ && is_mutex_contender(n)) {
                    if (auto q = self->q_.lock()) q->on_others_waiting(self.get());
                    return;
                }
            self->kids_watch_.async_wait([self](error_code wec, watch_event) {
                if (!self->finished() && !wec) self->watch_contenders();
            });
        });
    }

    void lose(error_code why)
    {
        if (auto q = q_.lock(); q && !finished_) q->on_lost(this, why);
    }

    void fail(error_code ec)
    {
        auto q = q_.lock();
        abandon();
        if (q) q->on_failed(this, ec);
    }

    // The lock directory is missing: create it and its ancestors as containers (the server removes them
    // once empty), all pipelined, then try again.
    // Before the first node in a directory: may we delete what we create, and list the directory? A node
    // we cannot delete would block every other process until our session ends. The server checks a
    // delete's ACL before the node's existence, so deleting a child that does not exist answers NOAUTH
    // without DELETE permission and NONODE with it; the listing needs READ. Pipelined: one round trip,
    // once per directory and session.
    void check_permissions()
    {
        const auto r = ++round_;
        auto self = shared_from_this();
        s_->remove(dir_ + "/zklock-permission-probe", -1, [self, r](error_code ec) {
            if (r == self->round_) self->probe_ = ec;
        });
        s_->get_children(dir_, nullptr, [self, r](error_code ec, std::vector<std::string>, stat) {
            if (self->finished() || r != self->round_) return;
            if (is_retryable(ec) || is_retryable(self->probe_))
                return self->after_reconnect([](contender& c) { c.start(); });
            if (ec == zk_errc::no_node) return self->make_parents();
            if (self->probe_ == zk_errc::no_auth) return self->fail(zklock::error::no_delete_permission);
            if (ec == zk_errc::no_auth) return self->fail(zklock::error::no_read_permission);
            if (ec) return self->fail(ec);
            self->s_->note_permitted(self->dir_);
            self->start();
        });
    }

    // The lock directory is missing. Look before creating, as Curator does: ZooKeeper checks CREATE on
    // the parent before it checks existence, so "creating" an ancestor that exists under a locked-down
    // parent fails. All existence checks pipelined, then the missing part created as containers (the
    // server removes them once empty), pipelined too.
    void make_parents()
    {
        std::vector<std::string> parts;  // each ancestor, then the directory itself
        for (std::size_t pos = dir_.find('/', 1);; pos = dir_.find('/', pos + 1)) {
            parts.push_back(pos == std::string::npos ? dir_ : dir_.substr(0, pos));
            if (pos == std::string::npos) break;
        }
        const auto r = ++round_;
        auto self = shared_from_this();
        auto present = std::make_shared<std::vector<int>>(parts.size(), 0);  // 1 exists, 0 missing, -1 error
        auto failure = std::make_shared<error_code>();
        for (std::size_t i = 0; i < parts.size(); ++i)
            s_->exists(parts[i], nullptr, [self, r, i, present, failure, parts](error_code ec, std::optional<stat> st) {
                if (self->finished() || r != self->round_) return;
                if (ec && !*failure) *failure = ec;
                (*present)[i] = ec ? -1 : st ? 1 : 0;
                if (i + 1 < parts.size()) return;  // the last answer comes last
                if (is_retryable(*failure)) return self->after_reconnect([](contender& c) { c.start(); });
                if (*failure) return self->fail(*failure);
                std::size_t first_missing = 0;
                while (first_missing < parts.size() && (*present)[first_missing] == 1) ++first_missing;
                if (first_missing == parts.size()) return self->start();
                self->create_parents(parts, first_missing);
            });
    }

    void create_parents(const std::vector<std::string>& parts, std::size_t from)
    {
        std::shared_ptr<contender> self = shared_from_this();
        const auto r = ++round_;
        for (std::size_t i = from; i < parts.size(); ++i) {
            const bool last = i + 1 == parts.size();
            std::string part = parts[i];
            auto on_done = [self, r, last](error_code ec, std::string, stat) {
                if (self->finished() || r != self->round_) return;
                if (ec == zk_errc::node_exists) ec = {};
                if (!last && !ec) return;
                if (is_retryable(ec)) return self->after_reconnect([](contender& c) { c.start(); });
                if (ec) return self->fail(ec);
                self->start();
            };
            s_->create(op::create{std::move(part), "", create_mode::container, acl_}, std::move(on_done));
        }
    }

    // After a lost connection the create may or may not have happened: look for our protected name. A
    // sync first, so that the listing comes from a server that has caught up with the leader (a create
    // from the old connection may still have been on its way).
    void find_own_node()
    {
        const auto r = ++round_;
        auto self = shared_from_this();
        s_->sync(dir_, [](error_code) {});  // its answer only orders the listing behind it
        s_->get_children(dir_, nullptr, [self, r](error_code ec, std::vector<std::string> names, stat) {
            if (self->finished()) {  // the waiter left meanwhile: delete what we find
                if (is_retryable(ec)) return self->after_reconnect([](contender&) {});
                return self->delete_ours(names);
            }
            if (r != self->round_) return;
            if (is_retryable(ec)) return self->after_reconnect([](contender& c) { c.find_own_node(); });
            if (ec == zk_errc::no_node) return self->make_parents();
            if (ec) return self->fail(ec);
            for (const auto& n : names) {
                if (n.compare(0, self->prefix_.size(), self->prefix_) != 0) continue;
                self->node_ = self->dir_ + "/" + n;
                self->name_ = n;
                return self->relist();
            }
            self->start();  // it was never created
        });
    }

    template <class Fn>
    void after_reconnect(Fn fn)
    {
        auto self = shared_from_this();
        if (auto q = q_.lock(); q && !finished_) q->on_waiting(this);  // one-look waiters give up
        s_->wait_state(session_state::connecting, [self, fn](error_code, session_state st) {
            if (self->finished()) {
                // Still find and delete a node whose create's answer was lost.
                if (st == session_state::connected && self->node_.empty()) self->cleanup_unknown_node();
                return;
            }
            if (st == session_state::connected) return fn(*self);
            // A final state: the queue hears it from the session too.
        });
    }

    void cleanup_unknown_node()
    {
        auto self = shared_from_this();
        s_->get_children(dir_, nullptr, [self](error_code ec, std::vector<std::string> names, stat) {
            if (is_retryable(ec)) return self->after_reconnect([](contender&) {});
            if (!ec) self->delete_ours(names);
        });
    }

    void delete_ours(const std::vector<std::string>& names)
    {
        for (const auto& n : names)
            if (n.compare(0, prefix_.size(), prefix_) == 0) delete_node(s_, dir_ + "/" + n, {});
    }

    // Weak: the queue lives as long as a mutex or a guard of it does; its end abandons this contender.
    std::weak_ptr<lock_queue> q_;
    bool finished_ = false;
    std::shared_ptr<session_impl> s_;
    std::string prefix_;
    std::string dir_;
    zklock::acl acl_;
    bool linger_;
    std::string node_, name_;
    std::int64_t czxid_ = 0;
    phase phase_ = phase::creating;
    bool pred_is_head_ = false;
    error_code probe_;  // the permission probe's answer
    bool announce_when_watched_ = false;
    std::uint64_t round_ = 0;  // answers to requests of an earlier round are stale
    watch pred_watch_, own_watch_, kids_watch_;
};

// --- lock_queue ---------------------------------------------------------------------------------
lock_queue::~lock_queue()
{
    // Forget this path in the session, unless a newer queue took the slot meanwhile.
    if (auto it = s->recipes.find(recipe_key(path)); it != s->recipes.end() && it->second.expired())
        s->recipes.erase(it);
    s->unsubscribe(listener_);
    grace_.cancel();
    if (auto c = drop_contender()) c->abandon();
    fail_all(asio::error::operation_aborted);
    for (auto& [id, lw] : lost_waiters_)
        s->post_completion(std::move(lw), error_code(asio::error::operation_aborted), error_code{});
}

std::shared_ptr<contender> lock_queue::drop_contender()
{
    if (current_) s->release_keepalive();
    return std::exchange(current_, nullptr);
}

void lock_queue::acquire(std::uint64_t id, deadline d, handler<guard> h)
{
    error_code ec = path == "/" ? error_code(zklock::error::invalid_path) : s->refusal(path);
    const bool one_look = d && *d <= std::chrono::steady_clock::now();
    // One look: only a lock nobody here holds or waits for, on a connected session, can be had at once.
    if (!ec && one_look &&
        (holder_active_ || !waiters_.empty() || (current_ && current_->waiting()) ||
         s->state != session_state::connected))
        ec = zklock::error::timeout;
    if (ec) {
        s->post_completion(std::move(h), ec, guard{});
        return;
    }
    auto& w = waiters_[id];
    w.h = std::move(h);
    w.one_look = one_look;
    // A one look has a small bound of its own: a server that stopped answering must not hold it for the
    // 2/3 T the C client takes to notice.
    if (d) {
        w.timer = std::make_unique<asio::steady_timer>(s->ex, one_look ? std::chrono::steady_clock::now() + s->one_look_limit() : *d);
        w.timer->async_wait([q = weak_from_this(), id](error_code tec) {
            if (auto self = q.lock(); self && !tec) self->finish_waiter(id, zklock::error::timeout);
        });
    }
    advance();
}

void lock_queue::finish_waiter(std::uint64_t id, error_code ec)
{
    auto it = waiters_.find(id);
    if (it == waiters_.end()) return;
    auto w = std::move(it->second);
    waiters_.erase(it);
    if (w.timer) w.timer->cancel();
    s->post_completion(std::move(w.h), ec, guard{});
    maybe_abandon();
}

void lock_queue::fail_all(error_code ec)
{
    for (auto& [id, w] : std::exchange(waiters_, {})) {
        if (w.timer) w.timer->cancel();
        s->post_completion(std::move(w.h), ec, guard{});
    }
}

// Nobody here wants the lock any more: give up the node, whether it is still queued or already ours (a
// node that became the head while the session was disconnected is held by nobody; keeping it would block
// every other process). A lingering node stays: it goes when another process queues.
void lock_queue::maybe_abandon()
{
    if (!waiters_.empty() || holder_active_ || !current_) return;
    if (!current_->held()) return drop_contender()->abandon();
    if (!opts.linger) drop_contender()->release({});
}

bool lock_queue::holds_node() const { return current_ && current_->held(); }

void lock_queue::advance()
{
    if (holder_active_ || waiters_.empty()) return;
    if (holds_node()) {
        if (s->state == session_state::connected) grant();  // else once reconnected
        return;
    }
    if (!current_) {
        current_ = std::make_shared<contender>(shared_from_this());
        s->retain_keepalive();
        current_->start();
    }
}

void lock_queue::grant()
{
    auto it = waiters_.begin();
    auto w = std::move(it->second);
    waiters_.erase(it);
    if (w.timer) w.timer->cancel();
    holder_active_ = true;
    ++holder_gen_;
    fencing_token token{current_->zxid(), grants_++};
    s->post_completion(std::move(w.h), error_code{},
                       guard(shared_from_this(), holder_gen_, current_->node(), token));
    fail_one_looks();  // the lock is taken now
    arm_loss_clock();
}

void lock_queue::fail_one_looks()
{
    for (auto it = waiters_.begin(); it != waiters_.end();) {
        if (!it->second.one_look) {
            ++it;
            continue;
        }
        s->post_completion(std::move(it->second.h), error_code(zklock::error::timeout), guard{});
        it = waiters_.erase(it);
    }
}

void lock_queue::release(std::uint64_t holder, std::shared_ptr<pending_release> done)
{
    auto finish = [&](error_code ec) {
        if (done) done->complete(*s, ec);
    };
    if (!holder_active_ || holder != holder_gen_) {
        finish(zklock::error::not_held);
        return;
    }
    holder_active_ = false;
    for (auto& [id, lw] : std::exchange(lost_waiters_, {}))
        s->post_completion(std::move(lw), error_code(asio::error::operation_aborted), error_code{});
    const auto lost = is_final(s->state) ? final_error(s->state) : lost_reason_;
    lost_reason_ = {};
    // Hand off locally only on a live connection: a disconnected session may already have lost the node.
    const bool keep = !lost && holds_node() && s->state == session_state::connected;
    if (keep && !waiters_.empty() && grants_ <= opts.local_handoff_limit) {
        grant();  // cohort hand-off: the node stays, the next local coroutine holds it
        finish({});
        return;
    }
    grace_.cancel();
    if (keep && waiters_.empty() && opts.linger && !others_waiting_) {
        finish({});  // the node lingers for our next acquire
        return;
    }
    auto c = drop_contender();
    if (lost) {
        finish(lost);
        if (c) c->release({});
    } else if (c && done) {
        c->release([s = s, done](error_code ec) { done->complete(*s, ec); });
    } else if (c) {
        c->release({});
    } else {
        finish({});
    }
    // Waiters left: a new node, whose create queues behind the delete in this session's FIFO.
    advance();
}

void lock_queue::wait_lost(std::uint64_t id, std::uint64_t holder, handler<error_code> h)
{
    if (!holder_active_ || holder != holder_gen_) {
        s->post_completion(std::move(h), error_code(asio::error::operation_aborted), error_code{});
        return;
    }
    if (auto why = lost(holder)) {
        s->post_completion(std::move(h), error_code{}, why);
        return;
    }
    lost_waiters_.emplace(id, std::move(h));
}

void lock_queue::finish_lost_waiter(std::uint64_t id)
{
    if (auto it = lost_waiters_.find(id); it != lost_waiters_.end()) {
        s->post_completion(std::move(it->second), error_code(asio::error::operation_aborted), error_code{});
        lost_waiters_.erase(it);
    }
}

void lock_queue::on_acquired(const contender* c)
{
    if (c != current_.get()) return;
    grants_ = 0;
    others_waiting_ = false;
    if (waiters_.empty()) {
        drop_contender()->release({});
        return;
    }
    advance();
}

void lock_queue::on_waiting(const contender* c)
{
    if (c != current_.get()) return;
    fail_one_looks();  // one-look waiters (zero timeout) give up as soon as someone is ahead
    maybe_abandon();
}

void lock_queue::on_failed(const contender* c, error_code ec)
{
    if (c != current_.get()) return;
    drop_contender();
    fail_all(ec);
}

void lock_queue::on_lost(const contender* c, error_code ec)
{
    if (c != current_.get()) return;
    if (holder_active_) return report_lost(ec);
    drop_contender()->release({});
    advance();
}

void lock_queue::on_others_waiting(const contender* c)
{
    if (c != current_.get()) return;
    others_waiting_ = true;
    // A lingering node (held, but by none of our coroutines) goes at once.
    if (!holder_active_ && waiters_.empty()) drop_contender()->release({});
}

void lock_queue::report_lost(error_code ec)
{
    // A definitive reason replaces "uncertain", and the session's end replaces the deletion of our node
    // that the server made when it expired the session; otherwise the first reason stands.
    const bool session_end = ec == zklock::error::session_expired || ec == zklock::error::session_closed;
    if (lost_reason_ && !(lost_reason_ == zklock::error::ownership_uncertain && ec != lost_reason_) &&
        !(lost_reason_ == zklock::error::lock_node_deleted && session_end))
        return;
    lost_reason_ = ec;
    grace_.cancel();
    for (auto& [id, lw] : std::exchange(lost_waiters_, {})) s->post_completion(std::move(lw), error_code{}, ec);
}

void lock_queue::on_session_state(session_state st)
{
    if (is_final(st)) {
        const error_code ec = final_error(st);
        grace_.cancel();
        if (holder_active_) report_lost(ec);
        if (auto c = drop_contender()) c->abandon();
        fail_all(ec);
        return;
    }
    // Reconnected: a waiter may have been kept from a node that became ours while disconnected. (While
    // disconnected nothing is done here: the loss clock runs from the newest answer either way.)
    if (st == session_state::connected) advance();
}

// The loss clock. ZooKeeper touched the session no earlier than the send time of the newest request it
// answered; it cannot expire the session (and let another client in) sooner than the session timeout
// after that touch, less the forwarding delay in an ensemble and the keepalive gap (docs/DESIGN.md,
// "Loss timing"). The holder is told ownership_uncertain once loss_grace has passed since that send
// time without a newer answer, connected or not: a silent follower looks connected for 2/3 T.
void lock_queue::arm_loss_clock()
{
    if (lost_reason_ || !holder_active_) return;
    grace_.expires_at(s->last_answered_send() + s->loss_grace());
    // Whoever holds the lock when the grace runs out is told, even if it changed hands meanwhile.
    grace_.async_wait([q = weak_from_this()](error_code ec) {
        auto self = q.lock();
        if (!self || ec || !self->holder_active_) return;
        if (std::chrono::steady_clock::now() >= self->s->last_answered_send() + self->s->loss_grace())
            self->report_lost(zklock::error::ownership_uncertain);
        else
            self->arm_loss_clock();  // a newer answer came: count from it
    });
}

// --- Entry points -------------------------------------------------------------------------------
std::shared_ptr<lock_queue> lock_queue_for(const std::shared_ptr<session_impl>& s, const std::string& path,
                                           const mutex_options& options, error_code& refusal)
{
    if (!s) {
        refusal = zklock::error::no_session;
        return nullptr;
    }
    auto& slot = s->recipes[recipe_key(path)];
    if (auto existing = std::static_pointer_cast<lock_queue>(slot.lock())) {
        if (existing->opts == options) return existing;
        refusal = zklock::error::conflicting_options;
        return nullptr;
    }
    auto q = std::make_shared<lock_queue>(s, path, options);
    q->subscribe();
    slot = q;
    return q;
}

void refuse_acquire(error_code why, handler<guard> h) { complete_without_session(std::move(h), why, guard{}); }

namespace {
// Binds the handler's cancellation slot here, on the caller's thread: that is where its owner emits the
// signal, and a slot may only be touched there. The cancellation hops onto the session's executor, and
// the queue is reached (weakly) only there.
template <class... Args, class Fn>
void bind_cancellation(handler<Args...>& h, const std::shared_ptr<lock_queue>& q, Fn on_cancel)
{
    if (auto slot = asio::get_associated_cancellation_slot(h); slot.is_connected())
        slot.assign([w = std::weak_ptr<lock_queue>(q), ex = q->s->ex, on_cancel](asio::cancellation_type) {
            asio::post(ex, [w, on_cancel] {
                if (auto self = w.lock()) on_cancel(*self);
            });
        });
}
}  // namespace

// The entry points hop onto the session's executor (inline when already there), so that callers on other
// threads or strands are safe. The queue is moved into the hop: the last reference to it is never dropped
// on the caller's thread.
void async_acquire(std::shared_ptr<lock_queue> q, deadline d, handler<guard> h)
{
    const auto id = q->new_id();
    bind_cancellation(h, q, [id](lock_queue& self) { self.finish_waiter(id, asio::error::operation_aborted); });
    auto ex = q->s->ex;
    asio::dispatch(ex, [q = std::move(q), id, d, h = std::move(h)]() mutable { q->acquire(id, d, std::move(h)); });
}

void async_release(std::shared_ptr<lock_queue> q, std::uint64_t holder, handler<> h)
{
    if (!q) {
        complete_without_session(std::move(h), error_code(zklock::error::not_held));
        return;
    }
    auto ex = q->s->ex;
    auto slot = asio::get_associated_cancellation_slot(h);
    auto done = std::make_shared<pending_release>(std::move(h));
    // Cancellation completes the release at once; the node is deleted in the background all the same.
    if (slot.is_connected())
        slot.assign([w = std::weak_ptr<pending_release>(done), s = std::weak_ptr<session_impl>(q->s), ex](asio::cancellation_type) {
            asio::post(ex, [w, s] {
                auto d = w.lock();
                auto ss = s.lock();
                if (d && ss) d->complete(*ss, asio::error::operation_aborted);
            });
        });
    asio::dispatch(ex, [q = std::move(q), holder, done = std::move(done)]() mutable { q->release(holder, std::move(done)); });
}

void async_wait_lost(std::shared_ptr<lock_queue> q, std::uint64_t holder, handler<error_code> h)
{
    if (!q) {
        complete_without_session(std::move(h), error_code(zklock::error::not_held), error_code{});
        return;
    }
    const auto id = q->new_id();
    bind_cancellation(h, q, [id](lock_queue& self) { self.finish_lost_waiter(id); });
    auto ex = q->s->ex;
    asio::dispatch(ex, [q = std::move(q), id, holder, h = std::move(h)]() mutable {
        q->wait_lost(id, holder, std::move(h));
    });
}

void release_detached(std::shared_ptr<lock_queue> q, std::uint64_t holder) noexcept
{
    try {
        auto ex = q->s->ex;
        asio::dispatch(ex, [q = std::move(q), holder] { q->release(holder, nullptr); });
    } catch (...) {  // allocation failure in a destructor: the session's end still frees the node
    }
}

void drop_on_executor(std::shared_ptr<lock_queue> q) noexcept
{
    if (!q) return;
    try {
        auto ex = q->s->ex;
        asio::dispatch(ex, [q = std::move(q)]() mutable { q.reset(); });
    } catch (...) {
    }
}

error_code lost_reason(const std::shared_ptr<lock_queue>& q, std::uint64_t holder) noexcept
{
    return q->lost(holder);
}

}  // namespace zklock::detail
