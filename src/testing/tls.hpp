// Internal to zklock::testing: what a TLS-only server needs (server_options::tls_only). Debian's C client
// has no TLS, so the harness's own probes go through `openssl s_client`, and the key store is made with
// the JDK's keytool, both run as child processes.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>

namespace zklock::testing::detail {

struct tls_files {
    std::filesystem::path keystore;     // PKCS12, for ssl.keyStore.location
    std::filesystem::path certificate;  // the same certificate as PEM, for the client side to verify with
    std::string password;
};

/// A self-signed certificate for 127.0.0.1 (an IP subject alternative name) and its key, made in `dir`.
/// Throws std::runtime_error if keytool fails.
tls_files make_tls_files(const std::filesystem::path& dir);

/// A four-letter word to 127.0.0.1:`port` over TLS, the server verified against `ca`; "" if no answer
/// came within `timeout` (a TLS handshake with a JVM that just started takes about a second).
std::string send_four_letter_tls(std::uint16_t port, const std::string& command, const std::filesystem::path& ca,
                                 std::chrono::milliseconds timeout);

}  // namespace zklock::testing::detail
