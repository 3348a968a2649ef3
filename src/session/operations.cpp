// The typed operations: each hands one request to the C client and converts its completion; and the
// watches that reads arm.
#include "c_client.hpp"
#include "core/effects.hpp"

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
        sent_at = zklock::clock::now();  // before the C client sends it: never later than the touch
    }
    handler<Args...> h;
    // zoo_amulti keeps pointers into these until its completion.
    std::vector<zoo_op_t> ops;
    std::vector<zoo_op_result_t> results;
    std::vector<std::string> op_paths;
    std::vector<std::vector<char>> path_buffers;
    std::vector<struct Stat> stats;  // where a set_data's stat is written
    std::vector<c_acl> acls;

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
};

/// Takes back the request a completion was given, with the C client's return code.
template <class Request>
std::unique_ptr<Request> take(const void* data, int rc)
{
    std::unique_ptr<Request> r(static_cast<Request*>(const_cast<void*>(data)));
    if (r->owner) r->owner->finished(r.get(), rc);
    return r;
}

// A per-operation cancellation abandons the wait; the C client still completes the request later. The
// handler runs where the signal is emitted: it hops onto the session's executor, where the slot names the
// request by id, so a late or repeated signal finds nothing instead of a freed request.
template <class Request>
void bind_cancellation(Request* r)
{
    auto slot = asio::get_associated_cancellation_slot(r->h);
    if (slot.is_connected())
        slot.assign([w = std::weak_ptr<session_impl>(r->owner), ex = r->owner->ex, id = r->id](asio::cancellation_type t) {
            asio::post(ex, [w, id, t] {
                if (auto s = w.lock()) s->cancel_request(id, t);
            });
        });
}

/// Whether a request of `kind` changes the server (so that a cancellation cannot take it back).
op_nature nature_of(std::string_view kind) noexcept
{
    const bool write = kind == "create" || kind == "remove" || kind == "set_data" || kind == "multi";
    return write ? op_nature::write : op_nature::undoable;
}

void node_watcher(zhandle_t* zh, int type, int, const char* path, void* ctx)
{
    // Session events reach every watcher; the session watcher handles them once.
    if (type == ZOO_SESSION_EVENT) return;
    auto* s = static_cast<session_impl*>(const_cast<void*>(zoo_get_context(zh)));
    if (s) s->on_watch_fired(reinterpret_cast<std::uintptr_t>(ctx), type, path);
}

/// The watcher a read that may arm `w` gives the C client (none without a watch), and the watcher's
/// context: the watch's id in the session's table, never a pointer.
watcher_fn watcher_for(const watch_state* w) noexcept { return w ? node_watcher : nullptr; }
void* watcher_context(const watch_state* w) noexcept
{
    return w ? reinterpret_cast<void*>(static_cast<std::uintptr_t>(w->id)) : nullptr;
}

}  // namespace

// --- The request skeleton -----------------------------------------------------------------------
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

template <class Request>
bool session_impl::submit(Request* r, int rc)
{
    if (rc != ZOK) {  // the C client refused the request; its completion will never run
        std::unique_ptr<Request> owned(r);
        error_code ec = zk_error(rc);
        // The handle learnt of its end before our state did (the session event is still on its way):
        // report the end itself, not the C client's "invalid state". (After a renewal the new session is
        // still opening and refusal() would say not_connected: the request met the expired session.)
        if (rc == ZINVALIDSTATE) {
            const bool expired = zoo_state(zh_) == ZOO_EXPIRED_SESSION_STATE;
            if (leave_if_unrecoverable()) ec = expired ? error_code(zklock::error::session_expired) : refusal();
        }
        refused_at_submit = true;
        owned->fail(ec);
        notice_silent_close();
        return false;
    }
    track(r);
    bind_cancellation(r);
    notice_silent_close();
    kick();
    if (!faults_.empty())
        if (auto f = take_fault(r->kind, false)) {  // the request is on the wire (the st client flushes at once)
            drop_connection();
            if (f->then) f->then();
        }
    return true;
}

template <class Call, class... Args>
void session_impl::start_request(const char* kind, error_code refused, handler<Args...> h, watch_spec ws, Call call)
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
    if (ws.w) r->watch = prepare_watch(ws.w, *ws.path, ws.kind);
    cork();
    int rc;
    {
        c_call scope(log.get());
        rc = call(*r);
    }
    if (rc != ZOK) settle_watch(r->watch, false);
    submit(r, rc);
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
    using req_t = request<std::string, stat>;
    start_request("create", refusal(c.path, is_sequential(c.mode)), std::move(h), {}, [&](req_t& r) {
        c_acl a(c.acl);
        return zoo_acreate2(zh_, c.path.c_str(), c.data.data(), static_cast<int>(c.data.size()), &a.vec,
                            to_zk_mode(c.mode),
                            [](int rc2, const char* value, const struct Stat* st, const void* data) {
                                auto req = take<req_t>(data, rc2);
                                req->complete(zk_error(rc2), rc2 == ZOK && value ? std::string(value) : std::string{},
                                              to_stat(st));
                            },
                            &r);
    });
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
    using req_t = request<>;
    start_request("remove", refusal(path), std::move(h), {}, [&](req_t& r) {
        return zoo_adelete(zh_, path.c_str(), version,
                           [](int rc2, const void* data) { take<req_t>(data, rc2)->complete(zk_error(rc2)); }, &r);
    });
}

void session_impl::sync(std::string path, handler<> h)
{
    using req_t = request<>;
    start_request("sync", refusal(path), std::move(h), {}, [&](req_t& r) {
        return zoo_async(zh_, path.c_str(),
                         [](int rc2, const char*, const void* data) { take<req_t>(data, rc2)->complete(zk_error(rc2)); },
                         &r);
    });
}

void session_impl::exists(std::string path, watch* w, handler<std::optional<stat>> h)
{
    using req_t = request<std::optional<stat>>;
    start_request("exists", refusal(path), std::move(h), {w, ZWATCHTYPE_DATA, &path}, [&](req_t& r) {
        return zoo_awexists(
            zh_, path.c_str(), watcher_for(r.watch.get()), watcher_context(r.watch.get()),
            [](int rc2, const struct Stat* st, const void* data) {
                auto req = take<req_t>(data, rc2);
                // An exists watch is set whether or not the node exists (it then waits for its creation).
                if (req->owner) req->owner->settle_watch(req->watch, rc2 == ZOK || rc2 == ZNONODE);
                if (rc2 == ZNONODE) req->complete({}, std::nullopt);
                else req->complete(zk_error(rc2), rc2 == ZOK ? std::optional<stat>(to_stat(st)) : std::nullopt);
            },
            &r);
    });
}

namespace {
using data_request = request<std::string, stat>;
}  // namespace

void session_impl::data_answered(int rc, const char* value, int len, const struct Stat* st, const void* data)
{
    auto req = take<data_request>(data, rc);
    if (req->owner) req->owner->settle_watch(req->watch, rc == ZOK);
    req->complete(zk_error(rc),
                  rc == ZOK && value && len > 0 ? std::string(value, static_cast<std::size_t>(len)) : std::string{},
                  to_stat(st));
}

void session_impl::get_data(std::string path, watch* w, handler<std::string, stat> h)
{
    start_request("get_data", refusal(path), std::move(h), {w, ZWATCHTYPE_DATA, &path}, [&](data_request& r) {
        return zoo_awget(zh_, path.c_str(), watcher_for(r.watch.get()), watcher_context(r.watch.get()), data_answered, &r);
    });
}

void session_impl::get_config(watch* w, handler<std::string, stat> h)
{
    // zoo_awgetconfig reads /zookeeper/config outside the chroot.
    static const std::string path = "/zookeeper/config";
    start_request("get_config", refusal(), std::move(h), {w, ZWATCHTYPE_DATA, &path}, [&](data_request& r) {
        return zoo_awgetconfig(zh_, watcher_for(r.watch.get()), watcher_context(r.watch.get()), data_answered, &r);
    });
}

void session_impl::get_children(std::string path, watch* w, handler<std::vector<std::string>, stat> h)
{
    using req_t = request<std::vector<std::string>, stat>;
    start_request("get_children", refusal(path), std::move(h), {w, ZWATCHTYPE_CHILD, &path}, [&](req_t& r) {
        return zoo_awget_children2(
            zh_, path.c_str(), watcher_for(r.watch.get()), watcher_context(r.watch.get()),
            [](int rc2, const struct String_vector* names, const struct Stat* st, const void* data) {
                auto req = take<req_t>(data, rc2);
                if (req->owner) req->owner->settle_watch(req->watch, rc2 == ZOK);
                std::vector<std::string> out;
                if (rc2 == ZOK && names) {
                    out.reserve(static_cast<std::size_t>(names->count));
                    for (int i = 0; i < names->count; ++i) out.emplace_back(names->data[i]);
                }
                req->complete(zk_error(rc2), std::move(out), to_stat(st));
            },
            &r);
    });
}

void session_impl::set_data(std::string path, std::string data, int version, handler<stat> h)
{
    using req_t = request<stat>;
    start_request("set_data", refusal(path), std::move(h), {}, [&](req_t& r) {
        return zoo_aset(zh_, path.c_str(), data.data(), static_cast<int>(data.size()), version,
                        [](int rc2, const struct Stat* st, const void* d) {
                            take<req_t>(d, rc2)->complete(zk_error(rc2), to_stat(st));
                        },
                        &r);
    });
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
    using req_t = request<std::vector<multi_result>>;
    start_request(kind, ec, std::move(h), {}, [&](req_t& r) {
        const auto n = ops.size();
        r.ops.resize(n);
        r.results.resize(n);
        r.path_buffers.resize(n);
        r.stats.resize(n);
        r.acls.reserve(n);
        // The C client keeps pointers into the ops until the completion: the request owns their strings
        // (op_paths holds each op's path at 2i and its data at 2i+1).
        r.op_paths.resize(2 * n);
        for (std::size_t i = 0; i < n; ++i) {
            std::visit(
                [&](auto& x) {
                    using T = std::decay_t<decltype(x)>;
                    r.op_paths[2 * i] = x.path;
                    const char* p = r.op_paths[2 * i].c_str();
                    if constexpr (std::is_same_v<T, op::create>) {
                        r.op_paths[2 * i + 1] = x.data;
                        r.path_buffers[i].assign(x.path.size() + 32, '\0');
                        r.acls.emplace_back(x.acl);
                        zoo_create_op_init(&r.ops[i], p, r.op_paths[2 * i + 1].data(),
                                           static_cast<int>(r.op_paths[2 * i + 1].size()), &r.acls.back().vec,
                                           to_zk_mode(x.mode), r.path_buffers[i].data(),
                                           static_cast<int>(r.path_buffers[i].size()));
                    } else if constexpr (std::is_same_v<T, op::remove>) {
                        zoo_delete_op_init(&r.ops[i], p, x.version);
                    } else if constexpr (std::is_same_v<T, op::set_data>) {
                        r.op_paths[2 * i + 1] = x.data;
                        zoo_set_op_init(&r.ops[i], p, r.op_paths[2 * i + 1].data(),
                                        static_cast<int>(r.op_paths[2 * i + 1].size()), x.version, &r.stats[i]);
                    } else {
                        zoo_check_op_init(&r.ops[i], p, x.version);
                    }
                },
                ops[i]);
        }
        return zoo_amulti(zh_, static_cast<int>(n), r.ops.data(), r.results.data(),
                          [](int rc2, const void* d) {
                              auto req = take<req_t>(d, rc2);
                              std::vector<multi_result> out(req->results.size());
                              for (std::size_t i = 0; i < out.size(); ++i) {
                                  out[i].ec = zk_error(req->results[i].err);
                                  if (req->ops[i].type == ZOO_CREATE_OP && req->results[i].err == ZOK)
                                      out[i].path = req->path_buffers[i].data();
                                  if (req->ops[i].type == ZOO_SETDATA_OP && req->results[i].err == ZOK)
                                      out[i].stat = to_stat(&req->stats[i]);
                              }
                              req->complete(zk_error(rc2), std::move(out));
                          },
                          &r);
    });
}

// --- Watches ------------------------------------------------------------------------------------
std::shared_ptr<watch_state> session_impl::prepare_watch(watch* w, const std::string& path, int kind)
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

void session_impl::on_watch_fired(std::uint64_t wid, int zk_type, const char* path)
{
    auto it = watches_.find(wid);
    if (it == watches_.end()) return;
    auto w = it->second;
    watches_.erase(it);
    ++stats.watch_events;
    w->at = watch_state::phase::fired;
    w->event.path = path ? path : "";
    if (zk_type == ZOO_CREATED_EVENT) w->event.type = watch_event_type::created;
    else if (zk_type == ZOO_DELETED_EVENT) w->event.type = watch_event_type::deleted;
    else if (zk_type == ZOO_CHANGED_EVENT) w->event.type = watch_event_type::data_changed;
    else w->event.type = watch_event_type::children_changed;
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
    if (!live || !watches_.erase(w->id) || !zh_ || is_final(state)) return;
    // Forget it in the client only (local = 1). ZooKeeper 3.8's C client cannot remove a watch from the
    // server: asked to (local = 0), it sends a checkWatches request and then forgets the watch locally,
    // so the server keeps the one-shot watch until the node changes or the session ends. It is then
    // delivered to an id we no longer know, and ignored.
    c_call scope(log.get());
    zoo_aremove_watches(zh_, w->path.c_str(), static_cast<ZooWatcherType>(w->kind), node_watcher,
                        watcher_context(w.get()), 1, nullptr, nullptr);
}

}  // namespace zklock::detail
