#include "tls.hpp"

#include "launcher.hpp"
#include "unique_fd.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace zklock::testing::detail {
namespace {

namespace fs = std::filesystem;

/// Runs `args` to its end (on the launcher thread, as every harness child), its output in `log`; its
/// exit status (-1 if it could not be waited for).
int run_to_end(const std::vector<std::string>& args, const fs::path& log)
{
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    unique_fd out(::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (out.get() < 0) throw std::runtime_error("zklock::testing: cannot write " + log.string());
    const pid_t pid = spawn_process(argv.data(), out.get());
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_all(const fs::path& file)
{
    std::ifstream in(file);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

tls_files make_tls_files(const fs::path& dir)
{
    fs::create_directories(dir);
    tls_files f{dir / "server.p12", dir / "server.pem", "zklock-test"};
    const fs::path log = dir / "keytool.log";
    // PKCS12 wants the key's password to be the store's.
    if (run_to_end({"/usr/bin/keytool", "-genkeypair", "-alias", "zk", "-keyalg", "RSA", "-keysize", "2048",
                    "-validity", "3650", "-dname", "CN=127.0.0.1", "-ext", "SAN=IP:127.0.0.1", "-storetype",
                    "PKCS12", "-keystore", f.keystore.string(), "-storepass", f.password, "-keypass", f.password,
                    "-noprompt"},
                   log) != 0 ||
        run_to_end({"/usr/bin/keytool", "-exportcert", "-rfc", "-alias", "zk", "-keystore", f.keystore.string(),
                    "-storepass", f.password, "-file", f.certificate.string()},
                   log) != 0)
        throw std::runtime_error("zklock::testing: keytool could not make the TLS key store: " + read_all(log));
    return f;
}

std::string send_four_letter_tls(std::uint16_t port, const std::string& command, const fs::path& ca,
                                 std::chrono::milliseconds timeout)
{
    static std::atomic<unsigned> n{0};
    const fs::path out = ca.parent_path() / ("probe-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    const auto seconds = std::to_string(std::max<long long>(1, (timeout.count() + 999) / 1000));
    // The word goes in once the handshake is done (-quiet reads stdin after it); the server answers and
    // closes. `timeout` bounds a server that accepts and never answers.
    const std::string script = "printf '%s' '" + command + "' | timeout " + seconds + " openssl s_client -connect 127.0.0.1:" +
                               std::to_string(port) + " -quiet -verify_quiet -verify_return_error -CAfile '" +
                               ca.string() + "' 2>/dev/null";
    run_to_end({"/bin/sh", "-c", script}, out);
    auto answer = read_all(out);
    std::error_code ignored;
    fs::remove(out, ignored);
    return answer;
}

}  // namespace zklock::testing::detail
