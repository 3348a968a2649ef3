#include "zklock_chaos_injector.hpp"

#include <chrono>
#include <exception>
#include <random>

namespace zklock_chaos {

using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;

void injector::loop()
{
    std::mt19937_64 rng(seed);
    auto ms = [&](int lo, int hi) { return std::chrono::milliseconds(std::uniform_int_distribution(lo, hi)(rng)); };
    std::vector<bool> frozen(cl.size());
    for (bool kill = true; !stop; kill = !kill) {
        for (const auto end = clk::now() + ms(500, 3000); !stop && clk::now() < end;)
            std::this_thread::sleep_for(50ms);
        if (stop) break;
        try {
            const auto i = cl.leader(30s);
            if (kill) {  // a crash: clients of the leader reconnect elsewhere, the others elect anew
                cl.stop(i);
                std::this_thread::sleep_for(ms(500, 2000));
                cl.start(i);
            } else {  // a pause; a third outlast the 4 s session timeout, so that sessions really expire
                cl.freeze(i);
                frozen[i] = true;
                std::this_thread::sleep_for(rng() % 3 == 0 ? ms(4000, 6000) : ms(500, 3000));
                cl.thaw(i);
                frozen[i] = false;
            }
            ++faults;
        } catch (const std::exception& e) {
            problems.push_back(e.what());
        }
    }
    for (std::size_t i = 0; i < cl.size(); ++i) {  // heal every member before the final checks
        try {
            if (frozen[i]) cl.thaw(i);
            if (!cl.running(i)) cl.start(i);
        } catch (const std::exception& e) {
            problems.push_back(std::string("healing: ") + e.what());
        }
    }
    done = true;
}

}  // namespace zklock_chaos
