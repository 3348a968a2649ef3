// The shell around drain_machine: session::async_drain. It lives in the session's recipe registry, stops
// the session's locks taking new work, waits for their holders, and closes the session.
#pragma once

#include "core/drain_machine.hpp"
#include "registry.hpp"

#include <zklock/detail/timer.hpp>

#include <map>

namespace zklock::detail {

class session_drain : public std::enable_shared_from_this<session_drain> {
public:
    /// Made on the first drain and kept by the registry for the session's life (its state listener is
    /// never removed: the session, which owns both, goes first).
    explicit session_drain(session_impl& s);

    /// Caller `id` asks for a drain that ends by `deadline` (on the session's executor; `keep` is the
    /// session, held while a caller waits, as a request in flight holds it).
    void start(std::shared_ptr<session_impl> keep, std::uint64_t id, clock_time deadline, handler<> h);
    /// Caller `id`'s terminal or partial cancellation.
    void cut_short(std::uint64_t id);
    /// A hold ended: if nothing is held any more, the drain goes on.
    void after_release();

private:
    void perform(const drain_machine::actions& out);
    void stop_new_work();
    /// Sends the confirming sync now, or once the session is connected again.
    void confirm_once_connected();
    /// If the session has ended, tells the machine so (and returns true).
    bool ended_with_session();
    bool anything_held() const;

    session_impl& s_;
    drain_machine machine_;
    std::map<std::uint64_t, handler<>> callers_;
    std::shared_ptr<session_impl> keep_;
    detail::timer timer_;
    std::uint64_t listener_ = 0;
    bool confirm_when_connected_ = false;  // a confirm came while disconnected
};

}  // namespace zklock::detail
