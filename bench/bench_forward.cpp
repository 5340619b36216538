// Benchmark: SmolLM2-135M forward over 512 tokens with the residual stream of every layer captured.
// Prints model load time, the median forward time over repeats, tokens/s, peak RSS and the forward's
// arithmetic (GFLOP, and GFLOP/s at the median) as one JSON line. The timed forwards reuse one logits
// matrix and one capture cache, as a loop over many texts does; fresh_* time forwards that allocate both
// anew each time.
// The peer (bench/bench_forward_hf.py, Hugging Face transformers) is run by bench/run_forward_bench.sh
// in the same session, which prints the ratio.
//   usage: bench_forward MODEL TEXT_FILE [tokens=512] [repeats=5] [weights=float32|file|bf16] [compute=exact|int8|bf16]
// MODEL is a GGUF or a Hugging Face directory; TEXT_FILE "-" takes fixed token ids instead of text (for a
// model without a tokenizer, such as scripts/make_layout_safetensors.py's). weights=file keeps the linear
// maps in their file types (model::LoadOptions); compute picks how they are multiplied
// (model::load_options_from: exact, int8, or bf16 — bf16 inputs and float32 accumulation through oneDNN for
// dense maps and BF16 views, layers/bf16_matmul.hpp).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <sstream>

#include <sinkscope/analysis/text.hpp>
#include <sinkscope/core/measures.hpp>
#include <sinkscope/layers/bf16_matmul.hpp>
#include <sinkscope/model/forward.hpp>
#include <sinkscope/model/load.hpp>

using namespace sinkscope;
using clock_type = std::chrono::steady_clock;

int main(int argc, char** argv) {
    if (argc < 3) {
        std::cerr << "usage: bench_forward MODEL TEXT_FILE|- [tokens=512] [repeats=5] [weights=float32|file|bf16] [compute=exact|int8|bf16]\n";
        return 2;
    }
    const std::int64_t n_tokens = argc > 3 ? std::stoll(argv[3]) : 512;
    const int repeats = argc > 4 ? std::stoi(argv[4]) : 5;
    const std::string weights = argc > 5 ? argv[5] : "float32", compute = argc > 6 ? argv[6] : "exact";
    try {
        const model::LoadOptions options = model::load_options_from(weights, compute);
        auto t0 = clock_type::now();
        const auto m = model::load_model<float>(argv[1], options);
        const double load_s = std::chrono::duration<double>(clock_type::now() - t0).count();
        std::vector<std::int32_t> ids;
        if (std::string(argv[2]) == "-") {
            for (std::int64_t i = 0; i < n_tokens; ++i) ids.push_back(std::int32_t((i * 7919 + 13) % m.config.vocab_size));
        } else {
            const auto tok = analysis::tokenizer_for(m);
            ids = tok.encode(analysis::read_text_file(argv[2]), false);
            while (std::int64_t(ids.size()) < n_tokens) ids.insert(ids.end(), ids.begin(), ids.end());
            ids.resize(n_tokens);
        }

        // Two loops of repeats + 1 forwards (the first of each a warm-up): the loop a researcher writes over
        // many texts, one capture cache attached once and one logits matrix (model::forward_into), whose
        // buffers are overwritten in place; and a fresh cache and logits matrix for every forward, whose
        // pages come new from the kernel each time (the fresh_* fields).
        std::vector<double> times, fresh_times;
        std::size_t captured_bytes = 0;
        auto resid = [](const std::string& n) { return n.find("hook_resid_post") != std::string::npos; };
        model::HookSet<float> kept_hooks;
        model::ActivationCache<float> kept_cache;
        kept_cache.attach(kept_hooks, resid);
        model::Mat<float> kept_logits;
        for (int r = 0; r < repeats + 1; ++r) {
            t0 = clock_type::now();
            model::forward_into(kept_logits, m.config, m.weights, ids, &kept_hooks);
            if (r) times.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
            if (kept_logits.rows() != n_tokens || std::int64_t(kept_cache.all().size()) != m.config.n_layers) return 1;
        }
        for (const auto& [k, v] : kept_cache.all()) captured_bytes += v.data.size() * sizeof(float);
        for (int r = 0; r < repeats + 1; ++r) {
            model::HookSet<float> hooks;
            model::ActivationCache<float> cache;
            cache.attach(hooks, resid);
            t0 = clock_type::now();
            const auto logits = model::forward(m.config, m.weights, ids, &hooks);
            if (r) fresh_times.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
            if (logits.rows() != n_tokens || std::int64_t(cache.all().size()) != m.config.n_layers) return 1;
        }
        const double fresh_median = measures::upper_median_of(fresh_times);
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
        const double median = measures::upper_median_of(times);
        // With compute=bf16, the rates that bound it (layers/bf16_matmul.hpp, same threads): the bf16 GEMM at
        // 2048³, the forward's own linear products at T rows (linear_forward, weights converted to bf16 on
        // every call, as the forward does), and what converting the weights alone costs (bf16_matmul's own conversion,
// in memory order: what a cache of bf16 weights would save, at most).
        std::string bf16_fields;
        if (compute == "bf16" && !m.weights.file_type()) {
            auto median_s = [](int runs, auto&& f) {
                std::vector<double> ts;
                for (int i = 0; i < runs + 1; ++i) {
                    const auto a = clock_type::now();
                    f();
                    if (i) ts.push_back(std::chrono::duration<double>(clock_type::now() - a).count());
                }
                return measures::upper_median_of(ts);
            };
            const std::int64_t n = 2048;
            const model::Mat<float> A = model::Mat<float>::Random(n, n), B = model::Mat<float>::Random(n, n);
            model::Mat<float> C(n, n);
            const double gemm_s = median_s(7, [&] { model::bf16_matmul(C.data(), n, model::matrix_ref(A), model::matrix_ref(B), false); });
            const auto& L = m.weights.layers[0];
            std::vector<std::pair<const model::Mat<float>*, double>> maps{
                {&L.wq, c.n_layers}, {&L.wk, c.n_layers}, {&L.wv, c.n_layers}, {&L.wo, c.n_layers}, {&L.w_up, c.n_layers},
                {&L.w_down, c.n_layers}, {&m.weights.output_head(), 1}};
            if (L.w_gate.size()) maps.push_back({&L.w_gate, c.n_layers});
            double linear_s = 0, pack_s = 0, linear_flop = 0;
            std::vector<std::uint16_t> packed;
            for (const auto& [W, count] : maps) {
                const model::Mat<float> x = model::Mat<float>::Random(n_tokens, W->cols());
                model::Mat<float> y;
                const model::detail::ForwardPrecision bf16(m.weights);  // as in the forward: no bf16 weight copy kept
                linear_s += count * median_s(5, [&] { model::linear_forward(y, x, *W, model::Vec<float>()); });
                packed.resize(std::size_t(W->size()));
                pack_s += count * median_s(5, [&] { model::detail::convert_bf16(packed.data(), W->data(), W->size()); });
                linear_flop += count * 2.0 * double(n_tokens) * double(W->rows()) * double(W->cols());
            }
            std::ostringstream os;
            os << ", \"bf16_gemm_2048_gflop_per_s\": " << 2.0 * n * n * n / gemm_s / 1e9
               << ", \"bf16_linear_s\": " << linear_s << ", \"bf16_linear_gflop_per_s\": " << linear_flop / linear_s / 1e9
               << ", \"bf16_weight_convert_s\": " << pack_s;
            bf16_fields = os.str();
        }
        rusage ru{};
        getrusage(RUSAGE_SELF, &ru);
        std::cout << "{\"impl\": \"sinkscope\", \"weights\": \"" << weights << "\", \"compute\": \"" << compute
                  << "\", \"threads\": " << Eigen::nbThreads() << ", \"tokens\": " << n_tokens << ", \"repeats\": " << repeats
                  << ", \"load_s\": " << load_s << ", \"forward_median_s\": " << median
                  << ", \"tokens_per_s\": " << double(n_tokens) / median << ", \"peak_rss_mb\": " << ru.ru_maxrss / 1024.0
                  << ", \"captured_mb\": " << captured_bytes / 1048576.0 << ", \"gflop\": " << gflop
                  << ", \"gflop_per_s\": " << gflop / median << ", \"fresh_forward_median_s\": " << fresh_median
                  << ", \"fresh_tokens_per_s\": " << double(n_tokens) / fresh_median << bf16_fields << "}\n";
    } catch (const Error& e) {
        std::cerr << e.what() << "\n";
        return 2;
    }
    return 0;
}
