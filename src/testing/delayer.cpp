#include "delayer.hpp"

#include "zklock/error.hpp"

#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

extern "C" {
#include <libnetfilter_queue/libnetfilter_queue.h>
}

#include <boost/system/system_error.hpp>

#include <deque>
#include <future>
#include <stdexcept>
#include <string>

namespace zklock::testing::detail {
namespace {

using clock_type = std::chrono::steady_clock;

struct held {
    clock_type::time_point due;
    std::uint32_t id;
};

struct queue_state {
    std::deque<held> packets;
    const std::atomic<long long>* delay_ms;
};

int on_packet(nfq_q_handle*, nfgenmsg*, nfq_data* nfa, void* data) {
    auto& q = *static_cast<queue_state*>(data);
    if (const nfqnl_msg_packet_hdr* ph = nfq_get_msg_packet_hdr(nfa))
        q.packets.push_back({clock_type::now() + std::chrono::milliseconds(q.delay_ms->load()), ntohl(ph->packet_id)});
    return 0;
}

// What the thread tells the constructor: bound, no NFQUEUE, setns failed.
constexpr int bound = 1, no_queue = -1, no_namespace = -2;

}  // namespace

delayer::delayer(int namespace_fd) : stop_(::eventfd(0, EFD_CLOEXEC)) {
    if (stop_.get() < 0) throw_errno("eventfd");
    std::promise<int> started;
    auto outcome = started.get_future();
    thread_ = std::thread([this, namespace_fd, &started] { run(namespace_fd, started); });
    const int how = outcome.get();
    if (how == bound) return;
    thread_.join();
    if (how == no_namespace) throw std::runtime_error("zklock::testing: setns into a test host failed");
    throw boost::system::system_error(
        zklock::error::not_supported,
        "zklock::testing: network delay needs NFQUEUE (the kernel's nfnetlink_queue) in the test's namespaces");
}

delayer::~delayer() {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(stop_.get(), &one, sizeof one);
    thread_.join();
}

void delayer::run(int namespace_fd, std::promise<int>& started) {
    // set_value is the last use of `started`: the constructor may return (and destroy it) right after.
    auto report = [&](int how) { started.set_value(how); };
    if (::setns(namespace_fd, CLONE_NEWNET) != 0) return report(no_namespace);
    queue_state q{{}, &delay_ms_};
    nfq_handle* h = nfq_open();
    nfq_q_handle* qh = h ? nfq_create_queue(h, 0, &on_packet, &q) : nullptr;
    if (qh == nullptr || nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0) {
        if (qh) nfq_destroy_queue(qh);
        if (h) nfq_close(h);
        return report(no_queue);
    }
    nfq_set_queue_maxlen(qh, 16384);
    report(bound);  // `started` is gone once the constructor returns: no use of it below

    const int fd = nfq_fd(h);
    alignas(8) char buffer[65536];
    for (;;) {
        int timeout = -1;
        if (!q.packets.empty()) {
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(q.packets.front().due - clock_type::now());
            timeout = static_cast<int>(std::max<long long>(0, left.count()));
        }
        pollfd fds[2] = {{fd, POLLIN, 0}, {stop_.get(), POLLIN, 0}};
        ::poll(fds, 2, timeout);
        if (fds[1].revents != 0) break;
        if (fds[0].revents != 0) {
            const auto n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
            if (n > 0) nfq_handle_packet(h, buffer, static_cast<int>(n));  // ENOBUFS: the kernel dropped some
        }
        const auto now = clock_type::now();
        while (!q.packets.empty() && q.packets.front().due <= now) {
            nfq_set_verdict(qh, q.packets.front().id, NF_ACCEPT, 0, nullptr);
            q.packets.pop_front();
        }
    }
    // Give back what is held, then what is still in the socket, so that the unbind's answer comes next.
    // (On some runs the kernel answers the unbind with ENOENT, and libnetfilter_queue then keeps the
    // queue's 40-byte handle: test/lsan.supp names that leak.)
    for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT)) > 0;) nfq_handle_packet(h, buffer, static_cast<int>(n));
    for (const auto& p : q.packets) nfq_set_verdict(qh, p.id, NF_ACCEPT, 0, nullptr);
    nfq_destroy_queue(qh);
    nfq_close(h);
}

}  // namespace zklock::testing::detail
