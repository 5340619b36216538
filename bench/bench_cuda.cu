// Benchmark of the CUDA backend on one GPU. Prints one JSON line per measurement:
//
//   copy      cudaMemcpyAsync device → device of 1 GiB: the memory ceiling (bytes read + written / s)
//   kernel    each memory-bound kernel on ~1 GiB operands: GB/s (bytes it must read + write / s) and
//             its fraction of the copy bandwidth (target ≥ 0.70)
//   forward   SmolLM2-135M over `tokens` tokens: tokens/s without hooks (logits returned on the host, and
//             logits left on the device), with every layer's residual stream captured to the host (the
//             CPU bench's workload), and with the attention received per key position accumulated on
//             the device
//   train     the training issue's benchmark model (d 256, 4 layers, 4 heads, SwiGLU 688, T 256,
//             batch 8, vocab 512; RMSNorm pre-norm, RoPE, tied head; AdamW + clipping): tokens/s
//
// The PyTorch peer on the same GPU (bench/bench_cuda_torch.py) is run by bench/run_cuda_bench.sh, which
// prints the ratios. Weights: the GGUF when its path is given and readable; otherwise random weights of
// the same shape (the Config read from the GGUF's metadata into bench/smollm2_135m.config.json by
// `bench_cuda --write-config MODEL.gguf FILE`) — the timing does not depend on the values, and the
// 98 MB GGUF cannot always travel to the GPU machine.
//   usage: bench_cuda [MODEL.gguf|CONFIG.json] [tokens=512] [repeats=10] [what=all|memory|forward|train]
//          bench_cuda --write-config MODEL.gguf OUT.json
#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <sinkscope/core/measures.hpp>
#include <sinkscope/cuda.hpp>
#include <sinkscope/model/load.hpp>
#include <sinkscope/model/config_io.hpp>
#include <sinkscope/train/init.hpp>

using namespace sinkscope;
using nlohmann::json;

namespace {

// Median over `repeats` timed calls (after 2 warm-ups) of fn, in seconds, timed with CUDA events.
double time_median(cuda::Context& ctx, int repeats, const std::function<void()>& fn) {
    cudaEvent_t a, b;
    SINKSCOPE_CUDA_CHECK(cudaEventCreate(&a));
    SINKSCOPE_CUDA_CHECK(cudaEventCreate(&b));
    std::vector<double> t;
    for (int r = 0; r < repeats + 2; ++r) {
        SINKSCOPE_CUDA_CHECK(cudaEventRecord(a, ctx.stream()));
        fn();
        SINKSCOPE_CUDA_CHECK(cudaEventRecord(b, ctx.stream()));
        SINKSCOPE_CUDA_CHECK(cudaEventSynchronize(b));
        float ms = 0;
        SINKSCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
        if (r >= 2) t.push_back(double(ms) / 1e3);
    }
    SINKSCOPE_CUDA_CHECK(cudaEventDestroy(a));
    SINKSCOPE_CUDA_CHECK(cudaEventDestroy(b));
    return measures::upper_median_of(t);
}

void fill(cuda::Context& ctx, cuda::DeviceBuffer<float>& b, std::size_t n, float scale, std::uint32_t seed) {
    std::vector<float> h(std::min<std::size_t>(n, 1 << 20));
    std::uint32_t s = seed;
    for (auto& x : h) { s = s * 1664525u + 1013904223u; x = scale * (float(s >> 8) / float(1 << 24) - 0.5f); }
    b.resize(n);
    for (std::size_t off = 0; off < n; off += h.size())
        cuda::upload(b.data() + off, h.data(), std::min(h.size(), n - off), ctx.stream());
}

void memory_bench(cuda::Context& ctx, int repeats) {
    const std::size_t N = std::size_t(1) << 28;  // 2^28 floats = 1 GiB per operand
    cuda::DeviceBuffer<float> x, y, z;
    fill(ctx, x, N, 2.f, 1);
    fill(ctx, y, N, 2.f, 2);
    fill(ctx, z, N, 2.f, 3);
    const double copy_s = time_median(ctx, repeats, [&] {
        SINKSCOPE_CUDA_CHECK(cudaMemcpyAsync(y.data(), x.data(), N * sizeof(float), cudaMemcpyDeviceToDevice, ctx.stream()));
    });
    const double copy_gbps = 2.0 * double(N) * 4 / copy_s / 1e9;
    std::cout << json{{"bench", "copy"}, {"bytes", 2 * N * 4}, {"s", copy_s}, {"gbps", copy_gbps}}.dump() << std::endl;
    auto report = [&](const std::string& name, double bytes, double s) {
        const double gbps = bytes / s / 1e9;
        std::cout << json{{"bench", "kernel"}, {"kernel", name}, {"bytes", bytes}, {"s", s}, {"gbps", gbps},
                          {"fraction_of_copy", gbps / copy_gbps}}.dump()
                  << std::endl;
    };
    const double F = double(N) * 4;
    report("residual_add", 3 * F, time_median(ctx, repeats, [&] { cuda::add(ctx, y.data(), x.data(), std::int64_t(N)); }));
    report("swiglu", 3 * F, time_median(ctx, repeats, [&] {
        cuda::swiglu_forward(ctx, z.data(), x.data(), y.data(), model::Activation::silu, std::int64_t(N));
    }));
    {
        const std::int64_t d = 4096, rows = std::int64_t(N) / d;
        cuda::DeviceBuffer<float> g, b, alpha;
        fill(ctx, g, std::size_t(d), 2.f, 4);
        fill(ctx, b, std::size_t(d), 2.f, 5);
        fill(ctx, alpha, 1, 1.f, 6);
        const cuda::NormParams p{g.data(), b.data(), alpha.data()};
        report("rmsnorm d=4096", 2 * F, time_median(ctx, repeats, [&] {
            cuda::norm_forward(ctx, y.data(), x.data(), {g.data(), nullptr, nullptr}, model::NormKind::rmsnorm, 1e-5, rows, d);
        }));
        report("layernorm d=4096", 2 * F, time_median(ctx, repeats, [&] {
            cuda::norm_forward(ctx, y.data(), x.data(), p, model::NormKind::layernorm, 1e-5, rows, d);
        }));
        report("dynamic_tanh", 2 * F, time_median(ctx, repeats, [&] {
            cuda::norm_forward(ctx, y.data(), x.data(), p, model::NormKind::dynamic_tanh, 1e-5, rows, d);
        }));
        const std::int64_t d576 = 576, rows576 = std::int64_t(N) / d576;
        report("rmsnorm d=576", 2 * double(rows576 * d576) * 4, time_median(ctx, repeats, [&] {
            cuda::norm_forward(ctx, y.data(), x.data(), {g.data(), nullptr, nullptr}, model::NormKind::rmsnorm, 1e-5, rows576, d576);
        }));
    }
    {
        const std::int64_t n = 4096, H = 32, dh = 128, B = std::int64_t(N) / (n * H * dh);
        cuda::RopeTable table;
        table.ensure(ctx, n, dh, 10000.0);
        report("rope half_split", 2 * F, time_median(ctx, repeats, [&] {
            cuda::rope_forward(ctx, y.data(), table, B * n, n, H, dh, model::RopeLayout::half_split);
        }));
        report("rope interleaved", 2 * F, time_median(ctx, repeats, [&] {
            cuda::rope_forward(ctx, y.data(), table, B * n, n, H, dh, model::RopeLayout::interleaved);
        }));
    }
    for (auto t : {io::GgmlType::Q4_1, io::GgmlType::Q8_0, io::GgmlType::Q4_K, io::GgmlType::Q6_K, io::GgmlType::BF16}) {
        const std::int64_t n = std::int64_t(N);
        const std::size_t raw_bytes = std::size_t(io::tensor_bytes(t, n));
        cuda::DeviceBuffer<std::uint8_t> raw(raw_bytes);
        SINKSCOPE_CUDA_CHECK(cudaMemsetAsync(raw.data(), 0x3c, raw_bytes, ctx.stream()));
        report("dequantize " + io::type_name(t), double(raw_bytes) + F,
               time_median(ctx, repeats, [&] { cuda::dequantize(ctx, t, raw.data(), n, y.data()); }));
    }
    {
        const std::size_t n = N / 2;  // 4 operands of n floats
        cuda::DeviceBuffer<float> p, g, m, v;
        fill(ctx, p, n, 1.f, 7); fill(ctx, g, n, 1.f, 8); fill(ctx, m, n, 0.f, 9); fill(ctx, v, n, 0.f, 10);
        report("adamw", 7 * double(n) * 4, time_median(ctx, repeats, [&] {
            cuda::detail::adamw_kernel<<<cuda::detail::blocks_for(std::int64_t(n), 256), 256, 0, ctx.stream()>>>(
                p.data(), g.data(), m.data(), v.data(), std::int64_t(n), 0.9999f, 1, 0.9f, 0.95f, 1e-8f, 1e-3f, 0.5f);
            SINKSCOPE_CUDA_CHECK_LAUNCH("adamw_kernel");
        }));
    }
    {
        const std::int64_t V = 49152, rows = std::int64_t(N) / V;
        std::vector<std::int32_t> tg(static_cast<std::size_t>(rows));
        for (std::size_t i = 0; i < tg.size(); ++i) tg[i] = std::int32_t((i * 7919) % std::size_t(V));
        cuda::DeviceBuffer<std::int32_t> dt;
        dt.upload(tg, ctx.stream());
        cuda::DeviceBuffer<double> scratch;
        fill(ctx, x, N, 8.f, 11);
        report("cross_entropy (loss + dlogits) V=49152", 2 * double(rows * V) * 4, time_median(ctx, repeats, [&] {
            cuda::cross_entropy(ctx, y.data(), x.data(), dt.data(), 1, rows, V, train::LossMask{}, 1.f, scratch);
        }));
        const std::int64_t n = 2048;
        report("softmax_rows n=2048", 2 * F, time_median(ctx, repeats, [&] {
            cuda::softmax_rows(ctx, y.data(), x.data(), nullptr, std::int64_t(N) / n, n);
        }));
    }
    {
        const std::int64_t V = 49152, d = 576, rows = std::int64_t(N) / 2 / d;  // table 113 MB, output 0.5 GiB
        std::vector<std::int32_t> tok(static_cast<std::size_t>(rows));
        for (std::size_t i = 0; i < tok.size(); ++i) tok[i] = std::int32_t((i * 2654435761u) % std::size_t(V));
        cuda::DeviceBuffer<std::int32_t> dt;
        dt.upload(tok, ctx.stream());
        report("embedding gather d=576", 2 * double(rows * d) * 4, time_median(ctx, repeats, [&] {
            cuda::embedding_forward(ctx, y.data(), x.data(), dt.data(), nullptr, 1, rows, d);
        }));
    }
}

model::Config smollm2_config(const std::string& arg, model::Weights<float>& w, bool& real) {
    if (arg.size() > 5 && arg.substr(arg.size() - 5) == ".gguf" && std::ifstream(arg).good()) {
        auto m = model::load_model<float>(arg);
        w = std::move(m.weights);
        real = true;
        return m.config;
    }
    std::ifstream f(arg);
    if (!f.good()) throw Error("bench_cuda: neither a readable GGUF nor a config JSON", {arg, "", {}});
    const model::Config c = model::config_from_json(json::parse(f));
    w = train::init_weights<float>(c, 1);
    real = false;
    return c;
}

void forward_bench(cuda::Context& ctx, const std::string& model_arg, std::int64_t T, int repeats) {
    model::Weights<float> w;
    bool real = false;
    const model::Config c = smollm2_config(model_arg, w, real);
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(T));
    for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = std::int32_t((i * 2654435761u + 1) % std::uint64_t(c.vocab_size));
    const auto dw = cuda::upload(ctx, c, w);
    cuda::Workspace ws;
    auto run = [&](const model::HookSet<float>* hooks, cuda::ForwardOptions o) {
        return time_median(ctx, repeats, [&] { cuda::forward(ctx, ws, c, dw, tokens, hooks, o); });
    };
    const double plain = run(nullptr, {});
    // The same work with the logits left on the device (as the PyTorch peer's plain forward leaves them):
    // cuda::forward's contract returns them on the host, a (T × vocab) float download into a fresh matrix.
    const double device_logits = time_median(ctx, repeats, [&] { cuda::detail::run_forward(ctx, ws, c, dw, tokens, 1, nullptr, {}, false); });
    model::HookSet<float> hooks;
    model::ActivationCache<float> cache;
    cache.attach(hooks, [](const std::string& n) { return n.find("hook_resid_post") != std::string::npos; });
    const double capture = run(&hooks, {});
    cuda::AttentionReceived recv(ctx, c.n_layers, c.n_heads, T);
    cuda::ForwardOptions o;
    o.received = &recv;
    const double received = run(nullptr, o);
    std::size_t captured = 0;
    for (const auto& [k, v] : cache.all()) captured += v.data.size() * sizeof(float);
    std::cout << json{{"bench", "forward"}, {"model", c.describe()}, {"weights", real ? "gguf" : "random (same shape)"},
                      {"tokens", T}, {"s_plain", plain}, {"tokens_per_s_plain", double(T) / plain},
                      {"s_device_logits", device_logits}, {"tokens_per_s_device_logits", double(T) / device_logits},
                      {"s_capture_resid_post", capture}, {"tokens_per_s_capture", double(T) / capture},
                      {"captured_mb", double(captured) / 1e6}, {"s_attention_received", received},
                      {"tokens_per_s_attention_received", double(T) / received}}.dump()
              << std::endl;
}

void train_bench(cuda::Context& ctx, int steps) {
    model::Config c;
    c.architecture = "sinkscope";
    c.n_layers = 4; c.d_model = 256; c.n_heads = 4; c.n_kv_heads = 4; c.head_dim = 64; c.d_ff = 688;
    c.vocab_size = 512; c.context_length = 256;
    const std::int64_t T = 256, B = 8;
    train::AdamWConfig o;
    o.lr = 1e-3; o.beta1 = 0.9; o.beta2 = 0.95; o.eps = 1e-8; o.weight_decay = 0.1; o.grad_clip = 1.0;
    o.warmup_steps = 0; o.total_steps = steps + 2;
    cuda::Trainer tr(ctx, c, train::init_weights<float>(c, 0), o);
    std::uint32_t s = 1;
    std::vector<std::vector<std::int32_t>> batch(std::size_t(B), std::vector<std::int32_t>(std::size_t(T + 1)));
    double loss = 0;
    std::vector<double> times;
    for (int r = 0; r < steps + 2; ++r) {  // two warm-ups
        for (auto& seq : batch)
            for (auto& t : seq) { s = s * 1664525u + 1013904223u; t = std::int32_t((s >> 8) % 512u); }
        ctx.synchronize();
        const auto t0 = std::chrono::steady_clock::now();
        loss = tr.step(batch, train::LossMask{});
        ctx.synchronize();
        if (r >= 2) times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    const double step_s = measures::upper_median_of(times);
    // forward + backward ≈ 3 × forward; GEMMs and the (full square) attention products
    const double d = 256, ff = 688, V = 512;
    const double per_token = 4 * (2.0 * (4 * d * d + 3 * d * ff) + 4.0 * double(T) * d) + 2.0 * d * V;
    const double flops = 3.0 * per_token * double(T * B);
    std::cout << json{{"bench", "train"}, {"impl", "sinkscope-cuda"}, {"model", c.describe()}, {"tokens_per_step", T * B},
                      {"steps", steps}, {"step_s", step_s}, {"tokens_per_s", double(T * B) / step_s},
                      {"achieved_tflops", flops / step_s / 1e12}, {"last_loss", loss}}.dump()
              << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        if (argc >= 2 && std::string(argv[1]) == "--write-config") {
            if (argc < 4) { std::cerr << "usage: bench_cuda --write-config MODEL.gguf OUT.json\n"; return 2; }
            const auto m = model::load_model<float>(argv[2]);
            std::ofstream(argv[3]) << model::config_to_json(m.config).dump(1) << "\n";
            return 0;
        }
        const std::string model_arg = argc > 1 ? argv[1] : "bench/smollm2_135m.config.json";
        const std::int64_t tokens = argc > 2 ? std::stoll(argv[2]) : 512;
        const int repeats = argc > 3 ? std::stoi(argv[3]) : 10;
        const std::string what = argc > 4 ? argv[4] : "all";
        const auto st = cuda::device_status();
        if (st.count == 0) {
            std::cout << json{{"bench", "skipped"}, {"reason", "no CUDA device: " + st.reason}}.dump() << std::endl;
            return 0;
        }
        cuda::Context ctx(0);
        int driver = 0, runtime = 0;
        SINKSCOPE_CUDA_CHECK(cudaDriverGetVersion(&driver));
        SINKSCOPE_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
        std::cout << json{{"bench", "device"}, {"name", ctx.device_name()}, {"sm", std::to_string(ctx.properties().major) + "." +
                                                                                     std::to_string(ctx.properties().minor)},
                          {"memory_gib", double(ctx.properties().totalGlobalMem) / double(1 << 30)}, {"driver", driver},
                          {"runtime", runtime}}.dump()
                  << std::endl;
        if (what == "all" || what == "memory") memory_bench(ctx, repeats);
        if (what == "all" || what == "forward") forward_bench(ctx, model_arg, tokens, repeats);
        if (what == "all" || what == "train") train_bench(ctx, repeats);
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "bench_cuda: " << e.what() << "\n";
        return 1;
    }
}
