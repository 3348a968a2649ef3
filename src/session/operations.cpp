// The typed operations: each hands one request to the client beneath the session (client_port.hpp) and
// converts its answer; and the watches that reads arm.
#include "core/effects.hpp"
#include "session_impl.hpp"

#include <cstdint>
#include <type_traits>

namespace zklock::detail {
namespace {

// --- Requests -----------------------------------------------------------------------------------
template <class... Args>
class request final : public request_base {
public:
    explicit request(const char* what)
    {
        kind = what;
        sent_at = zklock::clock::now();  // before the client sends it: never later than the touch
    }
    handler<Args...> h;

    void answer(client_answer&& a) override
    {
        using result = std::tuple<Args...>;
        if constexpr (std::is_same_v<result, std::tuple<std::optional<stat>>>) {  // exists
            // An exists watch is set whether or not the node exists (it then waits for its creation).
            const bool no_node = a.ec == zk_errc::no_node;
            if (owner) owner->settle_watch(watch, !a.ec || no_node);
            if (no_node) complete({}, std::nullopt);
            else complete(a.ec, a.ec ? std::nullopt : std::optional<stat>(a.st));
        } else {
            if (owner) owner->settle_watch(watch, !a.ec);
            if constexpr (std::is_same_v<result, std::tuple<>>) complete(a.ec);  // remove, sync
            else if constexpr (std::is_same_v<result, std::tuple<std::string, stat>>)  // create, get_data
                complete(a.ec, std::move(a.text), a.st);
            else if constexpr (std::is_same_v<result, std::tuple<std::vector<std::string>, stat>>)
                complete(a.ec, std::move(a.children), a.st);
            else if constexpr (std::is_same_v<result, std::tuple<stat>>) complete(a.ec, a.st);  // set_data
            else complete(a.ec, std::move(a.results));  // multi
        }
    }

    void complete(error_code ec, Args... args)
    {
        if (!owner) return;
        if (const auto fault = owner->answer_fault(*this); fault != session_impl::fault_mode::drop_after_send) {
            // A planned fault: the answer (or, lost, connection_loss) once the session has noticed the
            // dropped connection, as the C client reports the requests a broken connection took with it.
            if (fault == session_impl::fault_mode::lose_answer) {
                ec = zk_errc::connection_loss;
                ((args = Args{}), ...);
            }
            auto held = [o = owner, h = std::move(h), ec, ... a = std::move(args)]() mutable {
                o->post_completion(std::move(h), ec, std::move(a)...);
            };
            owner->hold_answer([held = std::make_shared<decltype(held)>(std::move(held))] { (*held)(); });
            return;
        }
        owner->post_completion(std::move(h), ec, std::move(args)...);
    }
    // Not an answer: a planned fault waits for the request's real answer.
    void fail(error_code ec) override
    {
        if (owner) owner->post_completion(std::move(h), ec, Args{}...);
    }
    void bind_cancellation() override;
};

// A per-operation cancellation abandons the wait; the client still answers the request later. The
// handler runs where the signal is emitted: it hops onto the session's executor, where the slot names the
// request by id, so a late or repeated signal finds nothing instead of a freed request.
template <class... Args>
void request<Args...>::bind_cancellation()
{
    auto slot = asio::get_associated_cancellation_slot(h);
    if (slot.is_connected())
        slot.assign([w = std::weak_ptr<session_impl>(owner), ex = owner->ex, rid = id](asio::cancellation_type t) {
            asio::post(ex, [w, rid, t] {
                if (auto s = w.lock()) s->cancel_request(rid, t);
            });
        });
}

/// Whether a request of `kind` changes the server (so that a cancellation cannot take it back).
op_nature nature_of(std::string_view kind) noexcept
{
    const bool write = kind == "create" || kind == "remove" || kind == "set_data" || kind == "multi";
    return write ? op_nature::write : op_nature::undoable;
}

}  // namespace

// --- The request skeleton -----------------------------------------------------------------------
void answered(request_base* r, client_answer&& a)
{
    std::unique_ptr<request_base> owned(r);
    if (owned->owner) owned->owner->finished(owned.get(), a.ec);
    owned->answer(std::move(a));
}

void session_impl::track(request_base* r)
{
    r->id = next_request_++;
    inflight_.emplace(r->id, r);
    ++stats.requests;
    ++kind_stats(r->kind).sent;
}

// Every request here has left: it was handed to the C client when it was made, and the client cannot take
// it back (it sends it as soon as it is connected). So a write ignores a total cancellation.
void session_impl::cancel_request(std::uint64_t rid, asio::cancellation_type type)
{
    auto it = inflight_.find(rid);
    if (it == inflight_.end()) return;
    request_base& r = *it->second;
    if (on_cancellation(static_cast<unsigned>(type), nature_of(r.kind), true) == cancel_outcome::ignore) return;
    // A cancelled read leaves its watch unarmed, whenever its answer comes.
    if (r.watch) drop_watch(r.watch);
    r.fail(asio::error::operation_aborted);
}

void session_impl::submit(request_base* r, client_call call)
{
    cork();
    if (auto ec = port_->submit(std::move(call), r)) {  // refused: nothing was sent, and r is still ours
        std::unique_ptr<request_base> owned(r);
        settle_watch(r->watch, false);
        // The handle learnt of its end before our state did (the session event is still on its way):
        // report the end itself, not the C client's "invalid state". (After a renewal the new session is
        // still opening and refusal() would say not_connected: the request met the expired session.)
        if (ec == zk_errc::invalid_state) {
            const bool expired = port_->state() == session_state::expired;
            if (leave_if_unrecoverable()) ec = expired ? error_code(zklock::error::session_expired) : refusal();
        }
        refused_at_submit = true;
        owned->fail(ec);
        notice_silent_close();
        return;
    }
    track(r);
    r->bind_cancellation();
    notice_silent_close();
    kick();
    if (!faults_.empty())
        if (auto f = take_fault(r->kind, false)) {  // the request is on the wire (the st client flushes at once)
            drop_connection();
            if (f->then) f->then();
        }
}

template <class... Args>
void session_impl::start_request(const char* kind, error_code refused, handler<Args...> h, client_call call, watch* w)
{
    if (refused) {
        post_completion(std::move(h), refused, Args{}...);
        return;
    }
    // The writes held back go first: the session's order (at most one of the two is held).
    if (!removes_.empty()) send_removes();
    if (!creates_.empty()) send_creates();
    auto* r = new request<Args...>(kind);
    r->owner = shared_from_this();
    r->h = std::move(h);
    if (w) {
        const auto wk = call.what == client_call::verb::get_children ? watch_kind::child : watch_kind::data;
        r->watch = prepare_watch(w, call.path, wk);
        call.watch = r->watch->id;
    }
    submit(r, std::move(call));
}

// --- The operations -----------------------------------------------------------------------------
void session_impl::create_batched(op::create c, std::string predicted, handler<std::string, stat> h)
{
    if (auto ec = refusal(c.path, is_sequential(c.mode)); ec || asio::get_associated_cancellation_slot(h).is_connected())
        return create(std::move(c), std::move(h));
    hold_create({std::move(c), std::move(predicted), std::move(h)});
}

void session_impl::create_queued(op::create c, handler<std::string, stat> h)
{
    if (removes_.empty() || removes_.size() >= max_writes_in_one_multi / 2 || refusal(c.path, is_sequential(c.mode)) ||
        asio::get_associated_cancellation_slot(h).is_connected())
        return create(std::move(c), std::move(h));
    hold_create({std::move(c), std::string{}, std::move(h), true});
}

void session_impl::hold_create(held_create c)
{
    // The deletes held before it go first: in the same multi (a dropped guard's delete and the next
    // create of its lock, one transaction), unless there are too many of them to share one.
    if (!removes_.empty()) {
        if (removes_.size() < max_writes_in_one_multi / 2) removes_ahead_ = std::exchange(removes_, {});
        else send_removes();
    }
    creates_.push_back(std::move(c));
    if (creates_.size() == 1) asio::post(ex, [self = shared_from_this()] { self->send_creates(); });
}

// One operation's own error (no node, no parent, a version, no auth) fails a multi as a whole; not a
// lost connection, nor the session's end.
bool session_impl::failed_for_one_write(error_code ec) const
{
    return ec && ec.category() == zookeeper_category() && !is_retryable(ec) && !refusal();
}

// One multi of creates (after the deletes held before them) and the reads of their predicted paths behind
// it: a create is answered once the multi and its read (if any) both have been.
struct session_impl::create_batch {
    std::vector<held_remove> removes;
    std::vector<held_create> creates;
    std::vector<int> awaited;                // answers still to come, per create
    std::vector<std::optional<stat>> found;  // what each predicted path's read found
    std::vector<std::string> paths;          // the multi's answer
    error_code ec;
    bool again = false;  // one create's own error failed the multi: each again, alone
};

void session_impl::send_creates()
{
    auto held = std::exchange(creates_, {});
    auto ahead = std::exchange(removes_ahead_, {});
    if (held.empty()) return;
    // A create alone gets its stat from its own answer; one behind deletes goes with them if its name
    // can be read behind the multi, or if its caller can wait for the stat.
    if (held.size() == 1 && (ahead.empty() || (held[0].predicted.empty() && !held[0].queued))) {
        if (!ahead.empty()) {
            removes_ = std::move(ahead);
            send_removes();
        }
        return create(std::move(held[0].request), std::move(held[0].h));
    }
    for (std::size_t from = 0, to = 0; from < held.size(); from = to) {
        to = std::min(held.size(), from + max_writes_in_one_multi - ahead.size());
        auto b = std::make_shared<create_batch>();
        std::vector<multi_op> ops;
        b->removes = std::exchange(ahead, {});  // the first multi only
        for (const auto& r : b->removes) ops.push_back(op::remove{r.path, r.version});
        for (auto i = from; i < to; ++i) {
            ops.push_back(held[i].request);
            b->creates.push_back(std::move(held[i]));
        }
        b->awaited.assign(b->creates.size(), 1);
        b->found.resize(b->creates.size());
        auto answered = [self = shared_from_this(), b](std::size_t i) {
            if (--b->awaited[i] > 0) return;
            auto& c = b->creates[i];
            if (b->again) return self->create(std::move(c.request), std::move(c.h));
            // Called at once, not posted: the handlers are the recipes' own (the callers of create_batched
            // and create_queued), with no cancellation slot, and this runs on the session's executor, out
            // of the C client. A listing sent behind a create is answered in the same read of the socket,
            // and its handler, posted then, must not run before the create's.
            if (b->ec || i >= b->paths.size()) return std::move(c.h)(b->ec, std::string{}, stat{});
            // The read found the node only if the create made it under the predicted name.
            const bool read_it = b->found[i] && b->paths[i] == c.predicted;
            std::move(c.h)(error_code{}, std::move(b->paths[i]), read_it ? *b->found[i] : stat{});
        };
        // Its kind is "create": a fault planned for a create (testing/faults.hpp) hits the batch.
        multi_as("create", std::move(ops), [self = shared_from_this(), b, answered](error_code ec, std::vector<multi_result> results) {
            b->ec = ec;
            b->again = self->failed_for_one_write(ec);
            for (auto& r : b->removes) {  // answered before the creates: the sequence proof needs that order
                if (b->again) self->remove_now(std::move(r.path), r.version, std::move(r.h));
                else if (r.own) std::move(r.h)(ec);
                else self->post_completion(std::move(r.h), ec);
            }
            for (auto i = b->removes.size(); i < results.size(); ++i) b->paths.push_back(std::move(results[i].path));
            for (std::size_t i = 0; i < b->creates.size(); ++i) answered(i);
        });
        if (!b->removes.empty()) newest_removes_ = next_request_ - 1;  // later deletes wait for this one
        // The reads go in the same segment, and the server answers them after the multi: the node's stat
        // costs no round trip of its own.
        for (std::size_t i = 0; i < b->creates.size(); ++i) {
            if (b->creates[i].predicted.empty()) continue;
            ++b->awaited[i];
            exists(b->creates[i].predicted, nullptr, [b, answered, i](error_code ec, std::optional<stat> st) {
                if (!ec) b->found[i] = st;
                answered(i);
            });
        }
    }
}

void session_impl::create(op::create c, handler<std::string, stat> h)
{
    auto refused = refusal(c.path, is_sequential(c.mode));
    client_call call{client_call::verb::create, std::move(c.path), std::move(c.data)};
    call.mode = c.mode;
    call.access = std::move(c.acl);
    start_request("create", refused, std::move(h), std::move(call));
}

void session_impl::remove(std::string path, int version, handler<> h, bool own)
{
    if (auto ec = refusal(path); ec || asio::get_associated_cancellation_slot(h).is_connected())
        return remove_now(std::move(path), version, std::move(h));
    if (!creates_.empty()) send_creates();  // the creates held before it go first
    removes_.push_back({std::move(path), version, std::move(h), own});
    // While earlier deletes are out, finished() sends these when they are answered.
    if (removes_.size() == 1 && !removes_out())
        asio::post(ex, [self = shared_from_this()] { self->send_removes(); });
}

void session_impl::send_removes()
{
    auto held = std::exchange(removes_, {});
    if (held.empty()) return;
    // The id the last request made below gets (a refused request takes none: the id then names an earlier
    // request, whose answer sends the next deletes just as well).
    struct note_newest {
        session_impl& s;
        ~note_newest() { s.newest_removes_ = s.next_request_ - 1; }
    } newest{*this};
    if (held.size() == 1) return remove_now(std::move(held[0].path), held[0].version, std::move(held[0].h));
    for (std::size_t from = 0; from < held.size(); from += max_writes_in_one_multi) {
        const auto to = std::min(held.size(), from + max_writes_in_one_multi);
        std::vector<multi_op> ops;
        std::vector<held_remove> batch;
        for (auto i = from; i < to; ++i) {
            ops.push_back(op::remove{held[i].path, held[i].version});
            batch.push_back(std::move(held[i]));
        }
        // Its kind is "remove": a fault planned for a delete (testing/faults.hpp) hits the batch.
        multi_as("remove", std::move(ops), [self = shared_from_this(), batch = std::move(batch)](
                                               error_code ec, std::vector<multi_result>) mutable {
            const bool ones_own = self->failed_for_one_write(ec);
            for (auto& r : batch) {
                if (ones_own) self->remove_now(std::move(r.path), r.version, std::move(r.h));
                else self->post_completion(std::move(r.h), ec);
            }
        });
    }
}

void session_impl::remove_now(std::string path, int version, handler<> h)
{
    auto refused = refusal(path);
    client_call call{client_call::verb::remove, std::move(path)};
    call.version = version;
    start_request("remove", refused, std::move(h), std::move(call));
}

void session_impl::sync(std::string path, handler<> h)
{
    auto refused = refusal(path);
    start_request("sync", refused, std::move(h), {client_call::verb::sync, std::move(path)});
}

void session_impl::exists(std::string path, watch* w, handler<std::optional<stat>> h)
{
    auto refused = refusal(path);
    start_request("exists", refused, std::move(h), {client_call::verb::exists, std::move(path)}, w);
}

void session_impl::get_data(std::string path, watch* w, handler<std::string, stat> h)
{
    auto refused = refusal(path);
    start_request("get_data", refused, std::move(h), {client_call::verb::get_data, std::move(path)}, w);
}

void session_impl::get_config(watch* w, handler<std::string, stat> h)
{
    // Read outside the chroot (zoo_awgetconfig); the path names the watch.
    start_request("get_config", refusal(), std::move(h), {client_call::verb::get_config, "/zookeeper/config"}, w);
}

void session_impl::get_children(std::string path, watch* w, handler<std::vector<std::string>, stat> h)
{
    auto refused = refusal(path);
    start_request("get_children", refused, std::move(h), {client_call::verb::get_children, std::move(path)}, w);
}

void session_impl::set_data(std::string path, std::string data, int version, handler<stat> h)
{
    auto refused = refusal(path);
    client_call call{client_call::verb::set_data, std::move(path), std::move(data)};
    call.version = version;
    start_request("set_data", refused, std::move(h), std::move(call));
}

void session_impl::multi(std::vector<multi_op> ops, handler<std::vector<multi_result>> h)
{
    multi_as("multi", std::move(ops), std::move(h));
}

void session_impl::multi_as(const char* kind, std::vector<multi_op> ops, handler<std::vector<multi_result>> h)
{
    error_code ec = refusal();
    for (const auto& o : ops) {
        if (ec) break;
        std::visit(
            [&](const auto& x) {
                bool seq = false;
                if constexpr (std::is_same_v<std::decay_t<decltype(x)>, op::create>) seq = is_sequential(x.mode);
                ec = refusal(x.path, seq);
            },
            o);
    }
    if (!ec && ops.empty()) {
        post_completion(std::move(h), error_code{}, std::vector<multi_result>{});
        return;
    }
    client_call call{client_call::verb::multi};
    call.ops = std::move(ops);
    start_request(kind, ec, std::move(h), std::move(call));
}

// --- Watches ------------------------------------------------------------------------------------
std::shared_ptr<watch_state> session_impl::prepare_watch(watch* w, const std::string& path, watch_kind kind)
{
    if (!w) return nullptr;
    auto st = std::make_shared<watch_state>();
    st->session = weak_from_this();
    st->id = next_watch_id_++;
    st->path = path;
    st->kind = kind;
    watches_.emplace(st->id, st);
    *w = watch{};  // drops whatever it watched before
    w->state_ = st;
    return st;
}

void session_impl::settle_watch(const std::shared_ptr<watch_state>& w, bool armed)
{
    if (!w || w->at != watch_state::phase::registering) return;
    if (armed) {
        w->at = watch_state::phase::armed;
        return;
    }
    // The read failed, so the C client did not keep the watcher. A wait that began while the read was out
    // ends as a wait on a dropped watch does; left alone, it would wait for an event that cannot come.
    w->at = watch_state::phase::dropped;
    watches_.erase(w->id);
    if (w->waiter) post_completion(std::move(w->waiter), error_code(asio::error::operation_aborted), watch_event{});
}

void session_impl::on_watch_fired(std::uint64_t wid, watch_event_type type, const char* path)
{
    auto it = watches_.find(wid);
    if (it == watches_.end()) return;
    auto w = it->second;
    watches_.erase(it);
    ++stats.watch_events;
    w->at = watch_state::phase::fired;
    w->event.path = path ? path : "";
    w->event.type = type;
    if (w->waiter) post_completion(std::move(w->waiter), error_code{}, w->event);
}

void session_impl::wait_watch(const std::shared_ptr<watch_state>& w, handler<watch_event> h)
{
    switch (w->at) {
    case watch_state::phase::fired: post_completion(std::move(h), error_code{}, w->event); return;
    case watch_state::phase::failed: post_completion(std::move(h), w->error, watch_event{}); return;
    case watch_state::phase::dropped:
        post_completion(std::move(h), error_code(asio::error::operation_aborted), watch_event{});
        return;
    default: break;
    }
    if (w->waiter) post_completion(std::move(w->waiter), error_code(asio::error::operation_aborted), watch_event{});
    w->waiter = std::move(h);
    const auto seq = ++w->waiter_seq;
    // Any cancellation type ends the wait; the watch stays armed. The handler hops onto the executor first.
    if (auto slot = asio::get_associated_cancellation_slot(w->waiter); slot.is_connected())
        slot.assign([wp = std::weak_ptr<watch_state>(w), home = ex, seq](asio::cancellation_type) {
            asio::post(home, [wp, seq] {
                auto st = wp.lock();
                if (!st || st->waiter_seq != seq) return;  // a later waiter replaced the one this slot was for
                if (auto s = st->session.lock())
                    s->post_completion(std::move(st->waiter), error_code(asio::error::operation_aborted), watch_event{});
            });
        });
}

void session_impl::drop_watch(const std::shared_ptr<watch_state>& w)
{
    const bool live = w->at == watch_state::phase::armed || w->at == watch_state::phase::registering;
    w->at = watch_state::phase::dropped;
    if (w->waiter) post_completion(std::move(w->waiter), error_code(asio::error::operation_aborted), watch_event{});
    if (!live || !watches_.erase(w->id) || is_final(state)) return;
    port_->forget_watch(w->path, w->kind, w->id);
}

}  // namespace zklock::detail
