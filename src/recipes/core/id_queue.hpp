// Waiters in the order of their ids, in one buffer a queue: they join at the back, are granted from the
// front, and one that leaves from the middle (cancelled, timed out) leaves a hole until the front passes
// it or holes outnumber waiters.
//
// Why not a std::map: a map makes a heap block a waiter and frees it when the waiter leaves. With
// 100,000 waiters over 10,000 paths those frees come in an order other than the allocations', and glibc's
// allocator spent a third of the drain sorting them (docs/speed.md). Here a path's waiters share one
// block, kept while a few wait and given back when the queue empties.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace zklock::detail {

template <class T>
class id_queue {
public:
    /// Adds `id`, which must not be here. Ids usually come in increasing order (a queue's counter); one
    /// that arrives late (its caller's thread hopped later) is put in its place.
    T& emplace(std::uint64_t id, T value)
    {
        auto at = slots_.end();
        if (!slots_.empty() && slots_.back().id >= id) at = lower(id);
        assert(at == slots_.end() || at->id != id);
        ++live_;
        return *slots_.insert(at, slot{id, std::move(value)})->value;
    }
    /// The waiter `id`, or null.
    T* find(std::uint64_t id)
    {
        auto it = locate(id);
        return it != slots_.end() ? &*it->value : nullptr;
    }
    /// Takes waiter `id` out; none if it is not here.
    std::optional<T> take(std::uint64_t id)
    {
        auto it = locate(id);
        if (it == slots_.end()) return std::nullopt;
        std::optional<T> out = std::move(it->value);
        it->value.reset();
        --live_;
        tidy();
        return out;
    }
    bool erase(std::uint64_t id) { return take(id).has_value(); }

    /// The waiter with the lowest id (the queue is not empty).
    std::uint64_t front_id() const noexcept { return slots_[head_].id; }
    T& front() noexcept { return *slots_[head_].value; }
    void pop_front()
    {
        slots_[head_].value.reset();
        --live_;
        tidy();
    }

    std::size_t size() const noexcept { return live_; }
    bool empty() const noexcept { return live_ == 0; }
    void clear() noexcept
    {
        slots_ = std::vector<slot>();
        head_ = live_ = 0;
    }
    /// Calls f(id, value) for each waiter, lowest id first.
    template <class F>
    void for_each(F&& f) const
    {
        for (auto i = head_; i < slots_.size(); ++i)
            if (slots_[i].value) f(slots_[i].id, *slots_[i].value);
    }

private:
    struct slot {
        std::uint64_t id;
        std::optional<T> value;  // none: a hole
    };
    using iterator = typename std::vector<slot>::iterator;
    static constexpr std::size_t kept_empty = 8;  // the buffer an empty queue keeps, in waiters

    iterator lower(std::uint64_t id)
    {
        return std::lower_bound(slots_.begin() + static_cast<std::ptrdiff_t>(head_), slots_.end(), id,
                                [](const slot& s, std::uint64_t v) { return s.id < v; });
    }
    /// The slot of waiter `id`, or end() if it is not here (never here, or left: a hole).
    iterator locate(std::uint64_t id)
    {
        auto it = lower(id);
        return it != slots_.end() && it->id == id && it->value ? it : slots_.end();
    }
    /// Keeps the front and the back on waiters, and the holes fewer than the waiters (amortized O(1)).
    void tidy()
    {
        if (live_ == 0) {
            if (slots_.capacity() > kept_empty) slots_ = std::vector<slot>();
            slots_.clear();
            head_ = 0;
            return;
        }
        while (!slots_[head_].value) ++head_;
        while (!slots_.back().value) slots_.pop_back();
        const auto spread = slots_.size() - head_;
        if (head_ > spread || spread > 2 * live_ + kept_empty) {
            std::erase_if(slots_, [](const slot& s) { return !s.value; });
            head_ = 0;
        }
    }

    std::vector<slot> slots_;
    std::size_t head_ = 0;  // the first waiter (slots before it are spent)
    std::size_t live_ = 0;
};

}  // namespace zklock::detail
