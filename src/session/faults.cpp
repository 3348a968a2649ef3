// testing/faults.hpp: one-shot faults planned in the session, which performs them at the named request.
#include <zklock/session.hpp>
#include <zklock/testing/faults.hpp>

#include "session_impl.hpp"

namespace zklock::testing {

void lose_next_answer(const session& s, std::string kind, std::function<void()> then)
{
    s.impl()->plan_fault({std::move(kind), detail::session_impl::fault_mode::drop_after_send, std::move(then)});
}

void lose_next_applied_answer(const session& s, std::string kind, std::function<void()> then)
{
    s.impl()->plan_fault({std::move(kind), detail::session_impl::fault_mode::lose_answer, std::move(then)});
}

void disconnect_before_next_answer(const session& s, std::string kind, std::function<void()> then)
{
    s.impl()->plan_fault({std::move(kind), detail::session_impl::fault_mode::deliver_answer_late, std::move(then)});
}

void drop_connection(const session& s) { s.impl()->drop_connection(); }

}  // namespace zklock::testing
