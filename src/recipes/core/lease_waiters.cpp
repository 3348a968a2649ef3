// Which lease nodes hold: see lease_waiters.hpp.
#include "lease_waiters.hpp"

namespace zklock::detail {

std::vector<bool> leases_holding(const std::vector<node_origin>& leases, const std::optional<node_origin>& lock_head)
{
    std::vector<bool> out;
    out.reserve(leases.size());
    for (const auto& l : leases)
        out.push_back(!lock_head || l.session != lock_head->session || l.czxid < lock_head->czxid);
    return out;
}

}  // namespace zklock::detail
