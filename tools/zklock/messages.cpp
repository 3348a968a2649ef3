#include "messages.hpp"

#include <cstdio>
#include <iostream>
#include <sstream>

namespace zklock_cli {

bool quiet = false;

void say(const std::string& text) { std::cerr << "zklock: " << text << "\n"; }
void tell(const std::string& text)
{
    if (!quiet) say(text);
}

std::string seconds(std::chrono::milliseconds d)
{
    std::ostringstream out;
    out << static_cast<double>(d.count()) / 1000.0 << " s";
    return out.str();
}

std::string shown(std::string_view s)
{
    std::string out;
    for (unsigned char c : s.substr(0, 100)) {
        if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
            continue;
        }
        char hex[5];
        std::snprintf(hex, sizeof hex, "\\x%02x", c);
        out += hex;
    }
    if (s.size() > 100) out += "... (" + std::to_string(s.size()) + " bytes)";
    return out;
}

}  // namespace zklock_cli
