// How a session connects: hosts, timeouts, credentials, and where the C client's log goes.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zklock {

enum class log_level { error = 1, warning = 2, info = 3, debug = 4 };

/// Receives the ZooKeeper C client's log lines (and zklock's own), on the session's executor
/// or on the helper thread that opens and closes the handle.
using log_sink = std::function<void(log_level, std::string_view)>;

/// A sink that writes "zklock LEVEL: message" to stderr, for programs that want the C client's chatter.
log_sink stderr_log_sink();

struct credential {
    std::string scheme = "digest";  ///< ZooKeeper auth scheme
    std::string secret;             ///< for digest: "user:password"
};

struct session_config {
    /// Comma-separated "host:port" list, optionally followed by a chroot: "10.0.0.1:2181,10.0.0.2:2181/app".
    std::string hosts = "127.0.0.1:2181";
    /// Asked of the server, which bounds it to [2, 20] ticks (4 s to 40 s by default).
    std::chrono::milliseconds session_timeout{10'000};
    /// async_connect gives up after this long with error::connect_timeout.
    std::chrono::milliseconds connect_timeout{10'000};
    /// A lock holder whose session is disconnected this long learns ownership_uncertain.
    /// Unset: a sixth of the negotiated session timeout T. The client notices a silent server at most 2/3 T
    /// after it last heard from it, so the holder is told by 5/6 T, before the server can expire the
    /// session (at T) and let another client in; a reconnect within the grace is no alarm.
    std::optional<std::chrono::milliseconds> loss_grace{};
    /// Added with zoo_add_auth right after the handle is created.
    std::vector<credential> credentials{};
    /// Where log lines go. Empty: errors and warnings are dropped too (the C client never writes to stderr).
    log_sink log{};
    log_level log_threshold = log_level::warning;
};

}  // namespace zklock
