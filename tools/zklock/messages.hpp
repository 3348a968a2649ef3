// What zklock says on stderr, and how it shows durations and user input in it.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace zklock_cli {

extern bool quiet;  // -q: no messages about the lock itself

void say(const std::string& text);   // always (errors)
void tell(const std::string& text);  // a message -q silences

// "1.5 s"
std::string seconds(std::chrono::milliseconds d);

// User input in a message: control and non-ASCII bytes as \xHH, and at most 100 bytes of it.
std::string shown(std::string_view s);

}  // namespace zklock_cli
