// Seeded rapidcheck properties inside Catch2 for the theory tests, and rapidcheck generators for
// their Eigen inputs.
//
// sinkscope::test::property(description, testable, cases, seed): check_property (seeded_property.hpp)
// with 1000 cases and the theory seed by default; RC_PARAMS="seed=N" runs another search.
//
// Generators (namespace sinkscope::test::gen): every entry of a vector or matrix is drawn by
// rapidcheck, so a failing case SHRINKS entry by entry (towards 0, or towards the simplest value
// named below) and rapidcheck prints the small counter-example. Use them inside a property as
//     const Eigen::VectorXd x = *gen::vector(d);
// Entries are sd * k / 4096 with k uniform on |k| <= sqrt(3) * 4096: mean 0, standard deviation sd
// (as the legacy Gaussians), and a shrunk entry reads as a short binary fraction of sd (1, 0.5, ...).
//
// sinkscope::test::refute(description, testable, cases, seed): the negative check. The same search
// over inputs that violate a statement's premise must FIND a counter-example within `cases` cases,
// which shows that the property's assertions can fail (a property that holds for every input, premise
// or not, tests nothing). It passes when rapidcheck reports a failure and prints that counter-example
// (not shrunk: one is enough, and shrinking would only cost CI time).
//
// The engine-based helpers at the end (engine, gaussian_vector, ...) are the LEGACY path: a seed
// drawn by rapidcheck feeds a std::mt19937_64, so contents cannot shrink. Use them for fixed examples,
// and inside a property only for Monte Carlo sampling noise (gen::engine_seed): the inputs of the
// statement itself (axes, weights, keys) come from gen:: and shrink, while the thousands of samples
// whose mean is compared with an expectation come from an engine.
#pragma once

#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include "seeded_property.hpp"

#include <Eigen/Core>
#include <Eigen/QR>

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace sinkscope::test {

inline constexpr std::uint64_t kTheorySeed = 20260303;  // the seed of every theory property (CI)

template <class Testable>
void property(const std::string& description, Testable&& testable, int cases = 1000,
              std::uint64_t seed = kTheorySeed) {
    check_property(description, std::forward<Testable>(testable), cases, seed);
}

// A rapidcheck listener that reports nothing: the counter-example a refutation expects is not a failure,
// so it must not reach rapidcheck's global listener (which prints "Some of your RapidCheck properties
// had failures" at exit).
struct SilentListener : rc::detail::TestListener {
    void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
    void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
    void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

// Runs the property with property()'s parameters, without shrinking and silently, and returns
// rapidcheck's result (success, failure or gave up) with its printed message.
template <class Testable>
std::pair<rc::detail::TestResult, std::string> run_silently(const std::string& description, Testable&& testable,
                                                            int cases, std::uint64_t seed) {
    rc::detail::TestParams params = property_params(cases, seed);
    params.disableShrinking = true;
    rc::detail::TestMetadata metadata;
    metadata.id = description;
    metadata.description = description;
    SilentListener listener;
    auto result = rc::detail::checkProperty(rc::detail::toProperty(std::forward<Testable>(testable)), metadata, params,
                                            listener);
    std::ostringstream os;
    rc::detail::printResultMessage(result, os);
    os << " (seed " << params.seed << ", up to " << params.maxSuccess << " cases)";
    return {std::move(result), os.str()};
}

// The testable with exceptions turned into discarded cases: only a failed RC_ASSERT (or RC_FAIL) fails it.
template <class Testable>
auto assertions_only(Testable testable) {
    return [testable] {
        try {
            testable();
        } catch (const rc::detail::CaseResult&) {
            throw;
        } catch (const rc::GenerationFailure&) {
            throw;
        } catch (const std::exception& e) {
            throw rc::detail::CaseResult(rc::detail::CaseResult::Type::Discard, std::string("threw: ") + e.what());
        }
    };
}

// The negative check: passes iff the search finds a counter-example (see the top of this file). Only a
// failed RC_ASSERT counts: an exception thrown by the code under test (an input it refuses) discards the
// case instead (assertions_only), so that a refutation cannot come from an error message.
template <class Testable>
void refute(const std::string& description, Testable testable, int cases = 1000, std::uint64_t seed = kTheorySeed) {
    const auto [result, message] = run_silently(description, assertions_only(std::move(testable)), cases, seed);
    INFO("refute: " << description << " must find a counter-example outside the premise: " << message);
    CHECK(result.template is<rc::detail::FailureResult>());
}

namespace gen {

using RowMatrixXd = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// An integer uniform on [lo, hi] whatever rapidcheck's size (theory inputs are full-scale from the
// first case), shrinking towards `target` (which must lie in [lo, hi]).
inline rc::Gen<int> integer(int lo, int hi, int target) {
    return [=](const rc::Random& random, int /*size*/) {
        const auto span = static_cast<std::uint64_t>(static_cast<std::int64_t>(hi) - lo + 1);
        const int value = static_cast<int>(lo + static_cast<std::int64_t>(rc::Random(random).next() % span));
        return rc::shrinkable::shrinkRecur(value, [=](int x) { return rc::shrink::towards<int>(x, target); });
    };
}

// The same, shrinking towards the value of [lo, hi] nearest to 0.
inline rc::Gen<int> integer(int lo, int hi) { return integer(lo, hi, lo > 0 ? lo : (hi < 0 ? hi : 0)); }

// true with probability p (in steps of 1/1000), shrinking towards false.
inline rc::Gen<bool> bernoulli(double p) {
    const int cut = static_cast<int>(std::lround(1000.0 * (1.0 - p)));
    return rc::gen::map(integer(0, 999, 0), [cut](int x) { return x >= cut; });
}

inline constexpr int kGrid = 4096;     // entries are k / kGrid
inline constexpr int kRealMax = 7094;  // |k| <= sqrt(3) * kGrid

// A real number sd * k / kGrid, k uniform on [-sqrt(3) kGrid, sqrt(3) kGrid] (standard deviation sd),
// shrinking towards 0.
inline rc::Gen<double> real(double sd = 1.0) {
    return rc::gen::map(integer(-kRealMax, kRealMax), [sd](int k) { return sd * k / kGrid; });
}

// A real number uniform on the grid of [lo, hi], shrinking towards lo.
inline rc::Gen<double> real_in(double lo, double hi) {
    return rc::gen::map(integer(0, kGrid, 0), [lo, hi](int k) { return lo + (hi - lo) * k / kGrid; });
}

// A vector of n entries real(sd), shrinking entry by entry.
inline rc::Gen<Eigen::VectorXd> vector(Eigen::Index n, double sd = 1.0) {
    return rc::gen::map(rc::gen::container<std::vector<double>>(static_cast<std::size_t>(n), real(sd)),
                        [](const std::vector<double>& v) {
                            return Eigen::VectorXd(Eigen::Map<const Eigen::VectorXd>(v.data(), Eigen::Index(v.size())));
                        });
}

// An (r, c) row-major matrix of entries real(sd), shrinking entry by entry.
inline rc::Gen<RowMatrixXd> matrix(Eigen::Index r, Eigen::Index c, double sd = 1.0) {
    return rc::gen::map(rc::gen::container<std::vector<double>>(static_cast<std::size_t>(r * c), real(sd)),
                        [r, c](const std::vector<double>& v) {
                            return RowMatrixXd(Eigen::Map<const RowMatrixXd>(v.data(), r, c));
                        });
}

// p = softmax(temperature * z), z from vector(n), temperature in [0, 4]: flat and peaked
// probability vectors (max logit gap up to 14). Shrinks towards the uniform vector.
inline rc::Gen<Eigen::VectorXd> simplex(Eigen::Index n) {
    return rc::gen::map(rc::gen::pair(real_in(0.0, 4.0), vector(n)), [](const std::pair<double, Eigen::VectorXd>& tz) {
        Eigen::VectorXd z = tz.first * tz.second;
        z.array() -= z.maxCoeff();
        Eigen::VectorXd p = z.array().exp();
        return Eigen::VectorXd(p / p.sum());
    });
}

// A causal attention pattern (T, T): row t is softmax(temperature_t * z_t) over keys 0..t (as in
// simplex), zero after. Shrinks towards uniform causal attention.
inline rc::Gen<RowMatrixXd> causal_pattern(Eigen::Index T) {
    const auto n_logits = static_cast<std::size_t>(T * (T + 1) / 2);
    return rc::gen::map(rc::gen::pair(rc::gen::container<std::vector<double>>(static_cast<std::size_t>(T), real_in(0.0, 4.0)),
                                      rc::gen::container<std::vector<double>>(n_logits, real())),
                        [T](const std::pair<std::vector<double>, std::vector<double>>& tz) {
                            RowMatrixXd A = RowMatrixXd::Zero(T, T);
                            std::size_t at = 0;
                            for (Eigen::Index t = 0; t < T; ++t) {
                                Eigen::VectorXd z = tz.first[std::size_t(t)] *
                                                    Eigen::Map<const Eigen::VectorXd>(tz.second.data() + at, t + 1);
                                at += std::size_t(t + 1);
                                z.array() -= z.maxCoeff();
                                const Eigen::VectorXd p = z.array().exp();
                                A.row(t).head(t + 1) = (p / p.sum()).transpose();
                            }
                            return A;
                        });
}

// A (d, d) orthogonal matrix: the Q of a Householder QR of matrix(d, d). Shrinks towards the
// identity (the QR of the zero matrix), i.e. towards axis-aligned eigenvectors.
inline rc::Gen<Eigen::MatrixXd> orthogonal(Eigen::Index d) {
    return rc::gen::map(matrix(d, d), [d](const RowMatrixXd& M) {
        const Eigen::MatrixXd square = M;
        const Eigen::HouseholderQR<Eigen::MatrixXd> qr(square);
        return Eigen::MatrixXd(qr.householderQ() * Eigen::MatrixXd::Identity(d, d));
    });
}

// A unit vector of R^n: vector(n) normalised, e_0 when every entry shrank to 0. Shrinks towards
// axis-aligned directions.
inline rc::Gen<Eigen::VectorXd> unit_vector(Eigen::Index n) {
    return rc::gen::map(vector(n), [n](const Eigen::VectorXd& v) {
        const double norm = v.norm();
        if (!(norm > 0.0)) return Eigen::VectorXd(Eigen::VectorXd::Unit(n, 0));
        return Eigen::VectorXd(v / norm);
    });
}

// The variance of one entry of real(sd): sd^2 K (K + 1) / (3 kGrid^2), K = kRealMax (a discrete uniform
// on [-K, K] / kGrid), 1.0000056 sd^2.
inline double real_variance(double sd = 1.0) {
    const double K = kRealMax;
    return sd * sd * K * (K + 1) / (3.0 * double(kGrid) * kGrid);
}

// The seed of a Monte Carlo engine inside a property (the legacy engine() below): the sampling noise
// of a statistical check, not an input of the statement. Shrinks towards 0.
inline rc::Gen<std::uint64_t> engine_seed() { return rc::gen::arbitrary<std::uint64_t>(); }

}  // namespace gen

// ---- LEGACY: a fixed engine per case (contents do not shrink) --------------------------------

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
