// What a session logs, kept for a test to read. Owned through a shared_ptr by the session's log sink: the
// C client may still log from a helper thread after the session is gone, so the sink must not point at
// the test's locals.
#pragma once

#include <zklock/config.hpp>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace test {

class log_capture {
public:
    /// A sink for session_config::log that appends to `into`.
    static zklock::log_sink sink(const std::shared_ptr<log_capture>& into)
    {
        return [into](zklock::log_level, std::string_view text) {
            std::lock_guard<std::mutex> l(into->mu_);
            into->lines_.emplace_back(text);
        };
    }
    /// Whether a line logged so far contains `what`.
    bool said(const std::string& what) const
    {
        std::lock_guard<std::mutex> l(mu_);
        return std::any_of(lines_.begin(), lines_.end(), [&](const std::string& s) { return s.find(what) != std::string::npos; });
    }

private:
    mutable std::mutex mu_;
    std::vector<std::string> lines_;
};

}  // namespace test
