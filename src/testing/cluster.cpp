// testing::cluster: an ensemble of N ZooKeeper servers on loopback (see server.cpp for the parts).
#include "zklock/testing/server.hpp"

#include "ensemble.hpp"
#include "four_letter.hpp"

#include <stdexcept>

namespace zklock::testing {

using detail::ensemble;
using detail::launch;
using detail::send_four_letter;

struct cluster::impl {
    std::unique_ptr<ensemble> zk;
};

cluster::cluster(std::size_t size, server_options options) : impl_(std::make_unique<impl>()) {
    if (size == 0) throw std::invalid_argument("zklock::testing::cluster: size must be at least 1");
    impl_->zk = launch(size, options);
}
cluster::~cluster() = default;

std::string cluster::connect_string() const { return impl_->zk->connect_string(); }
std::size_t cluster::size() const { return impl_->zk->members.size(); }
std::uint16_t cluster::client_port(std::size_t member) const { return impl_->zk->at(member).client.port; }
void cluster::stop(std::size_t member) { impl_->zk->at(member).kill(); }
void cluster::start(std::size_t member) {
    if (impl_->zk->at(member).alive()) return;
    impl_->zk->spawn(member);
    impl_->zk->wait_serving({member});
}
bool cluster::running(std::size_t member) const { return impl_->zk->at(member).alive(); }
void cluster::freeze(std::size_t member) { impl_->zk->at(member).freeze(); }
void cluster::thaw(std::size_t member) { impl_->zk->at(member).thaw(); }
std::size_t cluster::leader(std::chrono::milliseconds timeout) const { return impl_->zk->wait_leader(timeout); }
std::string cluster::four_letter(std::size_t member, const std::string& command) const {
    return send_four_letter(impl_->zk->at(member).client.port, command);
}

}  // namespace zklock::testing
