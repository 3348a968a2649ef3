// Performs the leader observer's actions (core/leader_observer.hpp) on the session: async_leader and
// async_wait_leader_change. Everything here runs on the session's executor.
#include "core/leader_observer.hpp"
#include "lock_base.hpp"

#include "../session/pending_op.hpp"

#include <zklock/election.hpp>

#include <algorithm>
#include <vector>

namespace zklock::detail {

namespace {

using step = leader_observer::step;

/// One observation: the machine, the reads it asks for, and this round's watches. Kept alive by the
/// requests and watch waits it has out; a cancellation drops its watches, which ends their waits.
class observer_run : public std::enable_shared_from_this<observer_run> {
public:
    observer_run(std::shared_ptr<session_impl> s, std::shared_ptr<pending_op<leader_info>> op, std::string dir,
                 std::optional<leader_info> known)
        : s_(std::move(s)), op_(std::move(op)), machine_(std::move(dir), std::move(known))
    {
    }

    void start()
    {
        op_->on_abort([w = weak_from_this()] {
            if (auto self = w.lock()) self->stop();
        });
        perform(machine_.start());
    }

private:
    void stop()
    {
        stopped_ = true;
        drop_watches();
    }

    void drop_watches()
    {
        ++round_;
        leader_w_ = watch{};
        value_w_ = watch{};
        dir_w_ = watch{};
        set_.clear();
    }

    /// `w`, noted as set by this round's read: the round waits for it.
    watch* setting(watch& w)
    {
        if (std::find(set_.begin(), set_.end(), &w) == set_.end()) set_.push_back(&w);
        return &w;
    }

    /// A request's answer, if this observation still wants it.
    template <class Fn>
    auto answer(Fn fn)
    {
        return [self = shared_from_this(), fn = std::move(fn)](error_code ec, auto... args) {
            if (!self->stopped_) self->perform(fn(self->machine_, ec, std::move(args)...));
        };
    }

    void perform(const leader_observer::action& a)
    {
        switch (a.what) {
        case step::sync:
            drop_watches();  // a new round: the last one's watches are never delivered
            if (!op_->send_now()) return stop();
            s_->sync(a.path, answer([](leader_observer& m, error_code ec) { return m.on_synced(ec); }));
            break;
        case step::list:
        case step::list_watched:
            s_->get_children(a.path, a.what == step::list_watched ? setting(dir_w_) : nullptr,
                             answer([](leader_observer& m, error_code ec, std::vector<std::string> children, stat) {
                                 return m.on_listed(ec, children);
                             }));
            break;
        case step::watch_creation:
            s_->exists(a.path, setting(dir_w_), answer([](leader_observer& m, error_code ec, std::optional<stat> st) {
                           return m.on_checked(ec, st.has_value());
                       }));
            break;
        case step::read_leader:
            s_->get_data(a.path, setting(leader_w_), answer([](leader_observer& m, error_code ec, std::string data, stat st) {
                             return m.on_leader_read(ec, data, st.czxid);
                         }));
            break;
        case step::read_value:
            s_->get_data(a.path, setting(value_w_), answer([](leader_observer& m, error_code ec, std::string data, stat) {
                             return m.on_value_read(ec, data);
                         }));
            break;
        case step::await_watch:
            // Every watch this round's reads set, armed or not: one may have fired between its read's
            // answer and now (its wait then completes at once), and one whose read failed was never
            // armed (its wait completes with operation_aborted, which is ignored).
            for (watch* w : set_) await(*w);
            break;
        case step::await_connected:
            s_->wait_state(session_state::connecting, [self = shared_from_this()](error_code, session_state st) {
                if (self->stopped_) return;
                if (st == session_state::connected) return self->perform(self->machine_.start());
                self->finish(is_final(st) ? final_error(st) : error_code(zklock::error::not_connected));
            });
            break;
        case step::report: finish({}); break;
        case step::fail: finish(machine_.error()); break;
        }
    }

    void await(watch& w)
    {
        w.async_wait([self = shared_from_this(), round = round_](error_code ec, watch_event) {
            if (self->stopped_ || round != self->round_) return;  // dropped, or another watch woke the round
            if (ec == asio::error::operation_aborted) return;
            if (ec) return self->finish(ec);  // the session ended
            self->perform(self->machine_.on_watch_fired());
        });
    }

    void finish(error_code ec)
    {
        op_->complete(ec, ec ? leader_info{} : machine_.leader());
        stop();
    }

    std::shared_ptr<session_impl> s_;
    std::shared_ptr<pending_op<leader_info>> op_;
    leader_observer machine_;
    watch leader_w_, value_w_, dir_w_;
    std::vector<watch*> set_;  ///< the watches this round's reads set
    std::uint64_t round_ = 0;
    bool stopped_ = false;
};

}  // namespace

void async_observe_leader(std::shared_ptr<session_impl> s, std::string dir, std::optional<leader_info> known,
                          handler<leader_info> h)
{
    if (!s) return complete_without_session(std::move(h), error_code(zklock::error::no_session), leader_info{});
    auto op = pending_op<leader_info>::bind(s, std::move(h), op_nature::undoable);
    auto ex = s->ex;
    asio::dispatch(ex, [s = std::move(s), dir = std::move(dir), known = std::move(known), op = std::move(op)]() mutable {
        if (auto ec = below_root_refusal(*s, dir))
            return op->complete(ec, leader_info{});
        std::make_shared<observer_run>(s, std::move(op), std::move(dir), std::move(known))->start();
    });
}

}  // namespace zklock::detail
