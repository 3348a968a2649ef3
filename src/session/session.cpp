// The public handle zklock::session and the entry points (detail::async_*) its operations call, each
// handing the work to the session's shared state (zklock::watch's are in watch.cpp).
#include "session_impl.hpp"

#include <cstdio>

// --- The public handles -------------------------------------------------------------------------
namespace zklock {

session::session(executor_type ex, session_config config)
    : impl_(std::make_shared<detail::session_impl>(std::move(ex), std::move(config)))
{
}

session& session::operator=(session&& other) noexcept
{
    if (this != &other) {
        if (impl_) {
            impl_->close();
            impl_->detach_helpers();
        }
        impl_ = std::move(other.impl_);
    }
    return *this;
}

session::~session()
{
    if (impl_) {
        impl_->close();
        impl_->detach_helpers();
    }
}

session::executor_type session::get_executor() const noexcept { return impl_->ex; }
const session_config& session::config() const noexcept { return impl_->cfg; }
session_state session::state() const noexcept { return impl_->state; }
std::int64_t session::id() const noexcept { return impl_->id; }
std::chrono::milliseconds session::negotiated_timeout() const noexcept { return impl_->negotiated; }
std::string session::hosts() const
{
    const auto& h = impl_->cfg.hosts;
    return h.substr(0, h.find('/'));
}
void session::close() noexcept { impl_->close(); }
session_stats session::stats() const { return impl_->snapshot(); }

log_sink stderr_log_sink()
{
    return [](log_level level, std::string_view text) {
        static constexpr const char* names[] = {"", "error", "warning", "info", "debug"};
        std::fprintf(stderr, "zklock %s: %.*s\n", names[static_cast<int>(level)], static_cast<int>(text.size()),
                     text.data());
    };
}

namespace detail {
void async_connect(const std::shared_ptr<session_impl>& s, handler<> h) { s->connect(std::move(h)); }
void async_close(const std::shared_ptr<session_impl>& s, handler<> h) { s->close_and_wait(std::move(h)); }
void async_stats(const std::shared_ptr<session_impl>& s, handler<session_stats> h)
{
    if (!s) return complete_without_session(std::move(h), error_code{}, session_stats{});
    // Read on the session's executor: the counters are written there. The copy of `s` goes there too.
    asio::dispatch(s->ex, [s, h = std::move(h)]() mutable { s->post_completion(std::move(h), error_code{}, s->snapshot()); });
}
void async_wait_state(const std::shared_ptr<session_impl>& s, session_state from, handler<session_state> h)
{
    s->wait_state(from, std::move(h));
}
void async_create(const std::shared_ptr<session_impl>& s, op::create r, handler<std::string, stat> h)
{
    s->create(std::move(r), std::move(h));
}
void async_remove(const std::shared_ptr<session_impl>& s, std::string path, int version, handler<> h)
{
    s->remove(std::move(path), version, std::move(h));
}
void async_sync(const std::shared_ptr<session_impl>& s, std::string path, handler<> h) { s->sync(std::move(path), std::move(h)); }
void async_exists(const std::shared_ptr<session_impl>& s, std::string path, watch* w, handler<std::optional<stat>> h)
{
    s->exists(std::move(path), w, std::move(h));
}
void async_get_data(const std::shared_ptr<session_impl>& s, std::string path, watch* w, handler<std::string, stat> h)
{
    s->get_data(std::move(path), w, std::move(h));
}
void async_get_children(const std::shared_ptr<session_impl>& s, std::string path, watch* w,
                        handler<std::vector<std::string>, stat> h)
{
    s->get_children(std::move(path), w, std::move(h));
}
void async_set_data(const std::shared_ptr<session_impl>& s, std::string path, std::string data, int version,
                    handler<stat> h)
{
    s->set_data(std::move(path), std::move(data), version, std::move(h));
}
void async_multi(const std::shared_ptr<session_impl>& s, std::vector<multi_op> ops, handler<std::vector<multi_result>> h)
{
    s->multi(std::move(ops), std::move(h));
}
}  // namespace detail
}  // namespace zklock
