// What the mutex's integration tests share (test_mutex.cpp, test_mutex_waiting.cpp): a number of sessions
// on the shared server.
#pragma once

#include "test_util.hpp"

#include <cstddef>
#include <memory>
#include <vector>

namespace mutex_test {

namespace asio = boost::asio;
using test::config_for;
using test::shared_server;
using test::use_awaitable;
using zklock::session;

/// Sessions on the shared server, connected.
struct sessions {
    asio::io_context& ioc;
    std::vector<std::unique_ptr<session>> all;
    sessions(asio::io_context& io, std::size_t n) : ioc(io)
    {
        for (std::size_t i = 0; i < n; ++i)
            all.push_back(std::make_unique<session>(ioc, config_for(shared_server().connect_string())));
    }
    asio::awaitable<void> connect()
    {
        for (auto& s : all) co_await s->async_connect(use_awaitable);
    }
    session& operator[](std::size_t i) { return *all[i]; }
    std::size_t size() const { return all.size(); }
};

}  // namespace mutex_test
