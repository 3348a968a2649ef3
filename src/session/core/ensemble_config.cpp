#include "ensemble_config.hpp"

#include <algorithm>

namespace zklock::detail {

namespace {

/// The host of "host:port..." or "[v6]:port...": up to the first ':' outside brackets.
std::string_view host_of(std::string_view address)
{
    if (address.starts_with('[')) {
        const auto close = address.find(']');
        return close == std::string_view::npos ? std::string_view{} : address.substr(0, close + 1);
    }
    return address.substr(0, address.find(':'));
}

bool is_wildcard(std::string_view host) { return host.empty() || host == "0.0.0.0" || host == "[::]" || host == "::"; }

bool is_port(std::string_view text)
{
    return !text.empty() && text.size() <= 5 &&
           std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::vector<std::string> client_addresses(std::string_view config)
{
    std::vector<std::string> out;
    while (!config.empty()) {
        const auto eol = config.find('\n');
        std::string_view line = config.substr(0, eol);
        config = eol == std::string_view::npos ? std::string_view{} : config.substr(eol + 1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (!line.starts_with("server.")) continue;
        const auto eq = line.find('=');
        const auto semi = line.find(';');
        if (eq == std::string_view::npos || semi == std::string_view::npos || semi < eq) continue;
        const auto server = line.substr(eq + 1, semi - eq - 1);
        const auto client = line.substr(semi + 1);
        // "[addr:]port": the port is after the last ':' (an IPv6 address is in brackets).
        const auto colon = client.rfind(':');
        const bool bracketed_tail = colon != std::string_view::npos && client.find(']', colon) != std::string_view::npos;
        const auto port = colon == std::string_view::npos || bracketed_tail ? client : client.substr(colon + 1);
        auto host = colon == std::string_view::npos || bracketed_tail ? std::string_view{} : client.substr(0, colon);
        if (!is_port(port)) continue;
        if (is_wildcard(host)) host = host_of(server);
        if (host.empty()) continue;
        std::string address = std::string(host) + ":" + std::string(port);
        if (std::find(out.begin(), out.end(), address) == out.end()) out.push_back(std::move(address));
    }
    return out;
}

}  // namespace zklock::detail
