// What ZooKeeper publishes of its membership in /zookeeper/config (3.5+), read as the addresses a client
// connects to. Pure: the session (names.cpp) reads the node and hands the list to the C client.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace zklock::detail {

/// The client addresses ("host:port", "[v6]:port") of every member of a /zookeeper/config text, in the
/// order of the server lines; observers included (clients may use them), and one address once. A line
/// looks like "server.1=10.0.0.1:2888:3888:participant;10.0.0.1:2181"; the part after ';' is the client
/// address, "[addr:]port", where a missing or wildcard address (0.0.0.0, [::]) means the server's own host.
/// A member without a client part (a static configuration of before 3.5) gives nothing: an empty result
/// means "nothing to follow".
std::vector<std::string> client_addresses(std::string_view config);

}  // namespace zklock::detail
