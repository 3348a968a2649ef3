// The wrapper around ZooKeeper's single-threaded C client: the lock and log scope around every call into
// it, the conversions between its types and zklock's, and the helper threads that open and close handles.
// Internal to the session layer: only files in src/session/ include it (it includes <zookeeper/zookeeper.h>).
#pragma once

#include "session_impl.hpp"

#include <zookeeper/zookeeper.h>

#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace zklock::detail {

// --- Logging ------------------------------------------------------------------------------------
/// The C client's log callback carries no context, so each call into the client names the session
/// whose log it is in a thread-local. Every call into the C client happens inside such a scope.
struct log_scope {
    const log_target* saved;
    explicit log_scope(const log_target* t);
    ~log_scope();
    log_scope(const log_scope&) = delete;
    log_scope& operator=(const log_scope&) = delete;
};

/// The single-threaded C client keeps process-wide state without locks (its request-id counter, shared
/// by every handle): every call into it, from an event loop or from the thread that closes a handle, holds
/// this mutex. (zookeeper_init, which resolves names, runs without it: it touches no such state.)
struct c_call : log_scope {
    std::lock_guard<std::mutex> lock;
    explicit c_call(const log_target* t) : log_scope(t), lock(c_client_mutex()) {}
};

/// The C client's log callback: hands the line to the session named by the current log_scope.
void on_c_log(const char* message);
/// Silences the C client's log (it starts at INFO) until a session with a log sink asks for it.
void init_c_log_level();
/// Raises the C client's process-wide log level to at least `wanted`.
void raise_c_log_level(log_level wanted);

// --- Conversions --------------------------------------------------------------------------------
error_code zk_error(int rc) noexcept;
zklock::stat to_stat(const struct Stat* s) noexcept;
int to_zk_mode(create_mode m) noexcept;
session_state from_zk_state(int s) noexcept;

/// An ACL_vector that borrows the strings of a zklock::acl (the C client serializes it during the call).
struct c_acl {
    std::vector<ACL> entries;
    ACL_vector vec{};
    explicit c_acl(const acl& a);
};

/// The C client's port (client_port.hpp) for session `s`.
std::unique_ptr<client_port> make_c_port(session_impl& s);

// --- Helper threads -----------------------------------------------------------------------------
/// The helper threads that open and close handles. They are short-lived, but a close can wait seconds for
/// a silent server: the process joins whatever is left when it exits, so that no helper still runs while
/// static objects are being destroyed.
class helper_threads {
public:
    static helper_threads& instance();
    template <class Fn>
    void start(Fn fn)
    {
        std::lock_guard<std::mutex> lock(mu_);
        // Join the ones that finished, so the list stays short.
        for (auto it = threads_.begin(); it != threads_.end();) {
            if (it->done->load()) {
                it->thread.join();
                it = threads_.erase(it);
            } else {
                ++it;
            }
        }
        auto done = std::make_shared<std::atomic<bool>>(false);
        threads_.push_back({std::thread([fn = std::move(fn), done]() mutable {
                                fn();
                                done->store(true);
                            }),
                            done});
    }
    ~helper_threads();

private:
    helper_threads() = default;
    struct entry {
        std::thread thread;
        std::shared_ptr<std::atomic<bool>> done;
    };
    std::mutex mu_;
    std::list<entry> threads_;
};

/// Runs `fn` on a helper thread: zookeeper_init resolves names and zookeeper_close waits for the server,
/// and neither may block the event loop. `fn` reaches the session only through a helper_link.
template <class Fn>
void off_loop(Fn fn)
{
    helper_threads::instance().start(std::move(fn));
}

/// Closes a handle; call it on a helper thread (it may wait seconds for the server).
///
/// `connection`, if not -1, is a dup of the handle's socket, taken while it was connected; it is read to
/// the end and closed here. zookeeper_close sends closeSession and waits for a readable socket, but an
/// earlier answer still unread makes that wait end at once; its close() with unread bytes then resets
/// the connection, and the server may drop the closeSession it had not read yet, so the session and its
/// ephemeral nodes stay until the session expires. The dup keeps the connection open past
/// zookeeper_close, until the server closes its end (it does once closeSession is done) or 1.5 s after
/// the close began; then it is closed with nothing unread.
///
/// Returns whether the server ended the session: the handle was connected, the closeSession went out,
/// and the server then closed its end of `connection` within the 1.5 s. Otherwise (disconnected, or no
/// answer in time) the session and its ephemeral nodes may stay on the server until it expires.
bool close_handle(zhandle_t* zh, const std::shared_ptr<const log_target>& lg, int connection = -1);

/// A host string's names as addresses, and the names that did not resolve.
struct resolved_hosts {
    std::string list;        ///< "addr:port,...[/chroot]"; empty if no name resolved
    std::string unresolved;  ///< the names that did not resolve, "a, b", for the log; empty if all did
};
/// Resolves every name of a host list (blocking: on a helper thread), with `resolver` if set (see
/// session_config::resolver), else getaddrinfo.
resolved_hosts resolve_hosts(const std::string& hosts, const zklock::host_resolver& resolver = {});
/// The addresses of a resolved list, without its chroot.
std::string addresses_of(const std::string& list);

}  // namespace zklock::detail
