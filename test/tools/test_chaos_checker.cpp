// The chaos test's checker (tools/chaos/checker.hpp) on logs written by hand: a clean log passes, and each
// doctored copy (one violation put in) fails it, for the reason put in. Pure: no server.
#define BOOST_TEST_MODULE zklock chaos checker
#include <boost/test/unit_test.hpp>

#include "chaos/checker.hpp"

#include <algorithm>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using zklock_chaos::check;
using zklock_chaos::verdict;

// Two mutex tenures, two readers together then a writer, two semaphore holders of two leases, a fault,
// one more mutex tenure after it, and a holder warned in time (before the next one entered).
const std::vector<std::string> clean = {
    "1000 limit sem 2",
    "2000 enter a mutex 10.0",
    "2100 write a mutex 10.0 0 0 accepted",
    "2200 exit a",
    "3000 enter b mutex 11.0",
    "3100 write b mutex 11.0 1 1 accepted",
    "3200 exit b",
    "4000 enter r1 read 12.0",
    "4100 enter r2 read 13.0",
    "4200 exit r1",
    "4300 exit r2",
    "4400 enter w write 14.0",
    "4500 write w rw 14.0 0 0 accepted",
    "4600 exit w",
    "5000 enter s1 sem 15.0",
    "5100 enter s2 sem 16.0",
    "5200 exit s1",
    "5300 exit s2",
    "6000 nemesis start kill member=0",
    "6500 enter d mutex 17.0",
    "6600 warned d",
    "7000 nemesis heal",
    "8000 enter c mutex 20.0",
    "8050 write c mutex 9.0 2 2 fenced",
    "8100 exit c",
    "9000 orphans /chaos/mutex 0",
    "9100 end",
};

verdict judge(std::vector<std::string> lines)
{
    std::string text;
    for (const auto& l : lines) text += l + "\n";
    std::istringstream in(text);
    return check(in);
}

// The clean log with `line` added (kept in time order by the checker), or a line replaced.
std::vector<std::string> with(std::initializer_list<std::string> lines)
{
    auto out = clean;
    out.insert(out.end(), lines);
    return out;
}
std::vector<std::string> replaced(const std::string& from, const std::string& to)
{
    auto out = clean;
    std::replace(out.begin(), out.end(), from, to);
    BOOST_REQUIRE(out != clean);
    return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_clean_log_passes_with_its_figures)
{
    const verdict v = judge(clean);
    BOOST_TEST(v.ok());
    BOOST_TEST(v.sections == 9u);
    BOOST_TEST(v.max_inside_mutex == 1u);
    BOOST_TEST(v.max_inside_read == 2u);
    BOOST_TEST(v.max_inside_sem == 2u);
    BOOST_TEST(v.warnings == 1u);
    BOOST_TEST(v.faults == 1u);
    BOOST_TEST(v.accepted_writes == 3u);
    BOOST_TEST(v.fenced_writes == 1u);
    BOOST_TEST(v.worst_recovery_ns == 1000);    // the heal at 7000, the mutex's next entry at 8000
    BOOST_TEST(v.longest_stall_ns == 9100 - 4400);  // the read/write lock: its last entry, then the end
}

BOOST_AUTO_TEST_CASE(the_order_of_lines_does_not_matter_their_times_do)
{
    auto shuffled = clean;
    std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(42));
    BOOST_TEST(judge(shuffled).ok());
}

BOOST_AUTO_TEST_CASE(a_second_mutex_holder_inside_is_an_overlap)
{
    const verdict v = judge(with({"3050 enter x mutex 12.0", "3060 exit x"}));
    BOOST_TEST(!v.ok());
    BOOST_TEST(v.overlaps == 1u);
}

BOOST_AUTO_TEST_CASE(a_holder_warned_after_the_next_one_entered_is_a_late_warning)
{
    auto log = with({"3050 enter x mutex 12.0", "3300 exit x"});  // b is warned at 3150, after x entered
    std::replace(log.begin(), log.end(), std::string("3200 exit b"), std::string("3150 warned b"));
    const verdict v = judge(log);
    BOOST_TEST(!v.ok());
    BOOST_TEST(v.late_warnings == 1u);
    BOOST_TEST(v.overlaps == 0u);
}

BOOST_AUTO_TEST_CASE(a_token_not_above_the_last_one_is_a_regression)
{
    const verdict v = judge(replaced("3000 enter b mutex 11.0", "3000 enter b mutex 9.5"));
    BOOST_TEST(!v.ok());
    BOOST_TEST(v.token_regressions == 1u);
}

BOOST_AUTO_TEST_CASE(a_write_from_a_stale_read_is_a_lost_update)
{
    const verdict v = judge(replaced("3100 write b mutex 11.0 1 1 accepted", "3100 write b mutex 11.0 0 1 accepted"));
    BOOST_TEST(!v.ok());
    BOOST_TEST(v.lost_updates == 1u);
}

BOOST_AUTO_TEST_CASE(a_node_left_at_the_end_is_an_orphan)
{
    const verdict v = judge(replaced("9000 orphans /chaos/mutex 0", "9000 orphans /chaos/mutex 2"));
    BOOST_TEST(!v.ok());
    BOOST_TEST(v.orphans == 2u);
}

BOOST_AUTO_TEST_CASE(a_reader_beside_a_writer_is_an_overlap)
{
    BOOST_TEST(judge(with({"4450 enter r3 read 14.5", "4460 exit r3"})).overlaps == 1u);
    BOOST_TEST(judge(with({"4150 enter w2 write 13.5", "4160 exit w2"})).overlaps == 2u);  // beside both readers
}

BOOST_AUTO_TEST_CASE(a_holder_beyond_the_semaphores_leases_is_an_overlap)
{
    const verdict v = judge(with({"5150 enter s3 sem 17.0", "5160 exit s3"}));
    BOOST_TEST(!v.ok());
    BOOST_TEST(v.overlaps >= 1u);
    BOOST_TEST(v.max_inside_sem == 3u);
}

BOOST_AUTO_TEST_CASE(an_unreadable_line_and_an_empty_run_fail)
{
    BOOST_TEST(judge(with({"8200 enter z mutex not-a-token"})).malformed == 1u);
    BOOST_TEST(judge(with({"garbage"})).malformed == 1u);
    BOOST_TEST(!judge(with({"8300 frobnicate"})).ok());
    BOOST_TEST(!judge({"1000 limit sem 2", "2000 end"}).ok());  // no section at all
}
