// Errors: zklock's own conditions, and ZooKeeper's return codes, as boost::system::error_code.
#pragma once

#include <boost/system/error_code.hpp>

#include <string>

#include <type_traits>

namespace zklock {

/// Conditions zklock reports itself. Category name: "zklock".
enum class error {
    timeout = 1,           ///< the lock (or the connection) was not obtained within the deadline
    session_expired,       ///< the ZooKeeper session expired; ephemeral nodes and locks of it are gone
    session_closed,        ///< the session was closed while the operation was pending
    auth_failed,           ///< the server refused the session's credentials; the session is unusable
    not_connected,         ///< the session was never connected (call async_connect first)
    connect_timeout,       ///< no ZooKeeper server answered within the connect timeout
    invalid_hosts,         ///< the host string cannot be parsed
    invalid_path,          ///< a znode path that ZooKeeper would reject
    lock_node_deleted,     ///< our lock node was deleted by someone else: the lock is lost
    ownership_uncertain,   ///< no answer from ZooKeeper within the loss grace period: the lock may be lost
    not_held,              ///< release of a guard that holds nothing
    already_closed,        ///< the session was already closed or expired before the call
    watch_not_armed,       ///< async_wait on a watch given to no read (after a failed read: operation_aborted)
    invalid_config,        ///< a session_config value is out of range (check_config says which)
    unresolvable_host,     ///< a host name of the host list cannot be resolved
    conflicting_options,   ///< another lock object of this session on the same path has other options
    no_session,            ///< the session object was moved from: it has no session to use
    no_create_permission,  ///< the lock directory's ACL does not let this session create its lock node
    no_delete_permission,  ///< ... does not let it delete its lock node (it would block everyone): refused
    no_read_permission,    ///< ... does not let it list the contenders
    schema_mismatch,       ///< the lock path holds another recipe's nodes (the session's log names it)
    invalid_permit_count,  ///< a semaphore asked for 0 permits, or more than it has
    lease_expired,         ///< the hold's lease (its hold-time limit) ran out: the library released it
    invalid_lease,         ///< a lease of zero or negative length
    outcome_unknown,       ///< a guarded write's answer was lost: it may or may not have been applied; read it back
    not_supported,         ///< this process or machine cannot do it: a missing privilege or tool (the message names it)
    invalid_participant_id,  ///< an election's participant id must be one line of text, not Curator's "__REVOKE__"
    draining,              ///< the session is draining (session::async_drain): it takes no new locks
    /// The old name of invalid_permit_count, from when a semaphore's permits were called leases.
    invalid_lease_count [[deprecated("a semaphore's leases are now called permits: use invalid_permit_count")]] =
        invalid_permit_count,
};

const boost::system::error_category& zklock_category() noexcept;

/// ZooKeeper's own return codes (ZNONODE, ZNOAUTH, ZCONNECTIONLOSS, ...), values as in zookeeper.h.
/// Category name: "zklock.zookeeper".
const boost::system::error_category& zookeeper_category() noexcept;

inline boost::system::error_code make_error_code(error e) noexcept
{
    return {static_cast<int>(e), zklock_category()};
}

/// ZooKeeper return codes zklock names (values match zookeeper.h, which public headers never include).
enum class zk_errc {
    runtime_inconsistency = -2,
    connection_loss = -4,
    marshalling_error = -5,
    operation_timeout = -7,
    bad_arguments = -8,
    invalid_state = -9,
    no_node = -101,
    no_auth = -102,
    bad_version = -103,
    no_children_for_ephemerals = -108,
    node_exists = -110,
    not_empty = -111,
    session_expired = -112,
    invalid_acl = -114,
    auth_failed = -115,
    closing = -116,
    session_moved = -118,
    not_read_only = -119,
    no_watcher = -121,
    throttled_op = -127,  ///< the server was overloaded and did not apply the request: retryable
};

inline boost::system::error_code make_error_code(zk_errc e) noexcept
{
    return {static_cast<int>(e), zookeeper_category()};
}

/// True for ZooKeeper codes after which the same request may succeed once the client has reconnected
/// (connection loss, operation timeout, or an answer out of order, after which the C client drops the
/// connection: the request may or may not have been applied), or at once (a request the server
/// throttled: it was not applied). An expired session is never retryable.
bool is_retryable(const boost::system::error_code& ec) noexcept;

/// A short, stable name for `ec`, for counters and metric labels: the enumerator's name for zklock's
/// errors and ZooKeeper's ("timeout", "lock_node_deleted", "connection_loss", "no_node"),
/// "operation_aborted" for a cancellation, "ok" for success, else "<category>_<value>".
std::string error_name(const boost::system::error_code& ec);

}  // namespace zklock

/// \cond
template <>
struct boost::system::is_error_code_enum<zklock::error> : std::true_type {};
template <>
struct boost::system::is_error_code_enum<zklock::zk_errc> : std::true_type {};
/// \endcond
