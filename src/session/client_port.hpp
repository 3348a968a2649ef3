// The seam beneath the session: what session_impl asks of the ZooKeeper client it drives, in zklock's
// types. The C client is one implementation (c_port.cpp); a simulated client answering from the model
// ZooKeeper (testing/simulation) is to be the other, so that the session's own rules (the in-flight table,
// the touch, the loss clock, the keepalive, the batching of writes) run unchanged in a simulation.
// Internal to the session layer; never includes <zookeeper/zookeeper.h>.
#pragma once

#include <zklock/acl.hpp>
#include <zklock/create_mode.hpp>
#include <zklock/error.hpp>
#include <zklock/multi.hpp>
#include <zklock/session_state.hpp>
#include <zklock/stat.hpp>
#include <zklock/watch_event.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace zklock::detail {

using boost::system::error_code;

class request_base;

/// Whether the server appends a counter to the name of a node made in mode `m`.
constexpr bool is_sequential(create_mode m) noexcept
{
    return m == create_mode::persistent_sequential || m == create_mode::ephemeral_sequential;
}

/// What a watch waits for: a node's data (and its creation or deletion), or its list of children.
enum class watch_kind : unsigned char { data, child };

/// One request, as the session hands it to the client.
struct client_call {
    enum class verb : unsigned char { create, remove, sync, exists, get_data, get_config, get_children, set_data, multi };
    verb what{};
    std::string path{};           ///< every verb but get_config (which reads /zookeeper/config, outside a chroot)
    std::string data{};           ///< create, set_data
    int version = -1;           ///< remove, set_data
    create_mode mode{};         ///< create
    acl access{};                 ///< create
    std::vector<multi_op> ops{};  ///< multi
    /// exists, get_data, get_config, get_children: the id of the watch to arm in the session's table (0:
    /// none). The client reports its event with session_impl::on_watch_fired(id, ...).
    std::uint64_t watch = 0;
};

/// What the server answered to one request. Only what the verb returns is filled in, and only on success.
struct client_answer {
    error_code ec;                       ///< as zk_error reports ZooKeeper's code (no_node for a missing node)
    std::string text;                    ///< create: the node's path; get_data, get_config: its data
    zklock::stat st{};                   ///< create, exists, get_data, get_config, get_children, set_data
    std::vector<std::string> children;   ///< get_children
    std::vector<multi_result> results;   ///< multi: one per operation, in order
};

/// The client beneath one session: it sends requests, and answers each later, on the session's executor,
/// through answered(). Watch events come through session_impl::on_watch_fired.
class client_port {
public:
    virtual ~client_port() = default;
    /// Hands `call` to the client. Empty: it is on its way, and the port owns `r` until it passes it to
    /// answered() (once, on the session's executor, never inside this call). Otherwise the client refused
    /// it at once (nothing was sent; `r` stays the caller's), and the code says why (as zk_error does;
    /// zk_errc::invalid_state when the handle is closed or has learnt that its session ended).
    virtual error_code submit(client_call call, request_base* r) = 0;
    /// The client forgets the watch `id` (of `kind` on `path`); the server may still fire it (3.8's client
    /// cannot remove a watch from the server), and the session then ignores the event.
    virtual void forget_watch(const std::string& path, watch_kind kind, std::uint64_t id) = 0;
    /// The session's state as the client knows it (it may have learnt of an expiry before the session
    /// event reached the session); `closed` when no handle is open.
    virtual session_state state() const = 0;

    // --- The handle's life ---
    /// Opens a handle to `hosts` (a host string, as session_config::hosts), asking for the configured
    /// session timeout, with no session id (a new session). The client then reports its state changes
    /// through session_impl::on_session_event; a handle that cannot be made closes the session with why.
    /// Either way the port calls session_impl::handle_made() once the handle is made (or could not be).
    virtual void open(std::string hosts) = 0;
    /// Whether a handle is open (made, and not yet let go of).
    virtual bool is_open() const = 0;
    /// Lets go of the handle (the session has already failed everything it waited for): the session is
    /// ended on the server if the client can reach it. `then(server_ended_it)` runs on the executor once
    /// the handle is closed (at once if none was open: true), unless the session let go of its helpers.
    virtual void close(std::function<void(bool)> then) = 0;
    /// The session's id and password as the server gave them at the first connect (0 and empty before).
    virtual std::pair<std::int64_t, std::string> credentials() const = 0;
    /// The session timeout the server negotiated (0 before the first connect).
    virtual std::chrono::milliseconds negotiated_timeout() const = 0;

    // --- Faults (testing/faults.hpp) ---
    /// Breaks the connection now, as a network fault would; the client notices, fails what was out on it
    /// with connection_loss, and reconnects by itself.
    virtual void drop() = 0;
};

/// The client answered request `r`: the session records the answer (session_impl::finished) and completes
/// the request's handler. Frees `r`. On the session's executor.
void answered(request_base* r, client_answer&& a);

}  // namespace zklock::detail
