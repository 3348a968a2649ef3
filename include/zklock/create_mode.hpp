// The kind of znode a create makes.
#pragma once

namespace zklock {

enum class create_mode {
    persistent,
    ephemeral,             ///< deleted when the session ends
    persistent_sequential, ///< the server appends a 10-digit counter to the name
    ephemeral_sequential,
    container,             ///< deleted by the server once its last child is gone
};

}  // namespace zklock
