// The operations of an atomic multi (all succeed or none), and their results.
#pragma once

#include <zklock/acl.hpp>
#include <zklock/create_mode.hpp>
#include <zklock/stat.hpp>

#include <boost/system/error_code.hpp>

#include <string>
#include <variant>
#include <vector>

namespace zklock {

namespace op {
/// Creates a node (as session::async_create); in a multi, its result's `path` is the created path.
struct create {
    std::string path;                            ///< the node's path (sequential modes: the server appends a counter)
    std::string data;                            ///< the node's initial data
    create_mode mode = create_mode::persistent;  ///< the kind of node: persistent, ephemeral, sequential, container
    zklock::acl acl = open_acl();                ///< who may do what with the node (default: anyone, anything)
};
/// Deletes a node (as session::async_remove).
struct remove {
    std::string path;  ///< the node to delete
    int version = -1;  ///< -1: any version
};
/// Replaces a node's data (as session::async_set_data).
struct set_data {
    std::string path;  ///< the node whose data is replaced
    std::string data;  ///< the new data
    int version = -1;  ///< only if the node's data version (stat::version) is this; -1: any version
};
/// Succeeds only if the node exists with this data version: guards the other operations
/// (e.g. "only while my lock node exists").
struct check {
    std::string path;  ///< the node that must exist
    int version = -1;  ///< the data version (stat::version) it must have; -1: any version, existence only
};
}  // namespace op

using multi_op = std::variant<op::create, op::remove, op::set_data, op::check>;

/// The outcome of one operation of a multi (session::async_multi, guarded writes), at the index of its operation.
struct multi_result {
    boost::system::error_code ec;  ///< this operation's own result
    std::string path;              ///< for create: the created path
    zklock::stat stat;             ///< for set_data
};

}  // namespace zklock
