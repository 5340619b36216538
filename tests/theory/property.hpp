// Seeded rapidcheck properties inside Catch2 for the theory tests.
//
// sinkscope::test::property(description, testable, cases, seed): check_property (seeded_property.hpp)
// with 1000 cases and the theory seed by default.
#pragma once

#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include "seeded_property.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <utility>

namespace sinkscope::test {

inline constexpr std::uint64_t kTheorySeed = 20260303;  // the seed of every theory property

template <class Testable>
void property(const std::string& description, Testable&& testable, int cases = 1000,
              std::uint64_t seed = kTheorySeed) {
    check_property(description, std::forward<Testable>(testable), cases, seed);
}

// A deterministic engine for the vectors of one case: rapidcheck draws the seed (and shrinks it).
inline std::mt19937_64 engine(std::uint64_t seed) { return std::mt19937_64(seed * 0x9E3779B97F4A7C15ULL + 1); }

template <class T>
Eigen::Matrix<T, Eigen::Dynamic, 1> gaussian_vector(std::mt19937_64& rng, Eigen::Index n, double sd = 1.0) {
    std::normal_distribution<double> N(0.0, sd);
    Eigen::Matrix<T, Eigen::Dynamic, 1> v(n);
    for (Eigen::Index i = 0; i < n; ++i) v[i] = static_cast<T>(N(rng));
    return v;
}

template <class T>
Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> gaussian_matrix(std::mt19937_64& rng, Eigen::Index r,
                                                                                  Eigen::Index c, double sd = 1.0) {
    std::normal_distribution<double> N(0.0, sd);
    Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> m(r, c);
    for (Eigen::Index i = 0; i < r; ++i)
        for (Eigen::Index j = 0; j < c; ++j) m(i, j) = static_cast<T>(N(rng));
    return m;
}

// A random probability vector of length n (softmax of Gaussian logits with a random temperature,
// so both flat and peaked vectors occur).
inline Eigen::VectorXd random_simplex(std::mt19937_64& rng, Eigen::Index n) {
    std::uniform_real_distribution<double> U(0.0, 4.0);
    const double temperature = U(rng);
    Eigen::VectorXd z = gaussian_vector<double>(rng, n, temperature);
    z.array() -= z.maxCoeff();
    Eigen::VectorXd p = z.array().exp();
    return p / p.sum();
}

// A random causal attention pattern (T, T): row t is a probability vector over keys 0..t.
inline Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> random_causal_pattern(std::mt19937_64& rng,
                                                                                                   Eigen::Index T) {
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> A =
        Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>::Zero(T, T);
    for (Eigen::Index t = 0; t < T; ++t) A.row(t).head(t + 1) = random_simplex(rng, t + 1).transpose();
    return A;
}

}  // namespace sinkscope::test
