// testing::cluster: an ensemble of N ZooKeeper servers on loopback, or each on a host of its own on a
// network whose links can be cut (network.cpp); see server.cpp for the parts.
#include "zklock/testing/cluster.hpp"

#include "ensemble.hpp"
#include "network.hpp"
#include "reconfig.hpp"

#include "zklock/error.hpp"

#include <boost/system/system_error.hpp>

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace zklock::testing {

using detail::ensemble;
using detail::launch;
using detail::network;

struct cluster::impl {
    std::unique_ptr<network> net;  // declared first: it outlives the members running on it
    std::unique_ptr<ensemble> zk;
    std::vector<std::size_t> clients;  // client c is network host clients[c]

    network& partitionable() const {
        if (!net)
            throw boost::system::system_error(zklock::error::not_supported,
                                              "zklock::testing::cluster: links can be cut only on a cluster made "
                                              "with server_options::partitionable");
        return *net;
    }
    std::size_t client_host(std::size_t client) const {
        partitionable();
        if (client >= clients.size()) throw std::out_of_range("zklock::testing::cluster: no such client machine");
        return clients[client];
    }
    void check_member(std::size_t member) const {
        if (member >= zk->members.size()) throw std::out_of_range("zklock::testing::cluster: no such member");
    }
};

cluster::cluster(std::size_t size, server_options options) : impl_(std::make_unique<impl>()) {
    if (size == 0) throw std::invalid_argument("zklock::testing::cluster: size must be at least 1");
    if (options.partitionable) impl_->net = std::make_unique<network>(size);
    impl_->zk = launch(size, options, impl_->net.get());
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
    return impl_->zk->four_letter(member, command);
}

std::size_t cluster::add_member() {
    if (!impl_->zk->options.reconfig_enabled || impl_->net)
        throw boost::system::system_error(zklock::error::not_supported,
                                          "zklock::testing::cluster: members are added only to a loopback cluster made "
                                          "with server_options::reconfig_enabled");
    return impl_->zk->add_member();
}

void cluster::reconfigure(const std::vector<std::size_t>& joining, const std::vector<std::size_t>& leaving) {
    auto& zk = *impl_->zk;
    if (!zk.options.reconfig_enabled)
        throw boost::system::system_error(zklock::error::not_supported,
                                          "zklock::testing::cluster: reconfigure needs server_options::reconfig_enabled");
    std::string join, leave;
    for (auto i : joining) join += (join.empty() ? "" : ",") + std::string("server.") + std::to_string(zk.at(i).id) + '=' + zk.server_spec(zk.at(i));
    for (auto i : leaving) leave += (leave.empty() ? "" : ",") + std::to_string(zk.at(i).id);
    // Through a voting member that stays, so that the answer is not lost with a leaving one.
    std::optional<std::size_t> via;
    for (std::size_t i = 0; i < zk.members.size() && !via; ++i)
        if (zk.members[i].voting && zk.members[i].alive() &&
            std::find(leaving.begin(), leaving.end(), i) == leaving.end())
            via = i;
    if (!via) throw std::runtime_error("zklock::testing::cluster: no running member stays to send the reconfig to");
    detail::reconfig(zk.members[*via].address + ':' + std::to_string(zk.members[*via].client.port), join, leave);
    for (auto i : joining) zk.at(i).voting = true;
    for (auto i : leaving) zk.at(i).voting = false;
}

std::size_t cluster::add_client() {
    impl_->clients.push_back(impl_->partitionable().add_host());
    return impl_->clients.size() - 1;
}

std::string cluster::client_namespace(std::size_t client) const {
    return impl_->net->namespace_name(impl_->client_host(client));
}

void cluster::enter_client(std::size_t client) const { impl_->net->enter(impl_->client_host(client)); }

void cluster::partition(const side& a, const side& b) {
    network& net = impl_->partitionable();
    auto hosts = [&](const side& s) {
        std::vector<std::size_t> out;
        for (auto m : s.members) {
            impl_->check_member(m);
            out.push_back(m);
        }
        for (auto c : s.clients) out.push_back(impl_->client_host(c));
        return out;
    };
    for (auto x : hosts(a))
        for (auto y : hosts(b)) net.cut(x, y);
    net.apply();
}

void cluster::isolate(std::size_t member) {
    side rest;
    for (std::size_t m = 0; m < size(); ++m)
        if (m != member) rest.members.push_back(m);
    for (std::size_t c = 0; c < impl_->clients.size(); ++c) rest.clients.push_back(c);
    partition({.members = {member}, .clients = {}}, rest);
}

void cluster::isolate_client(std::size_t client) {
    side all;
    for (std::size_t m = 0; m < size(); ++m) all.members.push_back(m);
    partition({.members = {}, .clients = {client}}, all);
}

void cluster::degrade_member(std::size_t member, link_quality q) {
    network& net = impl_->partitionable();
    impl_->check_member(member);
    net.set_quality(member, q);
    net.apply();
}

void cluster::degrade_client(std::size_t client, link_quality q) {
    impl_->net->set_quality(impl_->client_host(client), q);
    impl_->net->apply();
}

void cluster::heal() {
    network& net = impl_->partitionable();
    net.heal_all();
    net.apply();
}

}  // namespace zklock::testing
