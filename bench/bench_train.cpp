// Benchmark: training tokens/s of a Llama-style model (d 256, 4 layers, 4 heads, SwiGLU 688, T 256,
// batch 8, vocab 512; RMSNorm pre-norm, RoPE, tied head) with AdamW + clipping, and the machine's
// GEMM FLOP/s in the run's precision (float32: Eigen; bf16: model::bf16_matmul, oneDNN; large square,
// same threads) to put it in proportion.
// The peer (bench/bench_train_torch.py, the same model and optimizer in PyTorch) is run by
// bench/run_train_bench.sh in the same session, which prints the ratios.
//   usage: bench_train [steps=6] [threads=0] [parallel=sequences|gemm] [gemm_n=2048] [precision=float32|bf16]
// Prints one JSON line: tokens_per_s (median step), step_s, model_gflop_per_step, achieved_gflops,
// gemm_gflops, fraction_of_gemm, model_shape_gemm_gflops, fraction_of_model_shape_gemm (the same share
// against the model's own product shapes, model_shape_gemm_gflops), peak_rss_mb, and the settings.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include <Eigen/Core>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <sinkscope/core/measures.hpp>
#include <sinkscope/train/trainer.hpp>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

using namespace sinkscope;
using clock_type = std::chrono::steady_clock;

// FLOPs of one training step (forward + backward = 3 × forward), counting the GEMMs and the causal
// half of the T × T attention products (a query at t meets t + 1 keys: (T + 1)/2 on average), not
// elementwise work. Conservative: the forward actually computes the full square.
double model_flops_per_step(const model::Config& c, std::int64_t T, std::int64_t B) {
    const double d = double(c.d_model), q = double(c.q_dim()), kv = double(c.kv_dim()), ff = double(c.d_ff);
    const double keys = 0.5 * double(T + 1);
    const double per_token_layer = 2.0 * (d * q + 2 * d * kv + q * d + 3 * d * ff) + 2.0 * 2.0 * keys * q;
    const double per_token = double(c.n_layers) * per_token_layer + 2.0 * d * double(c.vocab_size);
    return 3.0 * per_token * double(T * B);
}

double gemm_gflops(int n, int reps) {
    Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n), b = Eigen::MatrixXf::Random(n, n), c(n, n);
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = clock_type::now();
        c.noalias() = a * b;
        best = std::min(best, std::chrono::duration<double>(clock_type::now() - t0).count());
    }
    if (c(0, 0) == 12345.f) std::cerr << "";
    return 2.0 * double(n) * n * n / best / 1e9;
}

// The same square product with bf16 inputs (oneDNN), conversion of both inputs included as in training.
double gemm_gflops_bf16(int n, int reps) {
    model::Mat<float> a = model::Mat<float>::Random(n, n), b = model::Mat<float>::Random(n, n), c(n, n);
    double best = 1e30;
    for (int r = 0; r < reps + 1; ++r) {  // the first call creates the primitive
        const auto t0 = clock_type::now();
        model::bf16_matmul(c.data(), n, model::matrix_ref(a), model::matrix_ref(b), false);
        if (r) best = std::min(best, std::chrono::duration<double>(clock_type::now() - t0).count());
    }
    return 2.0 * double(n) * n * n / best / 1e9;
}

// The GEMM rate at the model's own shapes, multiplied the way a training step multiplies them: each of
// `threads` threads runs its products single-threaded (inside an OpenMP region, as the trainer's
// sequence workers do), with bf16 operands already rounded (the kept weight copies and the tape's bits)
// or Eigen float32. Per thread and round, one sequence's linear products of each of the model's layers,
// forward and backward: x·Wᵀ, dY·W and dYᵀ·x for W_Q, W_K, W_V, W_O, W_gate, W_up and W_down (T rows).
// The attention's own products (q·kᵀ, p·v: inner dimension d_h or fewer rows) run slower and are left
// out, so this rate is one the step's products could reach, not a bound they all meet. Best of `reps`
// rounds of the whole region (all threads).
double model_shape_gemm_gflops(const model::Config& c, std::int64_t T, int threads, bool bf16, int reps) {
    const std::int64_t d = c.d_model, q = c.q_dim(), kv = c.kv_dim(), ff = c.d_ff;
    const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {{q, d}, {kv, d}, {kv, d}, {d, q}, {ff, d}, {ff, d}, {d, ff}};
    double flop = 0;  // per thread and round
    for (const auto& [out, in] : shapes) flop += double(c.n_layers) * 3.0 * 2.0 * double(T * out * in);
    std::vector<double> seconds(std::size_t(reps + 1), 0.0);
#pragma omp parallel num_threads(threads)
    {
        using M = model::Mat<float>;
        std::vector<M> w, x, dy, c_fwd, c_dx, c_dw;
        std::vector<model::Bf16Matrix> wb(shapes.size()), xb(shapes.size()), dyb(shapes.size());
        for (std::size_t i = 0; i < shapes.size(); ++i) {
            const auto [out, in] = shapes[i];
            w.push_back(M::Random(out, in));
            x.push_back(M::Random(T, in));
            dy.push_back(M::Random(T, out));
            c_fwd.emplace_back(T, out);
            c_dx.emplace_back(T, in);
            c_dw.emplace_back(out, in);
            if (!bf16) continue;
            wb[i].assign(w[i].data(), out, in);
            xb[i].assign(x[i].data(), T, in);
            dyb[i].assign(dy[i].data(), T, out);
        }
        for (int r = 0; r < reps + 1; ++r) {  // round 0 creates the primitives and warms the caches
#pragma omp barrier
            const auto t0 = clock_type::now();
            for (std::int64_t l = 0; l < c.n_layers; ++l)
                for (std::size_t i = 0; i < shapes.size(); ++i) {
                    const std::int64_t out = shapes[i].first, in = shapes[i].second;
                    if (bf16) {
                        model::bf16_matmul(c_fwd[i].data(), out, xb[i].ref(), wb[i].ref().transposed(), false);
                        model::bf16_matmul(c_dx[i].data(), in, dyb[i].ref(), wb[i].ref(), false);
                        model::bf16_matmul(c_dw[i].data(), in, dyb[i].ref().transposed(), xb[i].ref(), false);
                    } else {
                        c_fwd[i].noalias() = x[i] * w[i].transpose();
                        c_dx[i].noalias() = dy[i] * w[i];
                        c_dw[i].noalias() = dy[i].transpose() * x[i];
                    }
                }
#pragma omp barrier
#pragma omp master
            seconds[std::size_t(r)] = std::chrono::duration<double>(clock_type::now() - t0).count();
        }
    }
    const double best = *std::min_element(seconds.begin() + 1, seconds.end());
    return double(threads) * flop / best / 1e9;
}

int main(int argc, char** argv) {
#if defined(__GLIBC__)
    // Training allocates and frees the same large activation buffers every step; keep them in the heap
    // instead of mmap/munmap-ing (and page-faulting) them each time.
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
    const int steps = argc > 1 ? std::stoi(argv[1]) : 6;
    const int threads = argc > 2 ? std::stoi(argv[2]) : 0;
    const std::string parallel = argc > 3 ? argv[3] : "sequences";
    const int gemm_n = argc > 4 ? std::stoi(argv[4]) : 2048;
    const std::string precision = argc > 5 ? argv[5] : "float32";
    try {
        train::TrainConfig t;
        model::Config& c = t.model;
        c.architecture = "sinkscope";
        c.n_layers = 4; c.d_model = 256; c.n_heads = 4; c.n_kv_heads = 4; c.head_dim = 64; c.d_ff = 688;
        c.vocab_size = 512; c.context_length = 256;
        const std::int64_t T = 256;
        t.task = {{"kind", "zipf"}, {"n_tokens", 511}, {"seq_len", T}, {"seed", 1}};
        t.batch = 8;
        t.steps = steps + 1;
        t.optim.lr = 1e-3; t.optim.warmup_steps = 0; t.optim.total_steps = steps + 1;
        t.threads = threads;
        t.parallel = parallel == "gemm" ? train::Parallelism::gemm : train::Parallelism::sequences;
        t.precision = model::matmul_precision_from_string(precision);
        train::Trainer<float> tr(t, train::make_data(t.task));
        std::vector<double> times;
        double loss = 0;
        for (int s = 0; s < steps + 1; ++s) {  // step 0 is a warm-up
            const auto r = tr.step();
            if (s) times.push_back(r.seconds);
            loss = r.loss;
        }
        const double step_s = measures::upper_median_of(times);
        const double flops = model_flops_per_step(c, T, t.batch);
#ifdef _OPENMP
        const int nthreads = threads > 0 ? threads : omp_get_max_threads();
#else
        const int nthreads = 1;
#endif
        Eigen::setNbThreads(nthreads);
#ifdef _OPENMP
        omp_set_num_threads(nthreads);  // the trainer may have set one thread for its sequence workers
#endif
        const double gemm = precision == "bf16" ? gemm_gflops_bf16(gemm_n, 3) : gemm_gflops(gemm_n, 3);
        const double shape_gemm = model_shape_gemm_gflops(c, T, nthreads, precision == "bf16", 5);
        rusage ru{};
        getrusage(RUSAGE_SELF, &ru);
        const nlohmann::json out = {
            {"impl", "sinkscope"}, {"precision", precision}, {"threads", nthreads}, {"parallel", parallel}, {"steps", steps},
            {"tokens_per_step", T * t.batch}, {"step_s", step_s}, {"tokens_per_s", double(T * t.batch) / step_s},
            {"model_gflop_per_step", flops / 1e9}, {"achieved_gflops", flops / step_s / 1e9}, {"gemm_n", gemm_n},
            {"gemm_gflops", gemm}, {"fraction_of_gemm", flops / step_s / 1e9 / gemm},
            {"model_shape_gemm_gflops", shape_gemm}, {"fraction_of_model_shape_gemm", flops / step_s / 1e9 / shape_gemm},
            {"peak_rss_mb", double(ru.ru_maxrss) / 1024.0}, {"last_loss", loss}};
        std::cout << out.dump() << std::endl;
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "bench_train: " << e.what() << "\n";
        return 1;
    }
}
