// The entry points of zklock/watch.hpp: a watch's state, its wait, and letting it go.
#include "session_impl.hpp"

namespace zklock {

bool watch::armed() const noexcept
{
    return state_ && state_->at == detail::watch_state::phase::armed;
}

namespace detail {

void async_wait_watch(std::shared_ptr<watch_state> w, handler<watch_event> h)
{
    auto s = w ? w->session.lock() : nullptr;
    if (!s) {  // never armed, or its session is gone
        complete_without_session(std::move(h), error_code(zklock::error::watch_not_armed), watch_event{});
        return;
    }
    s->wait_watch(w, std::move(h));
}

void drop_watch(const std::shared_ptr<watch_state>& w) noexcept
{
    if (!w) return;
    if (auto s = w->session.lock()) s->drop_watch(w);
}
}  // namespace detail
}  // namespace zklock
