// Access control lists for the znodes a session creates.
#pragma once

#include <string>
#include <vector>

namespace zklock {

namespace perm {
inline constexpr int read = 1, write = 2, create = 4, remove = 8, admin = 16, all = 31;
}

/// One entry of an ACL: the permissions that one identity (`scheme` and `id`) has on a znode.
struct acl_entry {
    int perms = perm::all;         ///< the permissions granted: perm:: bits or-ed together (perm::read | perm::write)
    std::string scheme = "world";  ///< "world", "auth", "digest", "ip", ...
    std::string id = "anyone";     ///< who: "anyone" for world, "user:hash" for digest, an address for ip, "" for auth
    /// Equal when perms, scheme and id are all equal.
    friend bool operator==(const acl_entry&, const acl_entry&) = default;
};

using acl = std::vector<acl_entry>;

/// world:anyone with every permission (ZooKeeper's OPEN_ACL_UNSAFE), the default.
inline acl open_acl() { return {acl_entry{}}; }
/// Every permission for the creator's authenticated identities only (CREATOR_ALL_ACL).
inline acl creator_all_acl() { return {acl_entry{perm::all, "auth", ""}}; }
/// Anyone may read, nobody may change (READ_ACL_UNSAFE).
inline acl read_only_acl() { return {acl_entry{perm::read, "world", "anyone"}}; }

}  // namespace zklock
