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
struct create {
    std::string path;
    std::string data;
    create_mode mode = create_mode::persistent;
    zklock::acl acl = open_acl();
};
struct remove {
    std::string path;
    int version = -1;  ///< -1: any version
};
struct set_data {
    std::string path;
    std::string data;
    int version = -1;
};
/// Succeeds only if the node exists with this data version: guards the other operations
/// (e.g. "only while my lock node exists").
struct check {
    std::string path;
    int version = -1;
};
}  // namespace op

using multi_op = std::variant<op::create, op::remove, op::set_data, op::check>;

struct multi_result {
    boost::system::error_code ec;  ///< this operation's own result
    std::string path;              ///< for create: the created path
    zklock::stat stat;             ///< for set_data
};

}  // namespace zklock
