// A session's graceful drain (session::async_drain) as a pure machine: what to do when a drain is asked
// for, when the last holder lets go, when the deadline passes, when a caller cancels and when the close is
// confirmed. The shell (recipes/drain.cpp) performs the actions and feeds the answers back. No Asio, no
// clock read here: the deadline comes in as a time point, its passing as an event.
//
//   waiting ──(no holder left)──> confirming ──(the server answered a sync)──> closing ──(closed)──> done
//   (success only if the close itself reached the server too: else error::timeout)
//      └─────────(deadline passed, or a caller cut it short)─────────────────────┘
//
// The sync between the last release and the close makes the server answer every delete sent before it
// (a session's requests are answered in order), so that no release completes with session_closed. A sync
// lost with the connection is sent again (after the reconnect) until the deadline: closing while
// disconnected would leave the locks on the server until the session times out.
#pragma once

#include "lock_clock.hpp"

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace zklock::detail {

using boost::system::error_code;

struct drain_action {
    enum class type : std::uint8_t {
        stop_new_work,  ///< refuse new acquires, fail every waiter with error::draining, ask holders to let go
        arm_deadline,   ///< (re)set the one timer to `at`; it calls deadline_passed
        confirm,        ///< send a sync once connected; its answer calls confirmed
        close,          ///< close the session and wait for the server to end it; then closed. `ec` says
                        ///< why now: empty (all released), error::timeout (the deadline), or
                        ///< operation_aborted (a caller cut it short)
        complete,       ///< complete caller `id` with `ec`
        abort,          ///< complete caller `id` with operation_aborted
    };
    type what{};
    std::uint64_t id = 0;
    error_code ec{};
    clock_time at{};
    friend bool operator==(const drain_action&, const drain_action&) = default;
};

class drain_machine {
public:
    using actions = std::vector<drain_action>;
    enum class phase : std::uint8_t { idle, waiting, confirming, closing, done };

    /// Caller `id` asks for a drain that ends by `deadline`. `session_over`: why the session cannot be
    /// drained (closed or expired already), empty if it can. `holders`: whether any lock is held now. A
    /// second caller joins the drain under way; the earlier deadline wins.
    actions start(std::uint64_t id, clock_time deadline, bool holders, error_code session_over);
    /// The last holder let go (the shell looks after every release).
    actions holders_gone();
    /// The deadline passed; `holders`: whether anything is still held (it is released by the close). The
    /// callers hear error::timeout if something was held, or if the releases were never confirmed.
    actions deadline_passed(bool holders);
    /// Caller `id` cancelled with a terminal or partial signal: it completes now with operation_aborted,
    /// and the drain cuts its grace short (holders are told error::session_closed by the close).
    actions cut_short(std::uint64_t id, bool holders);
    /// The sync sent by `confirm` was answered (`ec` empty) or failed.
    actions confirmed(error_code ec);
    /// The session that `close` closed is closed; `server_ended_it`: the server answered the close (nothing
    /// of the session is left there). Without that answer, and without a sync that confirmed the releases
    /// (no server reachable), the nodes stay until the session expires: the callers hear error::timeout.
    actions closed(bool server_ended_it);
    /// The session ended by itself (expired, or closed by someone else) with `why`.
    actions session_ended(error_code why);

    phase at() const noexcept { return phase_; }

private:
    actions close_now(actions out, bool forced, error_code why);
    void complete_all(actions& out, error_code ec);

    phase phase_ = phase::idle;
    std::vector<std::uint64_t> callers_;
    std::optional<clock_time> deadline_;
    bool forced_ = false;        // the close came with something still held, or unconfirmed
    bool confirm_lost_ = false;  // the last confirming sync was lost with the connection
    bool releases_confirmed_ = false;  // a sync answered after the last release: every delete was applied
};

}  // namespace zklock::detail
