// Helpers for the tests that run the built programs: spawning, waiting with deadlines, temporary
// directories, free ports, and a synchronous look at ZooKeeper through a zklock::session. (What uses Asio
// is compiled once, in process_util.cpp: see test_util.hpp.)
#pragma once

#include <zklock/session.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace tools_test {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using boost::system::error_code;

/// Reaps child `pid` once it exits, within `limit`: its exit code (128+N when killed by signal N), kept in
/// `status` (which, once set, is returned at once), or nullopt if `limit` passed.
inline std::optional<int> wait_exit(pid_t pid, std::optional<int>& status, std::chrono::milliseconds limit)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!status) {
        int st = 0;
        const pid_t r = ::waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            if (WIFEXITED(st)) status = WEXITSTATUS(st);
            else if (WIFSIGNALED(st)) status = 128 + WTERMSIG(st);
            continue;
        }
        if (r < 0 && errno != EINTR) throw std::runtime_error("waitpid failed");
        if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
        std::this_thread::sleep_for(5ms);  // polling interval, not synchronization
    }
    return status;
}

/// A child process; killed (SIGKILL) and reaped by the destructor if still running.
class process {
public:
    /// Starts `argv` (searched in PATH); stdout/stderr go to the files given (else inherited).
    explicit process(const std::vector<std::string>& argv, const std::string& out_file = {},
                     const std::string& err_file = {})
    {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        if (!out_file.empty())
            posix_spawn_file_actions_addopen(&fa, 1, out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (!err_file.empty())
            posix_spawn_file_actions_addopen(&fa, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        std::vector<std::string> args = argv;
        std::vector<char*> cargs;
        for (auto& a : args) cargs.push_back(a.data());
        cargs.push_back(nullptr);
        const int err = ::posix_spawnp(&pid_, cargs[0], &fa, nullptr, cargs.data(), environ);
        posix_spawn_file_actions_destroy(&fa);
        if (err != 0) throw std::runtime_error("cannot start " + argv.at(0) + ": " + std::strerror(err));
    }
    process(const process&) = delete;
    process& operator=(const process&) = delete;
    ~process()
    {
        if (!status_) {
            ::kill(pid_, SIGKILL);
            int st = 0;
            ::waitpid(pid_, &st, 0);
        }
    }

    pid_t pid() const { return pid_; }
    void signal(int sig) const { ::kill(pid_, sig); }

    /// The exit code (128+N when killed by signal N) once it has exited, or nullopt if `limit` passed.
    std::optional<int> wait_for(std::chrono::milliseconds limit) { return wait_exit(pid_, status_, limit); }

    bool running() { return !wait_for(0ms); }

private:
    pid_t pid_ = -1;
    std::optional<int> status_;
};

/// Runs a program to completion; its exit code, or -1 if it outlived `limit` (it is then killed).
inline int run(const std::vector<std::string>& argv, std::chrono::milliseconds limit = 60s,
               const std::string& out_file = {}, const std::string& err_file = {})
{
    process p(argv, out_file, err_file);
    return p.wait_for(limit).value_or(-1);
}

/// Waits until `pred()` holds, checking every `every`; false if `limit` passes first.
inline bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit = 20s,
                       std::chrono::milliseconds every = 20ms)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        if (pred()) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(every);
    }
}

/// A fresh directory, removed with its contents by the destructor.
class temp_dir {
public:
    temp_dir()
    {
        std::string tmpl = (fs::temp_directory_path() / "zklock-tools-test-XXXXXX").string();
        if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
        path_ = tmpl;
    }
    ~temp_dir()
    {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    const fs::path& path() const { return path_; }
    std::string operator/(const std::string& name) const { return (path_ / name).string(); }

private:
    fs::path path_;
};

inline std::string read_file(const std::string& path)
{
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline bool file_exists(const std::string& path) { return fs::exists(path); }

/// A loopback TCP port nothing listens on (bound, then released: a small race, fine for tests).
std::uint16_t free_port();

/// True if something accepts TCP connections on 127.0.0.1:port.
bool listening(std::uint16_t port);

/// Runs `fn(session)` on a fresh connected session to `hosts`, synchronously; closes the session after.
template <class Result>
Result with_session(const std::string& hosts, std::function<asio::awaitable<Result>(zklock::session&)> fn)
{
    asio::io_context ioc;
    zklock::session_config cfg;
    cfg.hosts = hosts;
    zklock::session s(ioc, cfg);
    std::optional<Result> result;
    std::exception_ptr failure;
    asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<void> {
            auto [ec] = co_await s.async_connect(asio::as_tuple(asio::use_awaitable));
            if (ec) throw boost::system::system_error(ec, "connect");
            result.emplace(co_await fn(s));
            co_await s.async_close(asio::as_tuple(asio::use_awaitable));
        },
        [&](std::exception_ptr e) { failure = e; });
    ioc.run();
    if (failure) std::rethrow_exception(failure);
    return std::move(*result);
}

/// The children of `path` (empty if it does not exist).
std::vector<std::string> children(const std::string& hosts, const std::string& path);

/// The data of `path`, or nullopt if it does not exist.
std::optional<std::string> get_data(const std::string& hosts, const std::string& path);

/// Removes `path` (any version); an error throws.
void remove_node(const std::string& hosts, const std::string& path);

}  // namespace tools_test
