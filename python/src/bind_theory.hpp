// The theory functions on NumPy arrays (float64, C order; the Python layer converts, a copy when the
// input is anything else). Each calls the library function of include/sinkscope/theory/ unchanged:
//   channel_frobenius_norms(W_gate, W_up, W_down)   ‖U_k‖_F for every output channel k   (quadratic_ffn.hpp)
//   channel_spectrum(W_gate, W_up, W_down, k, nev)   top eigenpairs of S_k = (U_k + U_kᵀ)/2 (quadratic_ffn.hpp)
//   fit_cone(values)                                 the cone model fitted to value rows (n, d_h) (cone_model.hpp)
//   cone_expected_norm_sq(alpha, sum_sq)             a² + (1 − a²) Σ p_i²                   (cone_model.hpp)
// Weights are in PyTorch layout: W_gate, W_up (d_ff, d), W_down (d, d_ff).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <string>

#include <sinkscope/theory/cone_model.hpp>
#include <sinkscope/theory/quadratic_ffn.hpp>

#include "arrays.hpp"

namespace sinkscope::python {

inline theory::SpectrumRule spectrum_rule(const std::string& rule) {
    if (rule == "largest_magnitude") return theory::SpectrumRule::largest_magnitude;
    if (rule == "largest_algebraic") return theory::SpectrumRule::largest_algebraic;
    if (rule == "smallest_algebraic") return theory::SpectrumRule::smallest_algebraic;
    throw Error("channel_spectrum: rule must be largest_magnitude, largest_algebraic or smallest_algebraic, not '" + rule + "'");
}

inline void bind_theory(nb::module_& m) {
    m.def("_channel_frobenius_norms", [](const Matrix64& gate, const Matrix64& up, const Matrix64& down) {
        Eigen::VectorXd norms;
        {
            const theory::SwiGluWeights<double> W(as_matrix(gate), as_matrix(up), as_matrix(down));
            nb::gil_scoped_release release;
            norms = theory::channel_frobenius_norms(W);
        }
        const auto n = std::int64_t(norms.size());
        return owned(std::move(norms), {n});
    });

    m.def("_channel_spectrum", [](const Matrix64& gate, const Matrix64& up, const Matrix64& down, std::int64_t k,
                                  std::int64_t nev, const std::string& rule) {
        theory::ChannelSpectrum<double> s;
        {
            const theory::SwiGluWeights<double> W(as_matrix(gate), as_matrix(up), as_matrix(down));
            theory::SpectrumOptions o;
            o.nev = nev;
            o.rule = spectrum_rule(rule);
            nb::gil_scoped_release release;
            s = theory::channel_spectrum(W, k, o);
        }
        // Eigen's column-major (d, nev) eigenvectors as a row-major (d, nev) array: copied once.
        RowMatrix64 vectors = s.eigenvectors;
        const auto nv = std::int64_t(s.eigenvalues.size()), d = std::int64_t(vectors.rows());
        nb::dict out;
        out["channel"] = s.channel;
        out["eigenvalues"] = owned(std::move(s.eigenvalues), {nv});
        out["eigenvectors"] = owned(std::move(vectors), {d, nv});
        out["residuals"] = owned(std::move(s.residuals), {nv});
        out["dense_fallback"] = s.dense_fallback;
        out["matvecs"] = s.matvecs;
        out["restarts"] = s.restarts;
        return out;
    });

    m.def("_fit_cone", [](const Matrix64& values) {
        const auto fit = theory::fit_cone(as_matrix(values));
        const auto d = std::int64_t(fit.axis.size());
        nb::dict out;
        out["alpha"] = fit.alpha;
        out["alpha_debiased"] = fit.alpha_debiased;
        out["axis"] = owned(Eigen::VectorXd(fit.axis), {d});
        out["mean_norm_sq"] = fit.mean_norm_sq;
        out["orthogonal_energy"] = fit.orthogonal_energy;
        out["isotropy_top_ratio"] = fit.isotropy_top_ratio;
        out["participation_ratio"] = fit.participation_ratio;
        out["n"] = fit.n;
        out["d"] = fit.d;
        return out;
    });

    m.def("cone_expected_norm_sq", [](double alpha, double sum_sq) { return theory::cone_expected_norm_sq(alpha, sum_sq); },
          nb::arg("alpha"), nb::arg("sum_sq"),
          "The cone model's E||o||^2 = a^2 + (1 - a^2) * sum_i p_i^2 (theory/cone_model.md), for unit values.");
}

}  // namespace sinkscope::python
