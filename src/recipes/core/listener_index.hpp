// Listeners (of a loss, of a revocation request) known by their id and by the holder they listen to.
//
// Many holders may share a node (readers), each with listeners: a release takes only its own holder's,
// in O(log n + its own), never walking everybody's.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace zklock::detail {

struct no_payload {};

template <class Payload = no_payload>
class listener_index {
public:
    using entry = std::pair<std::uint64_t, Payload>;  // listener id, what it carries (its handler)

    void add(std::uint64_t id, std::uint64_t holder, Payload p = {})
    {
        by_id_.emplace(id, std::make_pair(holder, std::move(p)));
        by_holder_.emplace(holder, id);
    }
    /// Takes listener `id` out; false if there is none.
    bool remove(std::uint64_t id, Payload* out = nullptr)
    {
        auto it = by_id_.find(id);
        if (it == by_id_.end()) return false;
        by_holder_.erase({it->second.first, id});
        if (out) *out = std::move(it->second.second);
        by_id_.erase(it);
        return true;
    }
    /// Takes out every listener of `holder`, oldest first.
    std::vector<entry> take(std::uint64_t holder)
    {
        std::vector<entry> out;
        for (auto it = by_holder_.lower_bound({holder, 0}); it != by_holder_.end() && it->first == holder;) {
            auto l = by_id_.find(it->second);
            out.emplace_back(it->second, std::move(l->second.second));
            by_id_.erase(l);
            it = by_holder_.erase(it);
        }
        return out;
    }
    /// Takes out every listener, oldest first.
    std::vector<entry> take_all()
    {
        std::vector<entry> out;
        for (auto& [id, l] : by_id_) out.emplace_back(id, std::move(l.second));
        by_id_.clear();
        by_holder_.clear();
        return out;
    }

private:
    std::map<std::uint64_t, std::pair<std::uint64_t, Payload>> by_id_;  // id -> holder, payload
    std::set<std::pair<std::uint64_t, std::uint64_t>> by_holder_;        // (holder, id)
};

}  // namespace zklock::detail
