#include "temp_dir.hpp"

#include "unique_fd.hpp"

#include <cstdlib>
#include <string>
#include <system_error>

namespace zklock::testing::detail {

namespace fs = std::filesystem;

temp_dir::temp_dir(fs::path root, const char* prefix) {
    if (root.empty()) {
        const char* tmp = std::getenv("TMPDIR");
        root = (tmp && *tmp) ? tmp : "/tmp";
    }
    fs::create_directories(root);
    std::string pattern = (root / (std::string(prefix) + "XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) throw_errno("mkdtemp " + pattern);
    path = pattern;
}

temp_dir::~temp_dir() {
    std::error_code ignored;
    if (!path.empty()) fs::remove_all(path, ignored);
}

}  // namespace zklock::testing::detail
