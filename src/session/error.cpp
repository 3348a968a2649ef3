// Error categories and state names: pure (part of the core target, with no C client: zk_errc's values
// are zookeeper.h's, checked in c_client.cpp).
#include <zklock/error.hpp>
#include <zklock/session_state.hpp>

#include <cctype>
#include <string>

namespace zklock {
namespace {

class zklock_category_impl final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "zklock"; }
    std::string message(int ev) const override
    {
        switch (static_cast<error>(ev)) {
        case error::timeout: return "the lock was not obtained within the timeout";
        case error::session_expired:
            return "the ZooKeeper session expired: its ephemeral nodes and locks are gone; open a new session";
        case error::session_closed: return "the ZooKeeper session was closed while the operation was pending";
        case error::auth_failed: return "the ZooKeeper server refused the session's credentials";
        case error::not_connected: return "the session is not connected yet: call async_connect first";
        case error::connect_timeout:
            return "no ZooKeeper server answered within the connect timeout: check the host list and that the "
                   "servers run";
        case error::invalid_hosts:
            return "the ZooKeeper host string is malformed: expected host:port[,host:port...][/chroot]";
        case error::invalid_path:
            return "invalid znode path: it must be absolute, without a trailing slash, empty, '.' or '..' parts";
        case error::lock_node_deleted:
            return "the lock was lost: its node was deleted (by another client, or by the server when it expired "
                   "the session)";
        case error::ownership_uncertain:
            return "the lock may be lost: ZooKeeper answered nothing sent within the loss grace period, so the "
                   "session may expire before it hears from us again; stop using the resource and release";
        case error::not_held: return "the guard does not hold a lock";
        case error::already_closed: return "the session was already closed or expired";
        case error::watch_not_armed: return "the watch was never armed by a read";
        case error::invalid_config:
            return "a session_config value is out of range (session_timeout 1 s to 24 h, connect_timeout above "
                   "zero, loss_grace above zero and at most 7/12 of session_timeout, credentials and owner of at "
                   "most 4096 bytes; the session's log says which)";
        case error::unresolvable_host:
            return "cannot resolve a ZooKeeper host name of the host list: check the names and DNS";
        case error::conflicting_options:
            return "another lock object of this session locks the same path with different options (ACL, "
                   "linger, hand-off limit): use the same options for one path";
        case error::no_session: return "the session object was moved from: it has no session to use";
        case error::no_create_permission:
            return "not authorized: the lock directory's ACL does not grant this session CREATE";
        case error::no_delete_permission:
            return "not authorized: the lock directory's ACL does not grant this session DELETE, so a lock node "
                   "could not be removed on release; nothing was created";
        case error::no_read_permission:
            return "not authorized: the lock directory's ACL does not grant this session READ (to list the "
                   "contenders); nothing was created";
        case error::schema_mismatch:
            return "the lock path holds the nodes of another kind of lock (a mutex, a read/write lock or a "
                   "semaphore; the session's log names it): locks of different kinds on one path would not "
                   "exclude each other, so nothing was taken; use another path";
        case error::invalid_permit_count:
            return "a semaphore has at least one permit, and an acquire asks for at least one and at most "
                   "as many as the semaphore has, and at most 4096 at once (each permit is a node, and "
                   "ZooKeeper lists them all in one answer)";
        case error::lease_expired:
            return "the lock's lease (its hold-time limit) ran out, so zklock released it and another "
                   "contender may hold it now: stop using what it protects, and release the guard";
        case error::invalid_lease:
            return "a lease must be longer than zero (use an acquire without a lease to hold with no limit)";
        case error::outcome_unknown:
            return "the write may or may not have been applied: it was sent, then the connection was lost (or "
                   "timed out, or the session ended) before ZooKeeper answered; read the data back (async_sync, "
                   "then a read; write the guard's fencing token with it to recognise it) before writing again";
        case error::not_supported:
            return "not supported here: this process lacks a privilege, or this machine a tool or kernel "
                   "feature, that the call needs";
        case error::invalid_participant_id:
            return "an election's participant id must be one line of text (no newline, not \"__REVOKE__\"): "
                   "it is its node's data, which Curator and kazoo read as the id";
        case error::draining:
            return "the session is draining (async_drain was called): it takes no new locks, and waiters were "
                   "cancelled; acquire on another session";
        }
        return "zklock error " + std::to_string(ev);
    }
};

class zookeeper_category_impl final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "zklock.zookeeper"; }
    std::string message(int ev) const override
    {
        switch (ev) {
        case static_cast<int>(zk_errc::connection_loss): return "connection to ZooKeeper lost (the client is reconnecting)";
        case static_cast<int>(zk_errc::operation_timeout): return "ZooKeeper operation timed out (the client is reconnecting)";
        case static_cast<int>(zk_errc::runtime_inconsistency):
            return "ZooKeeper's answer came out of order, so the client dropped the connection (it is reconnecting)";
        case static_cast<int>(zk_errc::no_node): return "no such znode (or its parent does not exist)";
        case static_cast<int>(zk_errc::no_auth): return "not authorized: the node's ACL does not grant this session that permission";
        case static_cast<int>(zk_errc::bad_version): return "the node's version does not match the expected version";
        case static_cast<int>(zk_errc::no_children_for_ephemerals): return "ephemeral nodes may not have children";
        case static_cast<int>(zk_errc::node_exists): return "the znode already exists";
        case static_cast<int>(zk_errc::not_empty): return "the znode has children";
        case static_cast<int>(zk_errc::invalid_acl): return "invalid ACL";
        case static_cast<int>(zk_errc::bad_arguments): return "invalid arguments";
        case static_cast<int>(zk_errc::no_watcher): return "no such watch";
        case static_cast<int>(zk_errc::throttled_op): return "the ZooKeeper server is overloaded and throttled the request without applying it: retry";
        case static_cast<int>(zk_errc::marshalling_error):
            return "the ZooKeeper client could not encode the request or decode its answer (larger than jute.maxbuffer, "
                   "or malformed)";
        case static_cast<int>(zk_errc::invalid_state):
            return "the ZooKeeper handle has ended (its session expired, or its credentials were refused), so the request "
                   "was not sent: open a new session";
        case static_cast<int>(zk_errc::session_expired):
            return "the server says the session expired (ZSESSIONEXPIRED): its ephemeral nodes are gone; open a new session";
        case static_cast<int>(zk_errc::auth_failed): return "the server refused the session's credentials (ZAUTHFAILED)";
        case static_cast<int>(zk_errc::closing): return "the ZooKeeper handle is closing: the request was not sent";
        case static_cast<int>(zk_errc::session_moved):
            return "the session moved to another server while the request was in flight, and this one ignored it: "
                   "retry on the new connection";
        case static_cast<int>(zk_errc::not_read_only):
            return "the server is read-only (cut off from its quorum) and takes no writes: retry once it has a quorum";
        }
        return "ZooKeeper error " + std::to_string(ev) + " (see zookeeper.h's ZOO_ERRORS)";
    }
};

}  // namespace

const boost::system::error_category& zklock_category() noexcept
{
    static const zklock_category_impl c;
    return c;
}

const boost::system::error_category& zookeeper_category() noexcept
{
    static const zookeeper_category_impl c;
    return c;
}

std::string error_name(const boost::system::error_code& ec)
{
    if (!ec) return "ok";
    if (ec.category() == zklock_category()) {
        switch (static_cast<error>(ec.value())) {
        case error::timeout: return "timeout";
        case error::session_expired: return "session_expired";
        case error::session_closed: return "session_closed";
        case error::auth_failed: return "auth_failed";
        case error::not_connected: return "not_connected";
        case error::connect_timeout: return "connect_timeout";
        case error::invalid_hosts: return "invalid_hosts";
        case error::invalid_path: return "invalid_path";
        case error::lock_node_deleted: return "lock_node_deleted";
        case error::ownership_uncertain: return "ownership_uncertain";
        case error::not_held: return "not_held";
        case error::already_closed: return "already_closed";
        case error::watch_not_armed: return "watch_not_armed";
        case error::invalid_config: return "invalid_config";
        case error::unresolvable_host: return "unresolvable_host";
        case error::conflicting_options: return "conflicting_options";
        case error::no_session: return "no_session";
        case error::no_create_permission: return "no_create_permission";
        case error::no_delete_permission: return "no_delete_permission";
        case error::no_read_permission: return "no_read_permission";
        case error::schema_mismatch: return "schema_mismatch";
        case error::invalid_permit_count: return "invalid_permit_count";
        case error::lease_expired: return "lease_expired";
        case error::invalid_lease: return "invalid_lease";
        case error::outcome_unknown: return "outcome_unknown";
        case error::not_supported: return "not_supported";
        case error::invalid_participant_id: return "invalid_participant_id";
        case error::draining: return "draining";
        }
    } else if (ec.category() == zookeeper_category()) {
        switch (static_cast<zk_errc>(ec.value())) {
        case zk_errc::runtime_inconsistency: return "runtime_inconsistency";
        case zk_errc::connection_loss: return "connection_loss";
        case zk_errc::marshalling_error: return "marshalling_error";
        case zk_errc::operation_timeout: return "operation_timeout";
        case zk_errc::bad_arguments: return "bad_arguments";
        case zk_errc::invalid_state: return "invalid_state";
        case zk_errc::no_node: return "no_node";
        case zk_errc::no_auth: return "no_auth";
        case zk_errc::bad_version: return "bad_version";
        case zk_errc::no_children_for_ephemerals: return "no_children_for_ephemerals";
        case zk_errc::node_exists: return "node_exists";
        case zk_errc::not_empty: return "not_empty";
        case zk_errc::session_expired: return "session_expired";
        case zk_errc::invalid_acl: return "invalid_acl";
        case zk_errc::auth_failed: return "auth_failed";
        case zk_errc::closing: return "closing";
        case zk_errc::session_moved: return "session_moved";
        case zk_errc::not_read_only: return "not_read_only";
        case zk_errc::no_watcher: return "no_watcher";
        case zk_errc::throttled_op: return "throttled_op";
        }
        return "zookeeper_" + std::to_string(-ec.value());
    } else if (ec == boost::system::errc::operation_canceled) {
        return "operation_aborted";  // Asio's, on POSIX
    }
    std::string name = ec.category().name();
    for (auto& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return name + "_" + std::to_string(ec.value());
}

bool is_retryable(const boost::system::error_code& ec) noexcept
{
    return ec == zk_errc::connection_loss || ec == zk_errc::operation_timeout ||
           ec == zk_errc::runtime_inconsistency || ec == zk_errc::throttled_op;
}

std::string_view to_string(session_state s) noexcept
{
    switch (s) {
    case session_state::idle: return "idle";
    case session_state::connecting: return "connecting";
    case session_state::connected: return "connected";
    case session_state::expired: return "expired";
    case session_state::auth_failed: return "auth_failed";
    case session_state::closed: return "closed";
    }
    return "unknown";
}

}  // namespace zklock
