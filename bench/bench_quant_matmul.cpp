// bench_quant_matmul — y = x Wᵀ with W in a GGUF block type: the paths of layers/quantized_linear.hpp
// (exact, int8, and bf16 where oneDNN is built in) against Eigen's float32 GEMM on the dequantized weight.
//
// Claim under test: computing with 8-bit activations and integer dot products (QuantCompute::int8) is
// faster than any float32 path on this CPU, while reading W in its file type (no 4-byte copy of W).
// bench/run_quant_bench.sh runs this and PyTorch's SGEMM (bench/bench_sgemm_torch.py) in the same run and
// prints the ratios.
//
// Run:   OMP_NUM_THREADS=2 build/bench/bench_quant_matmul [runs=7] [types=Q4_K,Q8_0,Q6_K,Q4_1]
// Shapes (T, in, out): (32 and 64, 3584, 18944) Qwen2-7B's FFN up projection at 32 and 64 tokens, (512, 3584, 3584) its
// attention output at 512 tokens, (512, 576, 1536) SmolLM2-135M's FFN at 512 tokens. Weights are random
// blocks with finite fp16 scales (as in a random-weight GGUF); the rate does not depend on the values.
// Prints one JSON line per (shape, type, method): the median and best GFLOP/s (2·T·in·out / wall time) of
// `runs` timed calls after one warm-up, gflops_cpu (the median with the process's CPU time / threads in
// place of wall time: what an idle machine would give when other work shares the cores), and the largest
// |y - y_f32| relative to max |y_f32|.
#include <sinkscope/core/measures.hpp>
#include <sinkscope/io/dequantize.hpp>
#include <sinkscope/layers/quantized_linear.hpp>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

using namespace sinkscope;
using namespace sinkscope::model;
using io::GgmlType;

namespace {

struct Shape {
    std::int64_t T, in, out;
};

std::vector<std::uint8_t> random_blocks(GgmlType t, std::int64_t rows, std::int64_t cols, std::mt19937& rng) {
    std::vector<std::uint8_t> data(io::tensor_bytes(t, rows * cols));
    for (auto& v : data) v = static_cast<std::uint8_t>(rng());
    std::vector<int> fields;  // byte offsets of the fp16 scales (io/dequantize.hpp's layout table)
    switch (t) {
        case GgmlType::Q8_0: case GgmlType::Q4_0: case GgmlType::Q5_0: fields = {0}; break;
        case GgmlType::Q6_K: fields = {208}; break;
        default: fields = {0, 2};
    }
    std::uniform_int_distribution<int> expo(5, 12), mant(0, 1023);
    const std::int64_t bb = io::block_bytes(t);
    for (std::size_t i = 0; i < data.size(); i += static_cast<std::size_t>(bb))
        for (int off : fields) {
            const auto h = static_cast<std::uint16_t>(expo(rng) << 10 | mant(rng));
            data[i + off] = static_cast<std::uint8_t>(h & 0xff), data[i + off + 1] = static_cast<std::uint8_t>(h >> 8);
        }
    return data;
}

double cpu_seconds() {  // CPU time of the whole process (all threads)
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

struct Timing {
    double median, best;  // wall seconds
    double cpu_median;    // process CPU seconds / threads: the wall time on an otherwise idle machine
};

template <class F>
Timing time_runs(int runs, int threads, F f) {
    f();  // warm-up
    std::vector<double> s, c;
    for (int r = 0; r < runs; ++r) {
        const double c0 = cpu_seconds();
        const auto t0 = std::chrono::steady_clock::now();
        f();
        s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        c.push_back((cpu_seconds() - c0) / threads);
    }
    return {measures::upper_median_of(s), *std::min_element(s.begin(), s.end()), measures::upper_median_of(c)};
}

GgmlType parse_type(const std::string& n) {
    for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q8_0, GgmlType::Q6_K, GgmlType::Q4_1, GgmlType::Q4_0,
                       GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q5_K})
        if (io::type_name(t) == n) return t;
    throw Error("bench_quant_matmul: unknown type " + n);
}

}  // namespace

int main(int argc, char** argv) {
    const int runs = argc > 1 ? std::max(5, std::atoi(argv[1])) : 7;
    std::vector<GgmlType> types;
    {
        std::stringstream ss(argc > 2 ? argv[2] : "Q4_K,Q8_0,Q6_K,Q4_1");
        for (std::string n; std::getline(ss, n, ',');) types.push_back(parse_type(n));
    }
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    const Shape shapes[] = {{32, 3584, 18944}, {64, 3584, 18944}, {512, 3584, 3584}, {512, 576, 1536}};
    std::mt19937 rng(1);
    for (const Shape& sh : shapes) {
        std::normal_distribution<float> nd(0.0f, 1.0f);
        Mat<float> x(sh.T, sh.in);
        for (std::int64_t i = 0; i < x.size(); ++i) x.data()[i] = nd(rng);
        const double flop = 2.0 * double(sh.T) * double(sh.in) * double(sh.out);
        {  // the float32 baseline: Eigen's SGEMM on a dense weight (its rate does not depend on the values)
            Mat<float> W = Mat<float>::Random(sh.out, sh.in), y_f32(sh.T, sh.out);
            const Timing s = time_runs(runs, threads, [&] { y_f32.noalias() = x * W.transpose(); });
            std::printf("{\"impl\": \"sinkscope\", \"method\": \"eigen_f32\", \"type\": \"F32\", \"T\": %lld, \"in\": %lld, "
                        "\"out\": %lld, \"threads\": %d, \"runs\": %d, \"gflops\": %.1f, \"gflops_best\": %.1f, "
                        "\"gflops_cpu\": %.1f, \"weight_mb\": %.1f}\n",
                        static_cast<long long>(sh.T), static_cast<long long>(sh.in), static_cast<long long>(sh.out),
                        threads, runs, flop / s.median * 1e-9, flop / s.best * 1e-9, flop / s.cpu_median * 1e-9,
                        4.0 * double(W.size()) / 1e6);
            std::fflush(stdout);
        }
        for (GgmlType type : types) {
            if (sh.in % io::block_elements(type) != 0) {  // e.g. 576 inputs in Q4_K blocks of 256: llama.cpp
                // quantizes such tensors to a 32-block type instead
                std::printf("{\"impl\": \"sinkscope\", \"method\": \"skipped\", \"type\": \"%s\", \"T\": %lld, "
                            "\"in\": %lld, \"out\": %lld, \"why\": \"in is not a multiple of the block\"}\n",
                            io::type_name(type).c_str(), static_cast<long long>(sh.T), static_cast<long long>(sh.in),
                            static_cast<long long>(sh.out));
                continue;
            }
            const auto blocks = random_blocks(type, sh.out, sh.in, rng);
            const QuantMatrix Wq(type, sh.out, sh.in, blocks.data());
            Mat<float> W(sh.out, sh.in);
            io::dequantize<float>(type, blocks.data(), sh.out * sh.in, W.data());
            Mat<float> y_ref(sh.T, sh.out), y;
            auto report = [&](const char* method, const char* tname, const Timing& s, double err) {
                std::printf("{\"impl\": \"sinkscope\", \"method\": \"%s\", \"type\": \"%s\", \"T\": %lld, \"in\": %lld, "
                            "\"out\": %lld, \"threads\": %d, \"runs\": %d, \"gflops\": %.1f, \"gflops_best\": %.1f, "
                            "\"gflops_cpu\": %.1f, \"weight_mb\": %.1f, \"max_rel_err\": %.2e, \"simd\": %s}\n",
                            method, tname, static_cast<long long>(sh.T), static_cast<long long>(sh.in),
                            static_cast<long long>(sh.out), threads, runs, flop / s.median * 1e-9,
                            flop / s.best * 1e-9, flop / s.cpu_median * 1e-9,
                            double(Wq.bytes()) / 1e6,
                            err, detail::kInt8Simd ? "true" : "false");
                std::fflush(stdout);
            };
            y_ref.noalias() = x * W.transpose();
            const double scale = y_ref.cwiseAbs().maxCoeff();
            const Timing s_a = time_runs(runs, threads, [&] { linear_forward(y, x, Wq, Vec<float>(), QuantCompute::exact); });
            report("exact", io::type_name(type).c_str(), s_a, (y - y_ref).cwiseAbs().maxCoeff() / scale);
            const Timing s_b = time_runs(runs, threads, [&] { linear_forward(y, x, Wq, Vec<float>(), QuantCompute::int8); });
            report("int8", io::type_name(type).c_str(), s_b, (y - y_ref).cwiseAbs().maxCoeff() / scale);
            if (bf16_matmul_available()) {
                const Timing s_c = time_runs(runs, threads, [&] { linear_forward(y, x, Wq, Vec<float>(), QuantCompute::bf16); });
                report("bf16", io::type_name(type).c_str(), s_c, (y - y_ref).cwiseAbs().maxCoeff() / scale);
            }
        }
    }
    return 0;
}
