#include "nemesis.hpp"

#include <algorithm>
#include <chrono>
#include <random>
#include <sstream>
#include <thread>

namespace zklock_chaos {
namespace {

using namespace std::chrono_literals;
const std::vector<std::string> all = {"leader-iso", "minority", "bridge", "client-iso", "delay", "kill", "stop"};

}  // namespace

bool valid_nemesis(const std::string& name) {
    return name == "mixed" || std::find(all.begin(), all.end(), name) != all.end();
}

std::vector<std::string> parse_nemeses(const std::string& list) {
    std::vector<std::string> out;
    std::stringstream in(list);
    for (std::string name; std::getline(in, name, ',');) {
        if (!valid_nemesis(name)) return {};
        out.push_back(name);
    }
    return out;
}

void nemesis::run() {
    std::mt19937_64 rng(seed);
    auto sleep_until_stop = [&](std::chrono::milliseconds d) {  // the schedule's spacing, cut short by `stop`
        for (auto end = std::chrono::steady_clock::now() + d; !stop && std::chrono::steady_clock::now() < end;)
            std::this_thread::sleep_for(50ms);
    };
    auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    for (std::size_t round = 0; !stop; ++round) {
        sleep_until_stop(std::chrono::milliseconds(2000 + rng() % 2000));
        if (stop) break;
        std::string kind = kinds[round % kinds.size()];
        if (kind == "mixed") kind = all[pick(all.size())];
        std::optional<std::size_t> killed, frozen;
        try {
            const std::size_t leader = cl.leader(20s);
            std::vector<std::size_t> others;
            for (std::size_t m = 0; m < cl.size(); ++m)
                if (m != leader) others.push_back(m);
            const std::size_t follower = others[pick(others.size())];
            std::string what = kind;
            if (kind == "leader-iso" || kind == "minority") {
                const std::size_t alone = kind == "leader-iso" ? leader : follower;
                zklock::testing::side rest;
                for (std::size_t m = 0; m < cl.size(); ++m)
                    if (m != alone) rest.members.push_back(m), rest.clients.push_back(m);
                cl.partition({.members = {alone}, .clients = {alone}}, rest);
                what += " member=" + std::to_string(alone);
            } else if (kind == "bridge") {
                const std::size_t middle = pick(cl.size()), a = (middle + 1) % cl.size(), b = (middle + 2) % cl.size();
                cl.partition({.members = {a}, .clients = {a}}, {.members = {b}, .clients = {b}});
                what += " middle=" + std::to_string(middle);
            } else if (kind == "client-iso") {
                const std::size_t c = pick(cl.size());
                cl.isolate_client(c);
                what += " client=" + std::to_string(c);
            } else if (kind == "delay") {
                const auto d = std::chrono::milliseconds(200 + rng() % 1300);
                const std::size_t m = pick(cl.size()), c = pick(cl.size());
                cl.degrade_member(m, {.loss = 0.0, .delay = d});
                cl.degrade_client(c, {.loss = 0.2, .delay = 0ms});
                what += " member=" + std::to_string(m) + " delay_ms=" + std::to_string(d.count()) +
                        " client=" + std::to_string(c) + " loss=0.2";
            } else if (kind == "kill") {
                cl.stop(leader);
                killed = leader;
                what += " member=" + std::to_string(leader);
            } else {
                cl.freeze(leader);
                frozen = leader;
                what += " member=" + std::to_string(leader);
            }
            log.write("nemesis start " + what);
            // Shorter and longer than the library's session timeout (4 s): some sessions live, some expire.
            sleep_until_stop(std::chrono::milliseconds(2000 + rng() % 8000));
        } catch (const std::exception& e) {
            problems.push_back(kind + ": " + e.what());
        }
        try {
            cl.heal();
            if (frozen) cl.thaw(*frozen);
            if (killed) cl.start(*killed);
            log.write("nemesis heal");
        } catch (const std::exception& e) {
            problems.push_back("heal after " + kind + ": " + e.what());
        }
    }
}

}  // namespace zklock_chaos
