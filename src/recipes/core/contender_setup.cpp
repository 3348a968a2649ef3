// The contender's first steps in a directory, before its first node: the permission check and the
// missing ancestors. Part of contender_machine (contender_machine.hpp), kept apart for its size.
#include "contender_machine.hpp"

#include <zklock/error.hpp>

namespace zklock::detail {

using contender_act = contender_action::type;

// Before the first node in a directory: may we delete what we create, and list the directory? A node we
// cannot delete would block every other process until our session ends. The server checks a delete's
// ACL before the node's existence, so deleting a child that does not exist answers NOAUTH without DELETE
// permission and NONODE with it; the listing needs READ. Pipelined: one round trip, once per directory
// and session.
void contender_machine::check_permissions(actions& out)
{
    const auto r = next_round();
    out.push_back({.what = contender_act::probe_delete, .path = dir_ + "/zklock-permission-probe", .round = r});
    out.push_back({.what = contender_act::list, .path = dir_, .round = r, .purpose = listing::permissions});
}

contender_machine::actions contender_machine::on_probed(std::uint64_t r, error_code ec)
{
    if (r == round_) probe_ = ec;
    return {};
}

// The lock directory is missing. Look before creating, as Curator does: ZooKeeper checks CREATE on the
// parent before it checks existence, so "creating" an ancestor that exists under a locked-down parent
// fails. All existence checks pipelined, then the missing part created as containers (the server
// removes them once empty), pipelined too.
void contender_machine::make_parents(actions& out)
{
    parts_.clear();
    for (std::size_t pos = dir_.find('/', 1);; pos = dir_.find('/', pos + 1)) {
        parts_.push_back(pos == std::string::npos ? dir_ : dir_.substr(0, pos));
        if (pos == std::string::npos) break;
    }
    present_.assign(parts_.size(), 0);
    parts_error_ = {};
    const auto r = next_round();
    for (std::size_t i = 0; i < parts_.size(); ++i)
        out.push_back({.what = contender_act::exists, .path = parts_[i], .round = r, .index = i});
}

contender_machine::actions contender_machine::on_exists(std::uint64_t r, std::size_t i, error_code ec, bool present)
{
    actions out;
    if (finished_ || r != round_ || i >= present_.size()) return out;
    if (ec && !parts_error_) parts_error_ = ec;
    present_[i] = ec ? -1 : present ? 1 : 0;
    if (i + 1 < parts_.size()) return out;  // the last answer comes last
    if (is_retryable(parts_error_)) after_reconnect(out, resume::start);
    else if (parts_error_) fail(out, parts_error_);
    else {
        std::size_t first_missing = 0;
        while (first_missing < parts_.size() && present_[first_missing] == 1) ++first_missing;
        if (first_missing == parts_.size()) {
            forget_parts();
            do_start(out);
            return out;
        }
        const auto r2 = next_round();
        for (std::size_t k = first_missing; k < parts_.size(); ++k)
            out.push_back({.what = contender_act::create_container, .path = parts_[k], .round = r2, .index = k});
    }
    return out;
}

contender_machine::actions contender_machine::on_container_created(std::uint64_t r, std::size_t i, error_code ec)
{
    actions out;
    if (finished_ || r != round_) return out;
    if (ec == zk_errc::node_exists) ec = {};
    if (ec && !parts_error_) parts_error_ = ec;
    if (i + 1 < parts_.size()) return out;  // decide on the last answer, which comes last
    forget_parts();
    if (is_retryable(parts_error_)) after_reconnect(out, resume::start);
    else if (parts_error_) fail(out, parts_error_);
    else do_start(out);
    return out;
}

// The parts are needed until the last answer: a lock node held for long should not keep them (the
// waiters benchmark over 10,000 new paths spent 2 MB on them).
void contender_machine::forget_parts() noexcept
{
    std::vector<std::string>().swap(parts_);
    std::vector<int>().swap(present_);
}

}  // namespace zklock::detail
