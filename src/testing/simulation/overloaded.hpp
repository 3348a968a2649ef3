// std::visit over several lambdas: the models' variants of requests and transactions.
#pragma once

namespace zklock::testing::simulation {

template <class... F>
struct overloaded : F... {
    using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;

}  // namespace zklock::testing::simulation
