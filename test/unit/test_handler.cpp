// The stored-handler type: moving into an occupied handler must work (Boost 1.81's any_completion_handler
// recursed until the stack overflowed), and the wrapped handler's executor must survive the erasure.
#include <zklock/detail/handler.hpp>

#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include <map>
#include <vector>

namespace unit_handler {  // a namespace of its own: the unit tests compile as one translation unit

namespace asio = boost::asio;
using zklock::detail::handler;

BOOST_AUTO_TEST_SUITE(stored_handlers)

BOOST_AUTO_TEST_CASE(move_assignment_and_containers_work)
{
    int calls = 0;
    handler<int> a([&](boost::system::error_code, int v) { calls += v; });
    handler<int> b([&](boost::system::error_code, int v) { calls += 10 * v; });
    a = std::move(b);  // overflowed the stack with any_completion_handler in Boost 1.81
    BOOST_TEST(!b);
    std::move(a)(boost::system::error_code{}, 1);
    BOOST_TEST(calls == 10);

    std::vector<handler<>> v;
    for (int i = 0; i < 5; ++i) v.emplace_back([&, i](boost::system::error_code) { calls += i; });
    v.erase(v.begin());  // erase move-assigns the tail
    for (auto& h : v) std::move(h)(boost::system::error_code{});
    BOOST_TEST(calls == 10 + 1 + 2 + 3 + 4);
}

BOOST_AUTO_TEST_CASE(keeps_the_associated_executor_of_the_wrapped_handler)
{
    asio::io_context ioc;
    auto strand = asio::make_strand(ioc);
    bool on_strand = false;
    handler<> h(asio::bind_executor(strand, [&](boost::system::error_code) { on_strand = strand.running_in_this_thread(); }));
    asio::post(ioc, [&] {
        auto ex = asio::get_associated_executor(h);
        asio::dispatch(ex, [h = std::move(h)]() mutable { std::move(h)(boost::system::error_code{}); });
    });
    ioc.run();
    BOOST_TEST(on_strand);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unit_handler
