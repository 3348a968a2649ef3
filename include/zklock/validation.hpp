// What ZooKeeper and zklock accept, checked before anything is sent: paths, host lists, session settings.
#pragma once

#include <zklock/config.hpp>
#include <zklock/error.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace zklock {

/// The longest znode path zklock sends. ZooKeeper's own limit is its packet size (jute.maxbuffer, 1 MiB by
/// default); a request over it makes the server drop the connection, so no path may come near it.
inline constexpr std::size_t max_path_length = 32 * 1024;
/// The longest credential secret (a digest "user:password").
inline constexpr std::size_t max_secret_length = 4096;
/// The longest owner identity (session_config::owner, up to its first newline: the part written into every
/// lock node's data, beside the recipe's own lines). A node's data and its path travel in one request,
/// which must stay under ZooKeeper's packet size (jute.maxbuffer, 1 MiB by default) or the server drops the
/// connection; every participants list reads the data of every node. A few KiB is plenty for a name.
inline constexpr std::size_t max_owner_length = 4096;
/// The longest PATH of a lock (a mutex, a read/write lock, a semaphore): the nodes the recipes make below it
/// must be valid paths too. The longest is a semaphore's lease, "PATH/leases/_c_<uuid>-lease-<10 digits>",
/// 64 bytes more.
inline constexpr std::size_t max_lock_path_length = max_path_length - 64;

/// `error::invalid_path` unless ZooKeeper would accept `path`: absolute, no empty, "." or ".." part, no
/// trailing '/', valid UTF-8 without the code points ZooKeeper refuses (U+0000 to U+001F, U+007F to
/// U+009F, U+D800 to U+F8FF, U+FFF0 to U+FFFF), at most max_path_length bytes. `why`, if given, gets the
/// reason in words.
boost::system::error_code check_path(std::string_view path, std::string* why = nullptr);

/// check_path, then `error::invalid_path` for a path over max_lock_path_length bytes (the lock objects
/// refuse such a path, and the session's log says why).
boost::system::error_code check_lock_path(std::string_view path, std::string* why = nullptr);

/// `error::invalid_hosts` unless `hosts` is "host:port[,host:port...][/chroot]" with ports 1 to 65535 and a
/// valid chroot path.
boost::system::error_code check_hosts(std::string_view hosts, std::string* why = nullptr);

/// The host list, then `error::invalid_config` for a session_timeout outside 1 s to 24 h (the server then
/// negotiates it into [2, 20] ticks), a connect_timeout not above zero or over 24 h, a loss_grace not above
/// zero or above 7/12 of session_timeout (the bound is in `why`), a credential with an empty scheme or a
/// secret over max_secret_length, or an owner over max_owner_length.
boost::system::error_code check_config(const session_config& config, std::string* why = nullptr);

}  // namespace zklock
