// Benchmark: SmolLM2-135M forward over 512 tokens with the residual stream of every layer captured.
// Prints model load time, the median forward time over repeats, tokens/s, peak RSS and the forward's
// arithmetic (GFLOP, and GFLOP/s at the median) as one JSON line.
// The peer (bench/bench_forward_hf.py, Hugging Face transformers) is run by bench/run_forward_bench.sh
// in the same session, which prints the ratio.
//   usage: bench_forward MODEL.gguf TEXT_FILE [tokens=512] [repeats=5] [weights=float32|file] [compute=exact|int8]
// weights=file keeps the GGUF's linear maps in their types (model::LoadOptions); compute picks how they are
// multiplied (layers/quantized_linear.hpp).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include <sinkscope/analysis/text.hpp>
#include <sinkscope/model/forward.hpp>
#include <sinkscope/model/load.hpp>

using namespace sinkscope;
using clock_type = std::chrono::steady_clock;

int main(int argc, char** argv) {
    if (argc < 3) {
        std::cerr << "usage: bench_forward MODEL.gguf TEXT_FILE [tokens=512] [repeats=5] [weights=float32|file] [compute=exact|int8]\n";
        return 2;
    }
    const std::int64_t n_tokens = argc > 3 ? std::stoll(argv[3]) : 512;
    const int repeats = argc > 4 ? std::stoi(argv[4]) : 5;
    const std::string weights = argc > 5 ? argv[5] : "float32", compute = argc > 6 ? argv[6] : "exact";
    if ((weights != "float32" && weights != "file") || (compute != "exact" && compute != "int8")) {
        std::cerr << "bench_forward: weights must be float32 or file, compute exact or int8\n";
        return 2;
    }
    try {
        model::LoadOptions options;
        options.storage = weights == "file" ? model::WeightStorage::file_type : model::WeightStorage::float32;
        options.compute = compute == "int8" ? model::QuantCompute::int8 : model::QuantCompute::exact;
        auto t0 = clock_type::now();
        const auto m = model::load_model<float>(argv[1], options);
        const double load_s = std::chrono::duration<double>(clock_type::now() - t0).count();
        const auto tok = analysis::tokenizer_for(m);
        std::string text = analysis::read_text_file(argv[2]);
        std::vector<std::int32_t> ids = tok.encode(text, false);
        while (std::int64_t(ids.size()) < n_tokens) ids.insert(ids.end(), ids.begin(), ids.end());
        ids.resize(n_tokens);

        std::vector<double> times;
        std::size_t captured_bytes = 0;
        for (int r = 0; r < repeats + 1; ++r) {  // first run is a warm-up
            model::HookSet<float> hooks;
            model::ActivationCache<float> cache;
            cache.attach(hooks, [](const std::string& n) { return n.find("hook_resid_post") != std::string::npos; });
            t0 = clock_type::now();
            const auto logits = model::forward(m.config, m.weights, ids, &hooks);
            const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
            if (r) times.push_back(s);
            captured_bytes = 0;
            for (const auto& [k, v] : cache.all()) captured_bytes += v.data.size() * sizeof(float);
            if (logits.rows() != n_tokens || std::int64_t(cache.all().size()) != m.config.n_layers) return 1;
        }
        std::sort(times.begin(), times.end());
        // Arithmetic of one forward (multiply-add = 2 FLOP): every linear map, the output head, and causal
        // attention (QKᵀ and P·V over the T(T+1)/2 visible query-key pairs of each head).
        const auto& c = m.config;
        const double T = double(n_tokens), d = double(c.d_model);
        const double ffn_mats = c.ffn == model::FfnKind::swiglu ? 3.0 : 2.0;
        const double per_token_linear =
            2.0 * c.n_layers * (d * (c.q_dim() + 2.0 * c.kv_dim()) + c.q_dim() * d + ffn_mats * d * c.d_ff) +
            2.0 * d * c.vocab_size;
        const double attention = 2.0 * 2.0 * c.n_layers * c.n_heads * c.head_dim * T * (T + 1) / 2;
        const double gflop = (per_token_linear * T + attention) / 1e9;
        const double median = times[times.size() / 2];
        rusage ru{};
        getrusage(RUSAGE_SELF, &ru);
        std::cout << "{\"impl\": \"sinkscope\", \"weights\": \"" << weights << "\", \"compute\": \"" << compute
                  << "\", \"tokens\": " << n_tokens << ", \"repeats\": " << repeats
                  << ", \"load_s\": " << load_s << ", \"forward_median_s\": " << median
                  << ", \"tokens_per_s\": " << double(n_tokens) / median << ", \"peak_rss_mb\": " << ru.ru_maxrss / 1024.0
                  << ", \"captured_mb\": " << captured_bytes / 1048576.0 << ", \"gflop\": " << gflop
                  << ", \"gflop_per_s\": " << gflop / median << "}\n";
    } catch (const Error& e) {
        std::cerr << e.what() << "\n";
        return 2;
    }
    return 0;
}
