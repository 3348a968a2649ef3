// Following ZooKeeper's host names and membership while the session lives.
// - Names: on Kubernetes a server comes back under its name with a new address; a client that resolved the
//   names once can then reach no server until its session expires, and expiry is final (ZooKeeper's
//   ZOOKEEPER-2184, still open in kazoo). The C client resolves names itself only on the event loop,
//   blocking; zklock gives it address literals and resolves the names again here, off the loop, while
//   nothing answers.
// - Membership: ZooKeeper 3.5+ publishes its members in /zookeeper/config, and `reconfig` changes them at
//   run time. With session_config::follow_ensemble the node is read at every connect and watched, and its
//   members' client addresses replace the host list (Curator's EnsembleTracker).
#include "c_client.hpp"
#include "core/ensemble_config.hpp"
#include "session_impl.hpp"

#include <algorithm>

namespace zklock::detail {

namespace {
/// The addresses of "a:1,b:2", in order: a name's resolver may list the same addresses in another order
/// each time (round-robin DNS), which is no change.
std::vector<std::string> address_set(const std::string& list)
{
    std::vector<std::string> out;
    for (std::size_t at = 0; at <= list.size();) {
        const auto comma = std::min(list.find(',', at), list.size());
        if (comma > at) out.push_back(list.substr(at, comma - at));
        at = comma + 1;
    }
    std::sort(out.begin(), out.end());
    return out;
}
}  // namespace

void session_impl::resolve_off_loop(std::string hosts, std::function<void(std::string, std::string)> then)
{
    off_loop([link = link_, w = weak_from_this(), hosts = std::move(hosts), resolver = cfg.resolver,
              then = std::move(then)]() mutable {
        auto resolved = resolve_hosts(hosts, resolver);
        link->post([w, then = std::move(then), addresses = addresses_of(resolved.list),
                    names = std::move(resolved.unresolved)] {
            if (auto self = w.lock()) then(addresses, names);
        });
    });
}

void session_impl::use_addresses(const std::string& addresses, const std::string& unresolved, const std::string& why)
{
    if (!zh_ || is_final(state) || addresses.empty() || address_set(addresses) == address_set(addresses_)) return;
    int rc;
    {
        c_call scope(log.get());
        // The C client compares address lists by IP alone (addrvec_eq ignores the port), so a list whose
        // servers only moved to other ports would be ignored. A list one entry longer never equals the old
        // one: hand that over first (the new list with its first address twice), then the list itself,
        // which differs from that in length too. No other address is ever named.
        const auto longer = addresses + "," + addresses.substr(0, addresses.find(','));
        rc = zoo_set_servers(zh_, longer.c_str());
        if (rc == ZOK) rc = zoo_set_servers(zh_, addresses.c_str());
        // While disconnected, move it off the address it was trying to the new list's next one.
        if (rc == ZOK && state != session_state::connected) zoo_cycle_next_server(zh_);
    }
    // Connected to a server the new list leaves out, or moving for balance: the C client closed the
    // connection, silently.
    notice_silent_close();
    if (rc != ZOK) {
        log->write(log_level::error, "zklock: cannot give the C client the new addresses " + addresses + ": " + zerror(rc));
        return;
    }
    log->write(log_level::warning, "zklock: " + why + ": ZooKeeper is now at " + addresses + " (it was at " + addresses_ +
                                       ")" + (unresolved.empty() ? "" : "; unresolved: " + unresolved));
    addresses_ = addresses;
    kick();
}

void session_impl::follow_names()
{
    if (state != session_state::connecting || !zh_ || resolving_) return;
    resolving_ = true;
    resolve_off_loop(followed_hosts_, [this, hosts = followed_hosts_](std::string addresses, std::string unresolved) {
        resolving_ = false;
        if (state != session_state::connecting) return;  // connected meanwhile, or ended
        // The ensemble's membership changed while these names were being resolved: they are not followed any more.
        if (hosts != followed_hosts_) return follow_names();
        use_addresses(addresses, unresolved, "the host names resolve to other addresses");
        follow_names_after(follow_names_every);
    });
}

void session_impl::follow_names_after(std::chrono::milliseconds delay)
{
    resolve_timer_.expires_after(delay);
    resolve_timer_.async_wait([w = weak_from_this()](error_code ec) {
        if (auto self = w.lock(); self && !ec) self->follow_names();
    });
}

void session_impl::follow_ensemble()
{
    // The C client keeps an armed watch across reconnects: read again only when it is not armed.
    if (!cfg.follow_ensemble || state != session_state::connected || reading_config_ || config_watch_.armed()) return;
    reading_config_ = true;
    get_config(&config_watch_, [w = weak_from_this()](error_code ec, std::string text, stat) {
        auto self = w.lock();
        if (!self) return;
        self->reading_config_ = false;
        if (ec) return;  // lost with the connection: read at the next connect
        if (const auto members = client_addresses(text); !members.empty()) {
            std::string hosts;
            for (const auto& m : members) hosts += (hosts.empty() ? "" : ",") + m;
            if (address_set(hosts) != address_set(self->followed_hosts_)) {
                // Answers of lookups started earlier may come later: only the newest membership is applied.
                const auto gen = ++self->membership_gen_;
                std::string at;
                if (self->zh_) {  // the C client's shared state (its address printing) under its mutex
                    c_call scope(self->log.get());
                    at = zoo_get_current_server(self->zh_);
                }
                self->resolve_off_loop(hosts, [self = self.get(), hosts, gen, at](std::string addresses, std::string unresolved) {
                    if (gen != self->membership_gen_) return;
                    if (addresses.empty()) {  // keep following names that still resolve
                        self->log->write(log_level::error, "zklock: the ensemble's new members do not resolve: " + unresolved);
                        return;
                    }
                    if (!self->trust_membership(addresses, at)) return;
                    self->followed_hosts_ = hosts;
                    self->use_addresses(addresses, unresolved, "the ensemble's membership changed");
                });
            }
        }
        self->config_watch_.async_wait([w](error_code wec, watch_event) {
            if (auto s = w.lock(); s && !wec) s->follow_ensemble();
        });
    });
}

// The members' published addresses are followed only once they have been seen to be the addresses this
// client reaches: the first membership read must list the server the session is on. Behind NAT or
// mapped ports the published ones are the servers' own, and following them would leave every server
// out of reach at the next disconnect.
bool session_impl::trust_membership(const std::string& addresses, const std::string& connected_to)
{
    if (membership_trusted_) return true;
    const auto published = address_set(addresses);
    if (std::find(published.begin(), published.end(), connected_to) != published.end()) return membership_trusted_ = true;
    if (!std::exchange(membership_distrust_logged_, true))
        log->write(log_level::warning, "zklock: the ensemble publishes its members at " + addresses + ", but this client "
                                       "reaches it at " + connected_to + ", which is not among them: the host list given "
                                       "is kept (session_config::follow_ensemble)");
    return false;
}

}  // namespace zklock::detail
