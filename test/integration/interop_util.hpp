// What the interop tests share: where Debian's Curator 5.4 and its dependencies are.
#pragma once

#include <zklock/testing/server_options.hpp>

#include <string>
#include <vector>

namespace interop {

/// The class path of Debian's libcurator-recipes-java and what it needs, for the single-file Java peers.
inline const std::string curator_classpath =
    "/usr/share/java/curator-framework.jar:/usr/share/java/curator-client.jar:/usr/share/java/curator-recipes.jar:"
    "/usr/share/java/zookeeper.jar:/usr/share/java/zookeeper-jute.jar:/usr/share/java/guava.jar:"
    "/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-nop.jar:/usr/share/java/netty-handler.jar:"
    "/usr/share/java/netty-common.jar:/usr/share/java/netty-transport.jar:/usr/share/java/netty-buffer.jar:"
    "/usr/share/java/netty-resolver.jar:/usr/share/java/netty-codec.jar:"
    "/usr/share/java/netty-transport-native-epoll.jar:/usr/share/java/netty-transport-native-unix-common.jar";

/// The command that runs the single-file Java peer SOURCE with Curator, with the JVM options of the
/// harness's servers (testing::server_options::jvm_options, those of a short-lived JVM): the peer compiles
/// its source at each start, and the client compiler alone does that in less CPU (the interop tests: 104 s
/// of CPU before, 64 s after).
inline std::vector<std::string> curator_java(const std::string& source)
{
    std::vector<std::string> argv{"java"};
    const auto quick = zklock::testing::server_options{}.jvm_options;
    argv.insert(argv.end(), quick.begin(), quick.end());
    argv.insert(argv.end(), {"-cp", curator_classpath, source});
    return argv;
}

}  // namespace interop
