// A znode's metadata, as ZooKeeper returns it with reads and creates.
#pragma once

#include <cstdint>

namespace zklock {

/// A znode's metadata (ZooKeeper's Stat), as ZooKeeper returns it with reads and creates.
struct stat {
    std::int64_t czxid = 0;           ///< zxid of the create: ensemble-wide and monotonic (a fencing token)
    std::int64_t mzxid = 0;           ///< zxid of the last data change
    std::int64_t pzxid = 0;           ///< zxid of the last change to the children
    std::int64_t ctime_ms = 0;        ///< creation time, ms since the epoch
    std::int64_t mtime_ms = 0;        ///< time of the last data change (or of the create), ms since the epoch
    std::int32_t version = 0;         ///< data version (for conditional set and delete)
    std::int32_t cversion = 0;        ///< children version
    std::int32_t aversion = 0;        ///< ACL version
    std::int64_t ephemeral_owner = 0; ///< session id of the owner of an ephemeral node, else 0
    std::int32_t data_length = 0;     ///< length of the node's data, in bytes
    std::int32_t num_children = 0;    ///< number of children of the node
};

}  // namespace zklock
