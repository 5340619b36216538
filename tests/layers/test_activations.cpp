// layers/activations.hpp: SiLU and both GELUs against their definitions in long double (the vectorised
// SiLU of activation_forward included), and their derivatives against the closed forms' own peers:
// silu' from σ, gelu_erf' from the normal density and distribution.
#include <catch2/catch.hpp>

#include <sinkscope/layers/activations.hpp>

#include "layers/layer_test_util.hpp"

using namespace sinkscope;
using namespace sinkscope::test::layers;

namespace {

long double reference(model::Activation a, long double x) {
    switch (a) {
        case model::Activation::silu: return x / (1.0L + std::exp(-x));
        case model::Activation::gelu_erf: return 0.5L * x * std::erfc(-x / std::sqrt(2.0L));  // x Φ(x)
        case model::Activation::gelu_tanh: {
            const long double k = std::sqrt(2.0L / 3.14159265358979323846264338327950288L);
            return 0.5L * x * (1.0L + std::tanh(k * (x + 0.044715L * x * x * x)));
        }
    }
    return x;
}

}  // namespace

TEMPLATE_TEST_CASE("activation_forward equals each activation's definition, tails included", "[layers][activations]",
                   float, double) {
    using T = TestType;
    // Scale 4: the tails (x ≈ ±15, where silu and GELU turn into x or 0) are in the sample.
    const Mat<T> x = gaussian<T>(7, 33, 21, 4.0);  // 33 columns: Eigen's packets and a scalar tail
    // The error is measured against max(|f(x)|, |x|): in the negative tails both GELUs compute 1 + erf(.) or
    // 1 + tanh(.) near 0 (as PyTorch's formulas do), so their error there is a rounding of 1 times |x|/2.
    const double tol = std::is_same_v<T, float> ? 4e-7 : 1e-15;
    for (auto a : {model::Activation::silu, model::Activation::gelu_erf, model::Activation::gelu_tanh}) {
        Mat<T> y;
        model::activation_forward(y, x, a);
        double worst = 0;
        for (Eigen::Index i = 0; i < x.size(); ++i) {
            const long double r = reference(a, x.data()[i]);
            worst = std::max(worst, double(std::abs(y.data()[i] - r) / std::max({std::abs(r), std::abs((long double)x.data()[i]), 1e-3L})));
        }
        INFO("activation " << int(a));
        CHECK(worst < tol);
    }
}

// The derivatives are O(1) (|act'| <= 1.13), and backward needs them to absolute accuracy: compared with a
// margin of 1e-15 (gelu_erf' in double rounds Phi(x) to 0 below x = -8, where Phi < 1e-15).
TEST_CASE("activation derivatives equal silu' = s(1 + x(1 - s)) and gelu' = Phi(x) + x phi(x) in long double",
          "[layers][activations]") {
    for (double x : {-12.0, -3.5, -1.0, -0.25, 0.0, 0.3, 1.7, 6.0, 20.0}) {
        const long double X = x, s = 1.0L / (1.0L + std::exp(-X));
        CHECK(train::activation_derivative(model::Activation::silu, x) == Approx(double(s * (1 + X * (1 - s)))).epsilon(1e-14).margin(1e-15));
        const long double Phi = 0.5L * std::erfc(-X / std::sqrt(2.0L));
        const long double phi = std::exp(-0.5L * X * X) / std::sqrt(2.0L * 3.14159265358979323846264338327950288L);
        CHECK(train::activation_derivative(model::Activation::gelu_erf, x) == Approx(double(Phi + X * phi)).epsilon(1e-14).margin(1e-15));
        // gelu_tanh' by a central difference of the long double definition: truncation h^2 f'''/6 and
        // rounding 1e-19/h, both about 1e-12 at h = 1e-6
        const long double h = 1e-6L;
        const long double fd = (reference(model::Activation::gelu_tanh, X + h) - reference(model::Activation::gelu_tanh, X - h)) / (2 * h);
        CHECK(train::activation_derivative(model::Activation::gelu_tanh, x) == Approx(double(fd)).epsilon(1e-10).margin(1e-10));
    }
}
