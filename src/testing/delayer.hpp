// Internal to zklock::testing: network delay without sch_netem. A host's filter table sends its outgoing
// packets to NFQUEUE 0 of its namespace; this thread, bound to that queue inside the namespace, gives each
// packet back (NF_ACCEPT) `delay` after it arrived, in arrival order.
#pragma once

#include "unique_fd.hpp"

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

namespace zklock::testing::detail {

class delayer {
public:
    /// Starts the thread in the namespace of `namespace_fd` and waits until it is bound to the queue.
    /// Throws not_supported if the kernel has no NFQUEUE (nfnetlink_queue).
    explicit delayer(int namespace_fd);
    /// Gives back every packet still held, and ends the thread.
    ~delayer();
    delayer(const delayer&) = delete;
    delayer& operator=(const delayer&) = delete;

    void set_delay(std::chrono::milliseconds d) { delay_ms_ = d.count(); }

private:
    void run(int namespace_fd, std::promise<int>& started);

    std::atomic<long long> delay_ms_{0};
    unique_fd stop_;  // an eventfd: written by the destructor
    std::thread thread_;
};

}  // namespace zklock::testing::detail
