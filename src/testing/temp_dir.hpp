// Internal to zklock::testing: the servers' temporary directories.
#pragma once

#include <filesystem>

namespace zklock::testing::detail {

/// A mkdtemp directory, removed with everything in it on destruction.
struct temp_dir {
    std::filesystem::path path;

    temp_dir() = default;
    /// A new directory `prefix`XXXXXX in `root` (created if need be; empty: $TMPDIR, else /tmp).
    temp_dir(std::filesystem::path root, const char* prefix);
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    ~temp_dir();
};

}  // namespace zklock::testing::detail
