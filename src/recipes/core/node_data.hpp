// What zklock writes into its lock nodes, and how any node's data reads back (the participants list,
// `zklock ls`): the owner's identity, and the holder's lease deadline once it holds with a lease.
//
// The format is text, one item per line, so that kazoo's `contenders()` (which returns each node's data
// as its identifier) and people reading the node with zkCli see something sensible:
//
//     web-3:4711                       the owner (session_config::owner; default "hostname:pid")
//     lease-until-ms=1763870000123     the holder's wall clock (ms since the Unix epoch) when its lease ends
//     max-permits=3                    a semaphore's permit node: the N its session uses (Curator stores none)
//
// Other clients' data reads as an owner: Curator writes the client's IP address, kazoo its identifier.
// Curator's revocation request ("__REVOKE__") replaces the whole data; it reads as `revoke_requested`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace zklock::detail {

struct node_data {
    std::string owner;
    std::optional<std::int64_t> lease_until_ms;  ///< system clock of the holder, ms since the epoch
    std::optional<std::size_t> max_permits;       ///< a semaphore's permit node: the N of its session
    bool revoke_requested = false;
};

/// The data for a node of `owner`, with the lease deadline if there is one, and for a semaphore's permit
/// node the semaphore's N.
std::string encode_node_data(std::string_view owner, std::optional<std::int64_t> lease_until_ms,
                             std::optional<std::size_t> max_permits = std::nullopt);

/// Reads any node's data: ours, another client's, or a revocation request.
node_data decode_node_data(std::string_view data);

/// What Curator's Revoker.attemptRevoke writes into a holder's node (zklock::revoke_message, public).
inline constexpr std::string_view revoke_request = "__REVOKE__";

}  // namespace zklock::detail
