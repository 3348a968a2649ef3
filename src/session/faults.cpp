// testing/faults.hpp: one-shot faults planned in the session, which performs them at the named request.
#include <zklock/session.hpp>
#include <zklock/testing/faults.hpp>

#include "session_impl.hpp"

namespace zklock::testing {

// (zklock::detail spelled out: in a unity batch, zklock::testing::detail exists too.)
using fault_mode = zklock::detail::session_impl::fault_mode;

void lose_next_answer(const session& s, std::string kind, std::function<void()> then)
{
    s.impl()->plan_fault({std::move(kind), fault_mode::drop_after_send, std::move(then)});
}

void lose_next_applied_answer(const session& s, std::string kind, std::function<void()> then)
{
    s.impl()->plan_fault({std::move(kind), fault_mode::lose_answer, std::move(then)});
}

void disconnect_before_next_answer(const session& s, std::string kind, std::function<void()> then)
{
    s.impl()->plan_fault({std::move(kind), fault_mode::deliver_answer_late, std::move(then)});
}

void drop_connection(const session& s) { s.impl()->drop_connection(); }

}  // namespace zklock::testing
