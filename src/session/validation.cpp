// Paths, host lists and session settings, checked the way the server and the C client would, so that a
// mistake fails at once with a clear error instead of a dropped connection or a wrong port.
#include <zklock/validation.hpp>

#include "core/session_timing.hpp"
#include "session_impl.hpp"

#include <charconv>

namespace zklock {
namespace {

using boost::system::error_code;

error_code fail(error e, std::string* why, std::string text)
{
    if (why) *why = std::move(text);
    return e;
}

// Decodes one UTF-8 code point at `i` (advancing it); -1 for an invalid sequence (overlong, surrogate,
// truncated, out of range).
long next_code_point(std::string_view s, std::size_t& i)
{
    const auto b0 = static_cast<unsigned char>(s[i++]);
    if (b0 < 0x80) return b0;
    int extra = b0 >= 0xF0 && b0 <= 0xF4 ? 3 : b0 >= 0xE0 ? 2 : b0 >= 0xC2 && b0 < 0xE0 ? 1 : -1;
    if (extra < 0 || i + static_cast<std::size_t>(extra) > s.size()) return -1;
    long cp = b0 & (0x3F >> extra);
    for (int k = 0; k < extra; ++k) {
        const auto b = static_cast<unsigned char>(s[i++]);
        if ((b & 0xC0) != 0x80) return -1;
        cp = (cp << 6) | (b & 0x3F);
    }
    static constexpr long smallest[] = {0, 0x80, 0x800, 0x10000};
    if (cp < smallest[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
    return cp;
}

// ZooKeeper's PathUtils.validatePath refuses these.
bool refused_code_point(long cp)
{
    return cp <= 0x1F || (cp >= 0x7F && cp <= 0x9F) || (cp >= 0xD800 && cp <= 0xF8FF) || (cp >= 0xFFF0 && cp <= 0xFFFF);
}

}  // namespace

error_code check_path(std::string_view path, std::string* why)
{
    if (!detail::valid_path(path)) {
        if (path.size() > max_path_length)
            return fail(error::invalid_path, why, "the path is " + std::to_string(path.size()) + " bytes long; at most " +
                                                      std::to_string(max_path_length) + " are accepted");
        return fail(error::invalid_path, why,
                    "it must start with '/', have no empty, '.' or '..' part and no trailing '/', and be valid "
                    "UTF-8 without control characters");
    }
    return {};
}

error_code check_lock_path(std::string_view path, std::string* why)
{
    if (auto ec = check_path(path, why)) return ec;
    if (path.size() > max_lock_path_length)
        return fail(error::invalid_path, why,
                    "a lock's path is " + std::to_string(path.size()) + " bytes long; at most " +
                        std::to_string(max_lock_path_length) + " are accepted (the lock's nodes below it must fit in " +
                        std::to_string(max_path_length) + ")");
    return {};
}

error_code check_hosts(std::string_view hosts, std::string* why)
{
    const auto slash = hosts.find('/');
    auto list = hosts.substr(0, slash);
    if (list.empty()) return fail(error::invalid_hosts, why, "no host:port before the chroot");
    if (slash != std::string_view::npos) {
        auto chroot = hosts.substr(slash);
        if (chroot != "/" && !detail::valid_path(chroot))
            return fail(error::invalid_hosts, why, "the chroot '" + std::string(chroot) + "' is not a valid path");
    }
    while (!list.empty()) {
        const auto comma = list.find(',');
        auto entry = list.substr(0, comma);
        list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
        if (comma != std::string_view::npos && list.empty())
            return fail(error::invalid_hosts, why, "a trailing ',' in the host list");
        const auto colon = entry.rfind(':');
        if (entry.empty() || colon == std::string_view::npos || colon == 0)
            return fail(error::invalid_hosts, why, "'" + std::string(entry) + "' is not host:port");
        auto host = entry.substr(0, colon), port = entry.substr(colon + 1);
        for (char c : host)
            if (static_cast<unsigned char>(c) <= ' ' || c == ',' || c == '/')
                return fail(error::invalid_hosts, why, "invalid host name '" + std::string(host) + "'");
        unsigned value = 0;
        auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
        if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || value == 0 || value > 65535)
            return fail(error::invalid_hosts, why, "invalid port '" + std::string(port) + "' (1 to 65535)");
    }
    return {};
}

error_code check_config(const session_config& c, std::string* why)
{
    using namespace std::chrono_literals;
    if (auto ec = check_hosts(c.hosts, why)) return ec;
    if (c.session_timeout < 1s || c.session_timeout > 24h)
        return fail(error::invalid_config, why,
                    "session_timeout " + std::to_string(c.session_timeout.count()) +
                        " ms is out of range (1 s to 24 h; the server negotiates it into [2, 20] ticks, 4 s to "
                        "40 s with its default 2 s tick)");
    if (c.connect_timeout <= 0ms || c.connect_timeout > 24h)
        return fail(error::invalid_config, why, "connect_timeout must be above zero and at most 24 h");
    if (c.loss_grace && *c.loss_grace <= 0ms) return fail(error::invalid_config, why, "loss_grace must be above zero");
    if (c.loss_grace && *c.loss_grace > detail::loss_grace_bound(c.session_timeout))
        return fail(error::invalid_config, why,
                    "loss_grace " + std::to_string(c.loss_grace->count()) + " ms is above " +
                        std::to_string(detail::loss_grace_bound(c.session_timeout).count()) +
                        " ms, 7/12 of session_timeout " + std::to_string(c.session_timeout.count()) +
                        " ms: the session could expire before a holder is told (docs/DESIGN.md, \"Loss "
                        "timing\"); lower it, or leave it unset for half the session timeout");
    if (const auto written = std::string_view(c.owner).substr(0, c.owner.find('\n')); written.size() > max_owner_length)
        return fail(error::invalid_config, why,
                    "owner is " + std::to_string(written.size()) + " bytes; at most " +
                        std::to_string(max_owner_length) + " are accepted (it is written into every lock node)");
    for (const auto& cred : c.credentials) {
        if (cred.scheme.empty()) return fail(error::invalid_config, why, "a credential has no scheme");
        if (cred.secret.size() > max_secret_length)
            return fail(error::invalid_config, why,
                        "a credential's secret is " + std::to_string(cred.secret.size()) + " bytes; at most " +
                            std::to_string(max_secret_length) + " are accepted");
    }
    return {};
}

namespace detail {

error_code lock_path_refusal(const session_impl& s, std::string_view path)
{
    if (path.size() <= max_lock_path_length) return {};  // any other fault is the acquire's to report
    std::string why;
    const auto ec = check_lock_path(path, &why);
    s.log->write(log_level::error, "zklock: refused the lock path " + std::string(path.substr(0, 40)) + "...: " + why);
    return ec;
}

error_code below_root_refusal(const session_impl& s, std::string_view path)
{
    return path == "/" ? error_code(zklock::error::invalid_path) : s.refusal(path);
}

bool valid_path(std::string_view path, bool allow_sequential_suffix) noexcept
{
    if (path.empty() || path.front() != '/' || path.size() > max_path_length) return false;
    if (path.size() == 1) return true;
    if (path.back() == '/' && !allow_sequential_suffix) return false;
    std::size_t start = 1;
    while (start <= path.size()) {
        auto end = path.find('/', start);
        if (end == std::string_view::npos) end = path.size();
        auto part = path.substr(start, end - start);
        const bool last = end == path.size();
        if (part.empty() && !(last && allow_sequential_suffix)) return false;
        if (part == "." || part == "..") return false;
        for (std::size_t i = 0; i < part.size();) {
            const long cp = next_code_point(part, i);
            if (cp < 0 || refused_code_point(cp)) return false;
        }
        start = end + 1;
    }
    return true;
}

}  // namespace detail
}  // namespace zklock
