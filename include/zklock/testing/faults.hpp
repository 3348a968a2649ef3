// Fault injection for tests of zklock and of code built on it: lose an answer, or deliver it only after
// the session noticed a broken connection, at the exact request a test names. Real faults on a real
// server (the connection is really shut down), placed where timing alone could never put them.
#pragma once

#include <functional>
#include <string>

namespace zklock {
class session;
}

namespace zklock::testing {

/// Each call arms one shot on `s`, for its next request of `kind`: "create", "remove", "exists",
/// "get_data", "get_children", "set_data" or "multi". Call them on the session's executor (or before it
/// runs). `then`, if given, runs right after the connection is dropped, inside the session's I/O
/// processing: it may act on the world (freeze a server), but must not call into the session.
/// The faults that act at an answer keep TCP's order, as a real break does: the answers that arrive
/// behind it on the same connection (read together with it) are lost as well, with
/// zk_errc::connection_loss, and every request completes in the order it was sent.

/// Once the request has been sent, the connection is dropped: the request fails with
/// zk_errc::connection_loss, and the server may have applied it or not (ZooKeeper drops a request whose
/// connection closed before the request reached its pipeline). The client reconnects by itself.
void lose_next_answer(const session& s, std::string kind, std::function<void()> then = {});

/// When the answer to the request arrives (the server has applied it), the connection is dropped and the
/// answer lost: the request fails with zk_errc::connection_loss once the session has noticed, though the
/// server applied it. The client reconnects by itself.
void lose_next_applied_answer(const session& s, std::string kind, std::function<void()> then = {});

/// When the answer to the request arrives, the connection is dropped, and the answer is delivered only
/// once the session has noticed (state `connecting`), as when an answer and a broken connection are
/// read together.
void disconnect_before_next_answer(const session& s, std::string kind, std::function<void()> then = {});

/// Drops the connection now, as a network fault would; the client reconnects by itself.
void drop_connection(const session& s);

}  // namespace zklock::testing
