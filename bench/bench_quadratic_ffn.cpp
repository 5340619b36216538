// bench_quadratic_ffn — the scale target of theory/quadratic_ffn.md (issue 3, item 2).
//
// Claim: for one SwiGLU FFN of Llama-3-8B's shape (d 4096, d_ff 14336, random weights), all
// ||U_k||_F plus the top-16 eigenpairs of S_k for one channel take <= 2 minutes on 2 cores and
// <= 4 GiB, matrix-free. The peer, in the same run, is the dense approach (form every U_k, d x d,
// then ||U_k||_F, and SelfAdjointEigenSolver on one S_k) at a smaller size, with its time
// extrapolated to the full size and the ratio printed.
//
// Run:   build/bench/bench_quadratic_ffn                       (full size, about a minute)
//        build/bench/bench_quadratic_ffn --d 1024 --dff 3584   (smaller)
// Options: --d --dff --nev --block --peer-d --seed. Weights are float (the matrix-free norms are
// sums of positive-dominated terms, accurate to ~1e-6 relative in float; the run prints the measured
// float error against a double dense reference at the peer size). Weights are uniform with standard
// deviation 1/sqrt(fan_in) (fan_in = d for W_gate and W_up, d_ff for W_down).
#include <sinkscope/core/measures.hpp>
#include <sinkscope/theory/quadratic_ffn.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

using namespace sinkscope::theory;

namespace {

struct Config {
    Index d = 4096;          // Llama-3-8B d_model
    Index dff = 14336;       // Llama-3-8B FFN width
    Index nev = 16;          // eigenpairs of S_k
    Index block = 1024;      // block of the d_ff index in channel_frobenius_norms
    Index peer_d = 512;      // dense peer size (d_ff scaled by the same ratio)
    std::uint64_t seed = 1;
};

double now() {
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

double cpu_seconds() {  // user + system time of the whole process, all threads
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double peak_rss_gib() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_maxrss) / (1024.0 * 1024.0);  // ru_maxrss is KiB on Linux
}

std::uint64_t splitmix64(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// Uniform on [-sqrt(3) s, sqrt(3) s] (standard deviation s), one stream per row.
RowMatrix<float> random_weights(Index rows, Index cols, double sd, std::uint64_t seed) {
    RowMatrix<float> W(rows, cols);
    const double half_width = std::sqrt(3.0) * sd;
#pragma omp parallel for schedule(static)
    for (Index r = 0; r < rows; ++r) {
        std::uint64_t state = seed * 0x100000001B3ULL + static_cast<std::uint64_t>(r);
        for (Index c = 0; c < cols; ++c) {
            const double u = (splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
            W(r, c) = static_cast<float>((2.0 * u - 1.0) * half_width);
        }
    }
    return W;
}

struct Ffn {
    RowMatrix<float> gate, up, down;
};

Ffn make_ffn(Index d, Index dff, std::uint64_t seed) {
    Ffn f;
    f.gate = random_weights(dff, d, 1.0 / std::sqrt(double(d)), seed * 3 + 0);
    f.up = random_weights(dff, d, 1.0 / std::sqrt(double(d)), seed * 3 + 1);
    f.down = random_weights(d, dff, 1.0 / std::sqrt(double(dff)), seed * 3 + 2);
    return f;
}

bool parse(int argc, char** argv, Config& c) {
    for (int i = 1; i < argc; ++i) {
        auto next = [&](const char* name) -> long long {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "missing value after %s\n", name);
                std::exit(2);
            }
            return std::atoll(argv[++i]);
        };
        if (!std::strcmp(argv[i], "--d")) c.d = next("--d");
        else if (!std::strcmp(argv[i], "--dff")) c.dff = next("--dff");
        else if (!std::strcmp(argv[i], "--nev")) c.nev = next("--nev");
        else if (!std::strcmp(argv[i], "--block")) c.block = next("--block");
        else if (!std::strcmp(argv[i], "--peer-d")) c.peer_d = next("--peer-d");
        else if (!std::strcmp(argv[i], "--seed")) c.seed = static_cast<std::uint64_t>(next("--seed"));
        else {
            std::fprintf(stderr, "usage: %s [--d N] [--dff N] [--nev N] [--block N] [--peer-d N] [--seed N]\n", argv[0]);
            return false;
        }
    }
    return c.d >= 2 && c.dff >= 1 && c.nev >= 1 && c.peer_d >= 2;
}

}  // namespace

int main(int argc, char** argv) {
    Config cfg;
    if (!parse(argc, argv, cfg)) return 2;
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    std::printf("bench_quadratic_ffn: d %lld, d_ff %lld, nev %lld, block %lld, float, %d OpenMP thread(s), Eigen %d.%d.%d\n",
                (long long)cfg.d, (long long)cfg.dff, (long long)cfg.nev, (long long)cfg.block, threads,
                EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION);

    // ---- peer size first: dense vs matrix-free, same run -----------------------------------------
    const Index pd = cfg.peer_d;
    const Index pdff = static_cast<Index>(std::llround(double(cfg.dff) * double(pd) / double(cfg.d)));
    const Ffn pf = make_ffn(pd, pdff, cfg.seed + 1000);
    const SwiGluWeights<float> PW(pf.gate, pf.up, pf.down);

    double t0 = now();
    Vector<float> dense_norms(pd);
    for (Index k = 0; k < pd; ++k) dense_norms[k] = channel_matrix_dense(PW, k).norm();  // every U_k, d x d
    const Index pk = 0;
    const ColMatrix<float> Up = channel_matrix_dense(PW, pk);
    Eigen::SelfAdjointEigenSolver<ColMatrix<float>> dense_eig(0.5f * (Up + Up.transpose()));
    const double t_dense = now() - t0;

    t0 = now();
    const Vector<float> mf_norms = channel_frobenius_norms(PW, cfg.block);
    SpectrumOptions popt;
    popt.nev = std::min(cfg.nev, pd - 1);
    const auto pspec = channel_spectrum(PW, pk, popt);
    const double t_mf_small = now() - t0;

    // Accuracy of float against a double dense reference on 16 channels.
    const RowMatrix<double> gd = pf.gate.cast<double>(), ud = pf.up.cast<double>(), dd = pf.down.cast<double>();
    const SwiGluWeights<double> PWd(gd, ud, dd);
    double norm_err = 0.0;
    for (Index k = 0; k < std::min<Index>(16, pd); ++k) {
        const double ref = channel_matrix_dense(PWd, k).norm();
        norm_err = std::max(norm_err, std::abs(double(mf_norms[k]) - ref) / ref);
    }
    const ColMatrix<double> Ud = channel_matrix_dense(PWd, pk);
    Eigen::SelfAdjointEigenSolver<ColMatrix<double>> ref_eig(0.5 * (Ud + Ud.transpose()), Eigen::EigenvaluesOnly);
    Eigen::VectorXd ref_mag = ref_eig.eigenvalues().cwiseAbs();
    std::sort(ref_mag.data(), ref_mag.data() + ref_mag.size(), std::greater<double>());
    double eig_err = 0.0;
    for (Index j = 0; j < pspec.eigenvalues.size(); ++j)
        eig_err = std::max(eig_err, std::abs(std::abs(double(pspec.eigenvalues[j])) - ref_mag[j]) / ref_mag[0]);
    const double dense_vs_mf = (dense_norms - mf_norms).cwiseAbs().maxCoeff() / dense_norms.maxCoeff();

    // Dense cost scales as d * (2 d^2 d_ff) for all U_k (+ d^3 for one eigen-decomposition).
    const double scale = std::pow(double(cfg.d) / double(pd), 3) * (double(cfg.dff) / double(pdff));
    const double t_dense_full = t_dense * scale;
    std::printf("\npeer size d %lld, d_ff %lld:\n", (long long)pd, (long long)pdff);
    std::printf("  dense (form all U_k, ||U_k||_F, SelfAdjointEigenSolver on S_0): %8.2f s\n", t_dense);
    std::printf("  matrix-free (Gram-Hadamard norms + Lanczos top-%lld):            %8.2f s  (ratio dense/matrix-free %.1fx)\n",
                (long long)popt.nev, t_mf_small, t_dense / t_mf_small);
    std::printf("  float error vs double dense: norms %.2e relative, |eigenvalues| %.2e of |lambda*|; dense-vs-matrix-free norms %.2e\n",
                norm_err, eig_err, dense_vs_mf);

    // ---- full size, matrix-free ----------------------------------------------------------------
    t0 = now();
    const Ffn f = make_ffn(cfg.d, cfg.dff, cfg.seed);
    const double t_gen = now() - t0;
    const SwiGluWeights<float> W(f.gate, f.up, f.down);

    t0 = now();
    double c0 = cpu_seconds();
    const Vector<float> norms = channel_frobenius_norms(W, cfg.block);
    const double t_norms = now() - t0, c_norms = cpu_seconds() - c0;
    Index k_max = 0;
    norms.maxCoeff(&k_max);

    t0 = now();
    c0 = cpu_seconds();
    SpectrumOptions opt;
    opt.nev = std::min(cfg.nev, cfg.d - 1);
    const auto spec = channel_spectrum(W, k_max, opt);
    const double t_eigs = now() - t0, c_eigs = cpu_seconds() - c0;
    const double total = t_norms + t_eigs;

    std::printf("\nfull size d %lld, d_ff %lld (weights generated in %.1f s, %.2f GiB):\n", (long long)cfg.d,
                (long long)cfg.dff, t_gen, 3.0 * double(cfg.d) * double(cfg.dff) * 4.0 / (1u << 30));
    std::printf("  all ||U_k||_F (matrix-free):       %8.2f s wall, %7.2f s CPU (median %.4g, max %.4g at k = %lld)\n",
                t_norms, c_norms,
                sinkscope::measures::upper_median_of(std::vector<double>(norms.data(), norms.data() + norms.size())),
                double(norms.maxCoeff()), (long long)k_max);
    std::printf("  top-%lld eigenpairs of S_%lld (Lanczos): %8.2f s wall, %7.2f s CPU (%lld matvecs, %lld restarts, max residual %.2e, "
                "lambda* %.4g, |lambda_16| %.4g)\n",
                (long long)opt.nev, (long long)k_max, t_eigs, c_eigs, (long long)spec.matvecs, (long long)spec.restarts,
                double(spec.residuals.maxCoeff()), double(spec.lambda_star()),
                double(std::abs(spec.eigenvalues[spec.eigenvalues.size() - 1])));
    std::printf("  total %.2f s (target <= 120 s), peak RSS %.2f GiB (target <= 4 GiB)\n", total, peak_rss_gib());
    std::printf("  dense peer extrapolated to this size: %.0f s (%.1f h) = %.0fx the matrix-free total\n", t_dense_full,
                t_dense_full / 3600.0, t_dense_full / total);
    const bool ok = total <= 120.0 && peak_rss_gib() <= 4.0;
    std::printf("%s\n", ok ? "TARGET MET" : "TARGET MISSED");
    return ok ? 0 : 1;
}
