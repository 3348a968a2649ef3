// Compiles against the installed headers and links the installed libraries.
#include <zklock/mutex.hpp>
#include <zklock/testing/server.hpp>

#include <iostream>

int main()
{
    boost::asio::io_context ioc;
    zklock::session s(ioc, zklock::session_config{});
    zklock::mutex m(s, "/locks/consumer");
    std::cout << m.path() << ": " << boost::system::error_code(zklock::error::timeout).message() << "\n";
    return s.state() == zklock::session_state::idle ? 0 : 1;
}
