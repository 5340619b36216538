// Portable, seeded random numbers for training: the same seed gives the same weights and the same
// data on every platform and standard library.
//
// std::mt19937_64's output sequence is fixed by the standard, but the std::*_distribution classes are
// not (libstdc++ and libc++ differ), so the distributions used here are written out:
//   uniform:  53 high bits of a 64-bit draw → [0, 1)
//   normal:   Box–Muller (both values used)
//   gamma:    Marsaglia & Tsang (2000), with the α < 1 boost  G(α) = G(α + 1) · U^{1/α}
//   Dirichlet(α): normalised independent gammas
//   categorical: inverse CDF by binary search over the cumulative weights
// `stream_seed(seed, i)` gives independent generators per (seed, index) through SplitMix64, so sequence i of
// a data stream can be drawn without drawing sequences 0..i−1 (resumable, parallel).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"

namespace sinkscope::train {

// SplitMix64 (Steele, Lea & Flood 2014): a bijective 64-bit mixer.
inline std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}
inline std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t index) {
    return splitmix64(splitmix64(seed) ^ (index * 0xd1b54a32d192ed03ULL + 0x8cb92ba72f3d8dd7ULL));
}

class Rng {
public:
    explicit Rng(std::uint64_t seed = 0) : engine_(seed) {}

    std::uint64_t next() { return engine_(); }
    // Uniform in [0, 1).
    double uniform() { return double(engine_() >> 11) * (1.0 / 9007199254740992.0); }
    // Uniform integer in [0, n).
    std::uint64_t below(std::uint64_t n) { return std::uint64_t(uniform() * double(n)) % n; }
    double normal() {
        if (has_spare_) { has_spare_ = false; return spare_; }
        double u1 = uniform();
        while (u1 <= 0.0) u1 = uniform();
        const double u2 = uniform();
        const double r = std::sqrt(-2.0 * std::log(u1)), a = 2.0 * M_PI * u2;
        spare_ = r * std::sin(a);
        has_spare_ = true;
        return r * std::cos(a);
    }
    double gamma(double alpha) {
        require(alpha > 0, "gamma: alpha must be > 0");
        if (alpha < 1.0) {
            double u = uniform();
            while (u <= 0.0) u = uniform();
            return gamma(alpha + 1.0) * std::pow(u, 1.0 / alpha);
        }
        const double d = alpha - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
        for (;;) {
            double x, v;
            do { x = normal(); v = 1.0 + c * x; } while (v <= 0.0);
            v = v * v * v;
            const double u = uniform();
            if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
            if (u > 0.0 && std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
        }
    }
    std::vector<double> dirichlet(std::size_t n, double alpha) {
        std::vector<double> p(n);
        double sum = 0;
        for (auto& x : p) { x = gamma(alpha); sum += x; }
        if (!(sum > 0)) { std::fill(p.begin(), p.end(), 1.0 / double(n)); return p; }
        for (auto& x : p) x /= sum;
        return p;
    }
    // Index drawn from cumulative weights cdf (non-decreasing, last > 0).
    std::size_t categorical(const std::vector<double>& cdf) {
        const double u = uniform() * cdf.back();
        const auto it = std::upper_bound(cdf.begin(), cdf.end(), u);
        return std::min<std::size_t>(std::size_t(it - cdf.begin()), cdf.size() - 1);
    }

    // The complete state as text (std::mt19937_64's standard stream format plus the Box–Muller spare).
    std::string state() const {
        std::ostringstream os;
        os.precision(17);
        os << engine_ << ' ' << int(has_spare_) << ' ' << std::hexfloat << spare_;
        return os.str();
    }
    void set_state(const std::string& s) {
        std::istringstream is(s);
        int spare = 0;
        std::string sp;
        is >> engine_ >> spare >> sp;
        require(!is.fail(), "Rng::set_state: malformed generator state");
        has_spare_ = spare != 0;
        spare_ = std::strtod(sp.c_str(), nullptr);
    }

private:
    std::mt19937_64 engine_;
    bool has_spare_ = false;
    double spare_ = 0.0;
};

// Cumulative sums of weights (for Rng::categorical).
inline std::vector<double> cumulative(const std::vector<double>& w) {
    std::vector<double> c(w.size());
    double s = 0;
    for (std::size_t i = 0; i < w.size(); ++i) { s += w[i]; c[i] = s; }
    return c;
}

}  // namespace sinkscope::train
