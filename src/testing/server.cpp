// testing::server: one standalone ZooKeeper server, an ensemble of one member (ensemble.cpp).
//
// Runs Debian's ZooKeeper 3.8.0 (QuorumPeerMain) as child processes on loopback for tests. The parts:
// ports.cpp (free ports, shared safely by every harness on the machine), member.cpp (one server process,
// forked on the launcher thread of launcher.cpp), ensemble.cpp (configuration, startup, readiness),
// four_letter.cpp (the four-letter words that probe it); cluster.cpp is the N-member counterpart of this file.
#include "zklock/testing/server.hpp"

#include "ensemble.hpp"

namespace zklock::testing {

using detail::ensemble;
using detail::launch;

struct server::impl {
    std::unique_ptr<ensemble> zk;
};

server::server(server_options options) : impl_(std::make_unique<impl>()) {
    impl_->zk = launch(1, options);
}
server::~server() = default;

std::string server::connect_string() const { return impl_->zk->connect_string(); }
std::uint16_t server::port() const { return impl_->zk->members[0].client.port; }
void server::stop() { impl_->zk->members[0].kill(); }
void server::start() {
    if (impl_->zk->members[0].alive()) return;
    impl_->zk->spawn(0);
    impl_->zk->wait_serving({0});
}
bool server::running() const { return impl_->zk->members[0].alive(); }
void server::freeze() { impl_->zk->members[0].freeze(); }
void server::thaw() { impl_->zk->members[0].thaw(); }
std::string server::four_letter(const std::string& command) const { return impl_->zk->four_letter(0, command); }
std::filesystem::path server::tls_certificate() const {
    return impl_->zk->tls ? impl_->zk->tls->certificate : std::filesystem::path{};
}

}  // namespace zklock::testing
