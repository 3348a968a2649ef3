// The drain's decisions as tables: a sequence of events in, the actions out, no server and no clock.
#include "recipes/core/drain_machine.hpp"

#include <zklock/error.hpp>

#include <boost/test/unit_test.hpp>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace unit_drain_machine {  // a namespace of its own: the unit tests compile as one translation unit

using namespace zklock::detail;
using type = drain_action::type;
using phase = drain_machine::phase;

namespace {

const clock_time t0{};
const clock_time soon = t0 + std::chrono::seconds(5), later = t0 + std::chrono::seconds(30);

/// An action, in a form the table writes briefly and a failure prints.
std::string show(const drain_action& a)
{
    switch (a.what) {
    case type::stop_new_work: return "stop";
    case type::arm_deadline: return "arm " + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(a.at - t0).count());
    case type::confirm: return "confirm";
    case type::close:
        return a.ec == zklock::error::timeout ? "close at deadline"
               : a.ec                         ? "close cut short"
                                              : "close";
    case type::complete: return "complete " + std::to_string(a.id) + (a.ec ? " " + a.ec.message() : " ok");
    case type::abort: return "abort " + std::to_string(a.id);
    }
    return "?";
}

struct step {
    std::function<drain_machine::actions(drain_machine&)> event;
    std::vector<std::string> out;
};

struct row {
    const char* what;
    std::vector<step> steps;
    phase end;
};

const std::string timed_out = " " + boost::system::error_code(zklock::error::timeout).message();
const std::string refused = " " + boost::system::error_code(zklock::error::already_closed).message();
const std::string expired = " " + boost::system::error_code(zklock::error::session_expired).message();

auto start(std::uint64_t id, clock_time deadline, bool holders, boost::system::error_code over = {})
{
    return [=](drain_machine& m) { return m.start(id, deadline, holders, over); };
}
auto gone = [](drain_machine& m) { return m.holders_gone(); };
auto confirmed = [](drain_machine& m) { return m.confirmed({}); };
auto confirm_failed(boost::system::error_code why)
{
    return [=](drain_machine& m) { return m.confirmed(why); };
}
auto closed = [](drain_machine& m) { return m.closed(true); };
auto closed_unanswered = [](drain_machine& m) { return m.closed(false); };  // no server answered the close
auto deadline(bool holders)
{
    return [=](drain_machine& m) { return m.deadline_passed(holders); };
}
auto cut(std::uint64_t id, bool holders)
{
    return [=](drain_machine& m) { return m.cut_short(id, holders); };
}
auto ended(boost::system::error_code why)
{
    return [=](drain_machine& m) { return m.session_ended(why); };
}

const std::vector<row> rows = {
    {"nothing held: confirm the deletes, close, done",
     {{start(1, soon, false), {"stop", "arm 5", "confirm"}}, {confirmed, {"close"}}, {closed, {"complete 1 ok"}}},
     phase::done},
    {"holders let go in time",
     {{start(1, soon, true), {"stop", "arm 5"}}, {gone, {"confirm"}}, {confirmed, {"close"}}, {closed, {"complete 1 ok"}}},
     phase::done},
    {"the deadline passes with a holder: closed, and the caller hears timeout",
     {{start(1, soon, true), {"stop", "arm 5"}}, {deadline(true), {"close at deadline"}}, {gone, {}}, {closed, {"complete 1" + timed_out}}},
     phase::done},
    {"the deadline passes while the confirming sync is out: closed, not forced",
     {{start(1, soon, false), {"stop", "arm 5", "confirm"}}, {deadline(false), {"close at deadline"}}, {confirmed, {}},
      {closed, {"complete 1 ok"}}},
     phase::done},
    {"a second caller joins; its earlier deadline counts; both are answered once",
     {{start(1, later, true), {"stop", "arm 30"}}, {start(2, soon, true), {"arm 5"}}, {deadline(true), {"close at deadline"}},
      {closed, {"complete 1" + timed_out, "complete 2" + timed_out}}},
     phase::done},
    {"a later deadline of a second caller changes nothing",
     {{start(1, soon, true), {"stop", "arm 5"}}, {start(2, later, true), {}}},
     phase::waiting},
    {"a caller joining while the close is out is answered with the others",
     {{start(1, soon, false), {"stop", "arm 5", "confirm"}}, {confirmed, {"close"}}, {start(2, later, false), {}},
      {closed, {"complete 1 ok", "complete 2 ok"}}},
     phase::done},
    {"a drain after the end is refused",
     {{start(1, soon, false), {"stop", "arm 5", "confirm"}}, {confirmed, {"close"}}, {closed, {"complete 1 ok"}},
      {start(2, soon, false), {"complete 2" + refused}}},
     phase::done},
    {"a session already over is refused, and nothing is stopped",
     {{start(1, soon, true, zklock::error::session_expired), {"complete 1" + refused}}},
     phase::idle},
    {"a cut short: that caller is aborted now, the session closed, the other caller hears timeout",
     {{start(1, later, true), {"stop", "arm 30"}}, {start(2, later, true), {}}, {cut(1, true), {"abort 1", "close cut short"}},
      {closed, {"complete 2" + timed_out}}},
     phase::done},
    {"a cut short after the holders let go: closed, not forced",
     {{start(1, later, true), {"stop", "arm 30"}}, {start(2, later, true), {}}, {gone, {"confirm"}},
      {cut(2, false), {"abort 2", "close cut short"}}, {confirmed, {}}, {closed, {"complete 1 ok"}}},
     phase::done},
    {"a cut short that comes after its completion does nothing",
     {{start(1, soon, false), {"stop", "arm 5", "confirm"}}, {confirmed, {"close"}}, {closed, {"complete 1 ok"}},
      {cut(1, false), {}}},
     phase::done},
    {"the session expires during the drain: every caller hears it, nothing is closed",
     {{start(1, soon, true), {"stop", "arm 5"}}, {ended(zklock::error::session_expired), {"complete 1" + expired}},
      {deadline(true), {}}, {gone, {}}},
     phase::done},
    {"the confirming sync is lost with the connection: sent again, and the close waits for its answer",
     {{start(1, soon, false), {"stop", "arm 5", "confirm"}}, {confirm_failed(zklock::zk_errc::connection_loss), {"confirm"}},
      {confirm_failed(zklock::zk_errc::operation_timeout), {"confirm"}}, {confirmed, {"close"}},
      {closed, {"complete 1 ok"}}},
     phase::done},
    {"the sync is lost and the connection does not come back: the deadline closes, and says timeout",
     {{start(1, soon, true), {"stop", "arm 5"}}, {gone, {"confirm"}},
      {confirm_failed(zklock::zk_errc::connection_loss), {"confirm"}}, {deadline(false), {"close at deadline"}},
      {confirmed, {}}, {closed, {"complete 1" + timed_out}}},
     phase::done},
    // Issue 48.3: with 2 of 3 servers down the releases and the close reached no server, and the drain said
    // success while the nodes stayed until the session expired.
    {"the close reaches no server after the deadline: the caller hears timeout",
     {{start(1, soon, false), {"stop", "arm 5", "confirm"}}, {deadline(false), {"close at deadline"}},
      {closed_unanswered, {"complete 1" + timed_out}}},
     phase::done},
    {"the releases confirmed, then the close reaches no server: nothing of the locks is left, success",
     {{start(1, soon, false), {"stop", "arm 5", "confirm"}}, {confirmed, {"close"}},
      {closed_unanswered, {"complete 1 ok"}}},
     phase::done},
    {"a sync refused for another reason does not loop: closed",
     {{start(1, soon, false), {"stop", "arm 5", "confirm"}}, {confirm_failed(zklock::zk_errc::no_auth), {"close"}},
      {closed, {"complete 1 ok"}}},
     phase::done},
    {"our own close ends the session: closed() answers, not session_ended",
     {{start(1, soon, true), {"stop", "arm 5"}}, {deadline(true), {"close at deadline"}},
      {ended(zklock::error::session_closed), {}}, {closed, {"complete 1" + timed_out}}},
     phase::done},
};

}  // namespace

BOOST_AUTO_TEST_SUITE(drain_machine_table)

BOOST_AUTO_TEST_CASE(every_row)
{
    for (const auto& r : rows)
        BOOST_TEST_CONTEXT(r.what)
        {
            drain_machine m;
            for (std::size_t i = 0; i < r.steps.size(); ++i)
                BOOST_TEST_CONTEXT("step " << i)
                {
                    std::vector<std::string> got;
                    for (const auto& a : r.steps[i].event(m)) got.push_back(show(a));
                    BOOST_TEST(got == r.steps[i].out, boost::test_tools::per_element());
                }
            BOOST_TEST(static_cast<int>(m.at()) == static_cast<int>(r.end));
        }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_drain_machine
