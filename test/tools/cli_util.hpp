// What the tests of the `zklock` command share (test_zklock_cli.cpp, test_zklock_cli_faults.cpp,
// test_zklock_cli_flags.cpp): a ZooKeeper of their own, the command line of the binary under test (ZKLOCK_BIN,
// or $ZKLOCK_TEST_BIN to try another build of it), unique lock paths, and another process holding a lock.
#pragma once

#include "process_util.hpp"

#include <zklock/testing/server.hpp>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <signal.h>
#include <unistd.h>

#ifndef ZKLOCK_BIN
#error "ZKLOCK_BIN must name the zklock executable"
#endif

namespace cli_test {

using namespace tools_test;

inline zklock::testing::server& zk()
{
    static zklock::testing::server s;
    return s;
}

inline std::string hosts() { return zk().connect_string(); }

inline std::vector<std::string> zklock_cmd(std::vector<std::string> args)
{
    const char* other = std::getenv("ZKLOCK_TEST_BIN");
    args.insert(args.begin(), other && *other ? other : ZKLOCK_BIN);
    return args;
}

using clock_type = std::chrono::steady_clock;

inline double secs(clock_type::duration d) { return std::chrono::duration<double>(d).count(); }

/// The lock node a COMMAND wrote to `file` (echo "$ZKLOCK_NODE"), once it is there.
inline std::string node_from(const std::string& file)
{
    BOOST_REQUIRE_MESSAGE(eventually([&] { return file_exists(file); }), "COMMAND never wrote " << file);
    auto node = read_file(file);
    node.erase(node.find_last_not_of('\n') + 1);
    return node;
}

/// Shell code that writes $ZKLOCK_NODE to `file` atomically (so that a reader never sees half of it).
inline std::string write_node_to(const std::string& file)
{
    return "echo \"$ZKLOCK_NODE\" > '" + file + ".tmp' && mv '" + file + ".tmp' '" + file + "'";
}

inline std::string unique(const std::string& what)
{
    static int n = 0;
    return "/zklock-cli-test/" + what + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

/// Another process holding `path` (a zklock running `sh`) until destroyed; `node()` is its lock node.
class holder {
public:
    holder(const std::string& path, const temp_dir& dir, const std::string& zk_hosts = hosts())
        : ready_(dir / ("held-" + std::to_string(++count_))),
          proc_(std::make_unique<process>(
              zklock_cmd({"--hosts", zk_hosts, path, "--", "sh", "-c", write_node_to(ready_) + " && exec sleep 100"})))
    {
        node_ = node_from(ready_);
    }
    ~holder() { stop(); }
    void stop()
    {
        if (!proc_) return;
        proc_->signal(SIGTERM);  // zklock forwards it to sleep, then releases
        BOOST_CHECK_EQUAL(proc_->wait_for(20s).value_or(-1), 128 + SIGTERM);
        proc_.reset();
    }
    const std::string& node() const { return node_; }

private:
    static inline int count_ = 0;
    std::string ready_;
    std::unique_ptr<process> proc_;
    std::string node_;
};

inline std::string basename_of(const std::string& node) { return node.substr(node.rfind('/') + 1); }

}  // namespace cli_test
