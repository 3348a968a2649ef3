// The fenced resource of zklock_chaos: a counter in a file, shared by every client machine (as a storage
// service outside the partition would be). A write carries the writer's fencing token and is refused if a
// greater token has written before (Kleppmann's fencing). Each write is logged under the file's lock, so
// the log's order of writes is the resource's: the checker finds a lost update where a write's value was
// read before someone else's accepted write (read != the value it replaced).
#pragma once

#include "log.hpp"

#include <string>

namespace zklock_chaos {

class fenced_counter {
public:
    fenced_counter(std::string path, std::string name) : path_(std::move(path)), name_(std::move(name)) {}

    long read() const;
    /// Writes read_value + 1 unless a greater token wrote before; logs "write HOLDER NAME TOKEN READ PREV
    /// accepted|fenced". `token` is "ZXID.LOCAL".
    bool write(const std::string& token, long read_value, const std::string& holder, event_log& log) const;

private:
    std::string path_, name_;
};

}  // namespace zklock_chaos
