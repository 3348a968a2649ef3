#include "drain_machine.hpp"

#include <zklock/error.hpp>

#include <algorithm>
#include <cerrno>

namespace zklock::detail {

using drain_act = drain_action::type;

drain_machine::actions drain_machine::start(std::uint64_t id, clock_time deadline, bool holders, error_code session_over)
{
    actions out;
    if (phase_ == phase::done || (phase_ == phase::idle && session_over)) {
        out.push_back({.what = drain_act::complete, .id = id, .ec = zklock::error::already_closed});
        return out;
    }
    callers_.push_back(id);
    if (phase_ == phase::idle) {
        phase_ = phase::waiting;
        out.push_back({.what = drain_act::stop_new_work});
    }
    if (phase_ == phase::waiting && (!deadline_ || deadline < *deadline_)) {
        deadline_ = deadline;
        out.push_back({.what = drain_act::arm_deadline, .at = deadline});
    }
    if (phase_ == phase::waiting && !holders) {
        auto more = holders_gone();
        out.insert(out.end(), more.begin(), more.end());
    }
    return out;
}

drain_machine::actions drain_machine::holders_gone()
{
    actions out;
    if (phase_ != phase::waiting) return out;
    phase_ = phase::confirming;
    out.push_back({.what = drain_act::confirm});
    return out;
}

drain_machine::actions drain_machine::deadline_passed(bool holders)
{
    if (phase_ != phase::waiting && phase_ != phase::confirming) return {};
    // A confirmation lost with the connection: the releases may not have reached the server, whose
    // nodes then stay until the session times out. The callers are told so.
    return close_now({}, holders || confirm_lost_, zklock::error::timeout);
}

drain_machine::actions drain_machine::cut_short(std::uint64_t id, bool holders)
{
    actions out;
    const auto it = std::find(callers_.begin(), callers_.end(), id);
    if (it == callers_.end()) return out;  // already answered: the signal came late
    callers_.erase(it);
    out.push_back({.what = drain_act::abort, .id = id});
    if (phase_ == phase::waiting || phase_ == phase::confirming)
        return close_now(std::move(out), holders, error_code(ECANCELED, boost::system::system_category()));  // Asio's operation_aborted
    return out;
}

drain_machine::actions drain_machine::confirmed(error_code ec)
{
    if (phase_ != phase::confirming) return {};
    // Lost with the connection: the deletes before it may not have reached the server either. Again,
    // after the reconnect; the deadline still bounds it.
    if (ec == zklock::zk_errc::connection_loss || ec == zklock::zk_errc::operation_timeout) {
        confirm_lost_ = true;
        return {{.what = drain_act::confirm}};
    }
    confirm_lost_ = false;
    releases_confirmed_ = !ec;
    return close_now({}, false, {});
}

drain_machine::actions drain_machine::closed(bool server_ended_it)
{
    actions out;
    if (phase_ != phase::closing) return out;
    phase_ = phase::done;
    // Nothing of the locks is left on the server if the sync confirmed the releases or the server ended
    // the session at the close; else the nodes stay until the session expires, and the callers are told.
    const bool unconfirmed = forced_ || (!releases_confirmed_ && !server_ended_it);
    complete_all(out, unconfirmed ? error_code(zklock::error::timeout) : error_code{});
    return out;
}

drain_machine::actions drain_machine::session_ended(error_code why)
{
    actions out;
    // Our own close ends the session too: closed() answers then.
    if (phase_ != phase::waiting && phase_ != phase::confirming) return out;
    phase_ = phase::done;
    complete_all(out, why);
    return out;
}

drain_machine::actions drain_machine::close_now(actions out, bool forced, error_code why)
{
    phase_ = phase::closing;
    forced_ = forced;
    out.push_back({.what = drain_act::close, .ec = why});
    return out;
}

void drain_machine::complete_all(actions& out, error_code ec)
{
    for (auto id : callers_) out.push_back({.what = drain_act::complete, .id = id, .ec = ec});
    callers_.clear();
}

}  // namespace zklock::detail
