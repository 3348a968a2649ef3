// The entry point of zklock/revoke.hpp: ask a holder to let go (Curator's Revoker).
#include "../core/node_data.hpp"
#include "../lock_base.hpp"

#include "../../session/pending_op.hpp"

#include <zklock/revoke.hpp>

namespace zklock::detail {

static_assert(revoke_message == revoke_request, "the public revocation message is the one the holders hear");

void async_request_revoke(const std::shared_ptr<session_impl>& s, std::string node, handler<> h)
{
    if (!s) return complete_without_session(std::move(h), error_code(zklock::error::no_session));
    auto op = pending_op<>::bind(s, std::move(h), op_nature::write);
    asio::dispatch(s->ex, [op, node = std::move(node)]() mutable {
        const auto& ss = op->session();
        // The root is never a lock node: writing the request there would only overwrite the root's data.
        if (auto ec = below_root_refusal(*ss, node)) return op->complete(ec);
        if (!op->send_now()) return;
        ss->set_data(std::move(node), std::string(revoke_message), -1, [op](error_code ec, stat) {
            if (!ec) ++op->session()->stats.revocations_requested;
            op->complete(ec);
        });
    });
}

}  // namespace zklock::detail
