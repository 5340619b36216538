// sinkscope-train — trains the sinkscope transformer from scratch on the CPU (or, --device cuda, on a
// CUDA GPU) and records the attention-sink / residual-peak trace (Paper A §A4, Paper B §B6, Guo et al.'s
// Bigram-Backcopy).
//
//   sinkscope-train --task bigram-backcopy --steps 600 --out runs/bb          a fresh run
//   sinkscope-train --resume --out runs/bb                                  continue it (same settings)
//   sinkscope-train --smoke --out /tmp/smoke                                a seconds-long end-to-end run
//   sinkscope-train --prepare-text data/corpus/python_docs.txt --tokens data/corpus/python_docs.u16
//                                                                          byte-level tokens for --task text
// Every architecture switch of model::Config has a flag; `--help` lists them with their defaults.
// The run directory gets run.json, checkpoint.safetensors (atomic), trace.jsonl and trace.csv.
//
// The Bigram-Backcopy sink demonstration (Guo et al.'s setting scaled to a CPU: LayerNorm pre-norm,
// learned positions, GELU FFN, one head per layer, untied head, AdamW β₂ 0.99, weight decay 1e-4),
// about 5 minutes on 2 cores (a block comment, so that the shell's line continuations stay as they are):
/*   sinkscope-train --task bigram-backcopy --n-tokens 64 --triggers 3 --seq-len 128 --layers 2 --d-model 64 \
       --heads 1 --untied --norm layernorm --norm-bias --positions learned --ffn gelu --activation gelu_erf \
       --beta2 0.99 --weight-decay 1e-4 --batch 32 --lr 3e-3 --warmup 50 --steps 3000 --checkpoint-every 250 \
       --out runs/bigram_backcopy
*/
// It ends with the trace table (sink rate, α₀, top-3 |x|, ‖x₀‖ per layer) and the copy / bigram losses
// against their Bayes optima; trace.csv has the same numbers at every checkpoint.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <sinkscope/train.hpp>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

using namespace sinkscope;
namespace fs = std::filesystem;

namespace {

template <class E>
std::map<std::string, E> enum_map() {
    std::map<std::string, E> m;
    for (const auto& [value, name] : model::EnumNames<E>::values) m.emplace(name, value);
    return m;
}

std::string hms(double s) {
    if (!std::isfinite(s) || s < 0) return "?";
    const long t = long(s + 0.5);
    std::ostringstream os;
    if (t >= 3600) os << t / 3600 << "h" << std::setw(2) << std::setfill('0') << (t % 3600) / 60 << "m";
    else if (t >= 60) os << t / 60 << "m" << std::setw(2) << std::setfill('0') << t % 60 << "s";
    else os << t << "s";
    return os.str();
}

// Byte-level tokens: each UTF-8 byte is its own id (0..255); BOS is 256. Written as uint16 little-endian.
int prepare_text(const std::string& in, const std::string& out) {
    std::ifstream f(in, std::ios::binary);
    if (!f) throw Error("cannot open the text", {in, "", {}});
    std::ofstream o(out + ".tmp", std::ios::binary);
    if (!o) throw Error("cannot write the token file", {out + ".tmp", "", {}});
    std::int64_t n = 0;
    char buf[1 << 16];
    while (f.read(buf, sizeof buf) || f.gcount() > 0) {
        for (std::streamsize i = 0; i < f.gcount(); ++i) {
            const unsigned char b = static_cast<unsigned char>(buf[i]);
            const char le[2] = {char(b), 0};
            o.write(le, 2);
            ++n;
        }
    }
    o.close();
    fs::rename(out + ".tmp", out);
    std::cout << "prepare-text: " << n << " byte tokens (vocabulary 257, BOS = 256) -> " << out << "\n";
    return 0;
}

void print_summary(const train::TraceRecord& r, const model::Config& c) {
    std::cout << "\ntrace at step " << r.step << " (validation loss " << std::fixed << std::setprecision(4) << r.val_loss
              << ", eps = " << std::setprecision(2) << measures::kSinkEps << std::setprecision(4) << "):\n"
              << " layer  sink_rate  mean_alpha0   top1 |x| (ch, pos)   top2      top3     median|x|  |x_0|     mean|x_t>0|\n";
    for (std::size_t l = 0; l < r.layers.size(); ++l) {
        const auto& L = r.layers[l];
        double ma = 0;
        for (double a : L.alpha0) ma += a / double(L.alpha0.size());
        std::cout << std::setw(6) << l << std::setw(10) << std::setprecision(3) << L.sink_rate << std::setw(12) << ma
                  << std::setw(11) << std::setprecision(2) << L.top[0].value << " (" << L.top[0].channel << ", "
                  << L.top[0].position << ")" << std::setw(10) << L.top[1].value << std::setw(10) << L.top[2].value
                  << std::setw(11) << std::setprecision(3) << L.median_abs << std::setw(10) << std::setprecision(2)
                  << L.p0_norm << std::setw(12) << L.rest_norm << "\n";
    }
    std::cout.unsetf(std::ios::floatfield);
    (void)c;
}

// Bigram-Backcopy only: the model's loss after triggers (the copy, Bayes loss 0) and after ordinary
// tokens (the bigram), against the Bayes-optimal losses, on the trace's validation sequences.
template <class T>
void report_backcopy(const train::RunTrainer<T>& tr) {
    const auto* bb = dynamic_cast<const train::BigramBackcopy*>(&tr.data());
    if (!bb) return;
    double copy = 0, bigram = 0, bigram_opt = 0;
    std::int64_t n_copy = 0, n_bigram = 0;
    const model::Weights<T> w = tr.weights();  // (downloaded once from a device)
    for (std::int64_t i = 0; i < tr.config().eval_sequences; ++i) {
        const auto s = bb->sequence(std::uint64_t(i), true);
        const std::vector<std::int32_t> in(s.begin(), s.end() - 1);
        const model::Mat<T> logits = model::forward(tr.config().model, w, in);
        for (std::size_t t = 0; t + 1 < s.size(); ++t) {
            const double m = double(logits.row(t).maxCoeff());
            const double lse = m + std::log(double((logits.row(t).array() - T(m)).exp().sum()));
            const double l = lse - double(logits(t, s[t + 1]));
            if (t >= 1 && bb->is_trigger(s[t])) { copy += l; ++n_copy; }
            else { bigram += l; bigram_opt += bb->bayes_loss(s, t); ++n_bigram; }
        }
    }
    std::cout << std::fixed << std::setprecision(4) << "bigram-backcopy: copy loss (after a trigger) " << copy / double(std::max<std::int64_t>(1, n_copy))
              << " (optimal 0, " << n_copy << " positions); bigram loss " << bigram / double(std::max<std::int64_t>(1, n_bigram))
              << " (optimal " << bigram_opt / double(std::max<std::int64_t>(1, n_bigram)) << ")\n";
    std::cout.unsetf(std::ios::floatfield);
}

}  // namespace

int main(int argc, char** argv) {
#if defined(__GLIBC__)
    // Training allocates and frees the same large activation buffers every step; keep them in the heap
    // instead of mmap/munmap-ing (and page-faulting) them each time.
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
    CLI::App app{"sinkscope-train: train the sinkscope transformer from scratch and trace its attention sinks"};
    app.get_formatter()->column_width(36);

    model::Config c;
    c.architecture = "sinkscope";
    c.n_layers = 2; c.d_model = 128; c.n_heads = 4; c.n_kv_heads = 0; c.head_dim = 0; c.d_ff = 0;
    train::TrainConfig t;
    t.steps = 600; t.batch = 8; t.optim.lr = 3e-3; t.optim.warmup_steps = 30; t.optim.weight_decay = 0.1;
    t.optim.beta2 = 0.95; t.checkpoint_every = 100; t.eval_sequences = 8;
    std::string task = "bigram-backcopy", text_tokens, text_heldout, prepare, tokens_out, out, window, parallel = "sequences", matmul_precision = "float32";
    std::string device = "cpu";
    std::int64_t seq_len = 128, n_tokens = 64, triggers = 3, text_vocab = 257, text_bos = 256, log_every = 10;
    double dirichlet = 0.2, zipf_s = 1.0;
    std::uint64_t task_seed = 1;
    bool no_bos = false, resume = false, smoke = false, untied = false, quiet = false, dbl = false;

    // ---- model ----
    app.add_option("--layers", c.n_layers, "transformer blocks")->capture_default_str()->group("Model");
    app.add_option("--d-model", c.d_model, "residual width d")->capture_default_str()->group("Model");
    app.add_option("--heads", c.n_heads, "query heads H")->capture_default_str()->group("Model");
    app.add_option("--kv-heads", c.n_kv_heads, "key/value heads (GQA); 0: = heads")->capture_default_str()->group("Model");
    app.add_option("--head-dim", c.head_dim, "head dimension d_h; 0: d / H")->capture_default_str()->group("Model");
    app.add_option("--d-ff", c.d_ff, "FFN width; 0: 8d/3 rounded to 8 (SwiGLU) or 4d (GELU)")->capture_default_str()->group("Model");
    app.add_option("--context", c.context_length, "context length; 0: the sequence length (+1 with a sink token)")->group("Model");
    app.add_option("--norm", c.norm, "rmsnorm | layernorm | dynamic_tanh")
        ->transform(CLI::CheckedTransformer(enum_map<model::NormKind>()))
        ->capture_default_str()->group("Model");
    app.add_option("--placement", c.norm_placement, "pre | post | sandwich")
        ->transform(CLI::CheckedTransformer(enum_map<model::NormPlacement>()))
        ->capture_default_str()->group("Model");
    app.add_option("--norm-eps", c.norm_eps, "norm epsilon")->capture_default_str()->group("Model");
    app.add_flag("--qk-norm", c.qk_norm, "per-head RMSNorm of q and k (Qwen3)")->group("Model");
    app.add_option("--dyt-alpha-attn", c.dyt_alpha0_attn, "DynamicTanh initial alpha, attention-block norms")->capture_default_str()->group("Model");
    app.add_option("--dyt-alpha-other", c.dyt_alpha0_other, "DynamicTanh initial alpha, FFN and final norms")->capture_default_str()->group("Model");
    app.add_option("--ffn", c.ffn, "swiglu | gelu | linear | none")
        ->transform(CLI::CheckedTransformer(enum_map<model::FfnKind>()))
        ->capture_default_str()->group("Model");
    app.add_option("--activation", c.activation, "silu | gelu_tanh | gelu_erf (of SwiGLU's gate or the GELU FFN)")
        ->transform(CLI::CheckedTransformer(enum_map<model::Activation>()))
        ->capture_default_str()->group("Model");
    app.add_option("--attention", c.attention, "softmax | softmax_off_by_one | sink_token | kv_bias")
        ->transform(CLI::CheckedTransformer(enum_map<model::AttentionKind>()))
        ->capture_default_str()->group("Model");
    app.add_option("--gate", c.gate, "none | per_head | per_channel | static_per_head | static_per_channel")
        ->transform(CLI::CheckedTransformer(enum_map<model::GateKind>()))
        ->capture_default_str()->group("Model");
    app.add_option("--window", c.sliding_window, "sliding attention window (0: full causal)")->capture_default_str()->group("Model");
    app.add_option("--positions", c.positions, "rope | learned | none")
        ->transform(CLI::CheckedTransformer(enum_map<model::PositionKind>()))
        ->capture_default_str()->group("Model");
    app.add_option("--rope-base", c.rope_base, "RoPE base")->capture_default_str()->group("Model");
    app.add_option("--force-sink", c.force_sink_channels, "Paper A v2 force-sink: channels reserved for position 0 (0: off)")->capture_default_str()->group("Model");
    app.add_flag("--untied", untied, "separate output head (default: tied to the token embedding)")->group("Model");
    app.add_flag("--qkv-bias", c.qkv_bias, "biases on q, k, v")->group("Model");
    app.add_flag("--out-bias", c.out_bias, "bias on the attention output projection")->group("Model");
    app.add_flag("--mlp-bias", c.mlp_bias, "FFN biases")->group("Model");
    app.add_flag("--norm-bias", c.norm_bias, "LayerNorm / DynamicTanh bias")->group("Model");
    app.add_option("--init-std", t.init_std, "weight init standard deviation")->capture_default_str()->group("Model");

    // ---- data ----
    app.add_option("--task", task, "bigram-backcopy | zipf | text")
        ->check(CLI::IsMember({"bigram-backcopy", "zipf", "text"}))->capture_default_str()->group("Data");
    app.add_option("--seq-len", seq_len, "tokens per training sequence T")->capture_default_str()->group("Data");
    app.add_option("--n-tokens", n_tokens, "synthetic tasks: ordinary tokens (the vocabulary adds BOS)")->capture_default_str()->group("Data");
    app.add_option("--triggers", triggers, "bigram-backcopy: trigger tokens k")->capture_default_str()->group("Data");
    app.add_option("--dirichlet", dirichlet, "bigram-backcopy: Dirichlet concentration of the bigram rows")->capture_default_str()->group("Data");
    app.add_option("--zipf-exponent", zipf_s, "zipf: exponent s of p(i) ∝ (i+1)^-s")->capture_default_str()->group("Data");
    app.add_flag("--no-bos", no_bos, "synthetic tasks: no [BOS] at position 0")->group("Data");
    app.add_option("--task-seed", task_seed, "seed of the task (bigram table, data stream)")->capture_default_str()->group("Data");
    app.add_option("--text-tokens", text_tokens, "text: uint16 token file (see --prepare-text)")->group("Data");
    app.add_option("--text-heldout", text_heldout, "text: held-out uint16 token file for validation (scripts/make_english_corpus.sh); "
                                                   "default: every 20th block of --text-tokens")->group("Data");
    app.add_option("--text-vocab", text_vocab, "text: vocabulary size of the token file")->capture_default_str()->group("Data");
    app.add_option("--text-bos", text_bos, "text: BOS id prepended to each window (-1: none)")->capture_default_str()->group("Data");
    app.add_option("--prepare-text", prepare, "write byte-level tokens of this UTF-8 text file to --tokens, then exit")->group("Data");
    app.add_option("--tokens", tokens_out, "output of --prepare-text")->group("Data");

    // ---- optimisation ----
    app.add_option("--steps", t.steps, "optimizer steps")->capture_default_str()->group("Optimisation");
    app.add_option("--batch", t.batch, "sequences per step B")->capture_default_str()->group("Optimisation");
    app.add_option("--lr", t.optim.lr, "peak learning rate")->capture_default_str()->group("Optimisation");
    app.add_option("--min-lr-ratio", t.optim.min_lr_ratio, "final lr / peak lr (cosine)")->capture_default_str()->group("Optimisation");
    app.add_option("--warmup", t.optim.warmup_steps, "linear warmup steps")->capture_default_str()->group("Optimisation");
    app.add_option("--beta1", t.optim.beta1, "AdamW beta1")->capture_default_str()->group("Optimisation");
    app.add_option("--beta2", t.optim.beta2, "AdamW beta2")->capture_default_str()->group("Optimisation");
    app.add_option("--weight-decay", t.optim.weight_decay, "decoupled weight decay (weight matrices and embeddings only)")->capture_default_str()->group("Optimisation");
    app.add_option("--clip", t.optim.grad_clip, "global gradient-norm clip (<= 0: off)")->capture_default_str()->group("Optimisation");
    app.add_option("--loss-window", window, "loss only on positions [a,b) of each sequence, as a,b (b = -1: to the end)")->group("Optimisation");
    app.add_flag("--tnlm", t.loss.skip_first, "Paper A v2 TNLM: no loss at position 0")->group("Optimisation");

    // ---- run ----
    app.add_option("--seed", t.seed, "seed of the initial weights")->capture_default_str()->group("Run");
    app.add_option("--out", out, "run directory (run.json, checkpoint.safetensors, trace.jsonl, trace.csv)")->group("Run");
    app.add_flag("--resume", resume, "continue the run in --out from its checkpoint with its saved settings "
                                     "(a flag that would change one is refused)")->group("Run");
    app.add_option("--checkpoint-every", t.checkpoint_every, "steps between checkpoints + trace records (0: end only)")->capture_default_str()->group("Run");
    app.add_option("--eval-sequences", t.eval_sequences, "validation sequences of the trace")->capture_default_str()->group("Run");
    app.add_option("--threads", t.threads, "threads (0: OpenMP default)")->capture_default_str()->group("Run");
    app.add_option("--parallel", parallel, "sequences | gemm: OpenMP over sequences or inside the GEMMs")
        ->check(CLI::IsMember({"sequences", "gemm"}))->capture_default_str()->group("Run");
    app.add_option("--log-every", log_every, "steps between progress lines")->capture_default_str()->group("Run");
    app.add_option("--precision", matmul_precision, "float32 | bf16: bf16 products with float32 accumulation and master weights (oneDNN)")
        ->check(CLI::IsMember({"float32", "bf16"}))->capture_default_str()->group("Run");
    app.add_flag("--double", dbl, "train in double precision (slow; for checks)")->group("Run");
    app.add_option("--device", device, "cpu | cuda: cuda trains on CUDA device 0 (cuda::HostedTrainer: float32, pre-norm variants; "
                                       "same batches, trace and checkpoints, so either device resumes the other's run)")
        ->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str()->group("Run");
    app.add_flag("--no-check-finite", [&](std::int64_t) { t.check_finite = false; }, "skip the per-activation NaN/inf check")->group("Run");
    app.add_flag("--smoke", smoke, "tiny model, 20 steps: an end-to-end check in seconds")->group("Run");
    app.add_flag("--quiet", quiet, "no progress lines")->group("Run");

    CLI11_PARSE(app, argc, argv);

    try {
        if (!prepare.empty()) {
            if (tokens_out.empty()) throw Error("--prepare-text needs --tokens FILE");
            return prepare_text(prepare, tokens_out);
        }
        if (out.empty()) throw Error("--out DIR is required");
        auto go = [&](auto precision) -> int {
            using T = decltype(precision);
            std::unique_ptr<train::RunTrainer<T>> tr;
            auto make = [&](const train::TrainConfig& cfg, const train::Checkpoint<T>* ck) -> std::unique_ptr<train::RunTrainer<T>> {
                if (device == "cpu") return train::make_cpu_trainer<T>(cfg, ck, train::make_data(cfg.task));
                if constexpr (std::is_same_v<T, float>) return train::make_device_trainer(cfg, ck, train::make_data(cfg.task));
                else throw Error("--device cuda trains in float32: drop --double");
            };
            if (resume) {
                // The checkpoint's saved settings are the run's: a flag that would change one (--steps to train
                // longer, --lr, the model, the data) is refused here rather than silently ignored.
                const std::set<std::string> with_resume{"--out", "--resume", "--device", "--log-every", "--quiet", "--double"};
                std::string ignored;
                for (const CLI::Option* o : app.get_options())
                    if (o->count() > 0 && !with_resume.count(o->get_name())) ignored += (ignored.empty() ? "" : " ") + o->get_name();
                if (!ignored.empty())
                    throw Error("--resume continues " + out + " with the settings saved in its checkpoint; these flags would change "
                                "them and are refused: " + ignored + " (only --out, --device, --log-every, --quiet and --double go "
                                "with --resume; to change a setting, start a new run)");
                const std::string ck_path = out + "/checkpoint.safetensors";
                if (!fs::exists(ck_path)) throw Error("--resume: no checkpoint in the run directory", {ck_path, "", {}});
                const auto ck = train::load_checkpoint<T>(ck_path);
                // The arithmetic is a saved setting too: load_checkpoint converts F32 ↔ F64, which would continue a
                // float32 run in double (or the reverse) without a word.
                if (!ck.dtype.empty() && ck.dtype != train::dtype_name<T>())
                    throw Error(std::string("--resume: the run was trained in ") +
                                    (ck.dtype == "F64" ? "double: give --double" : "float32: drop --double"),
                                {ck_path, "", {}});
                const auto cfg = train::TrainConfig::from_json(ck.run);
                tr = make(cfg, &ck);
                std::cout << "resumed " << ck_path << " at step " << ck.step << "\n";
            } else {
                if (smoke) {
                    c.n_layers = 2; c.d_model = 32; c.n_heads = 2; seq_len = 32; n_tokens = 16; t.steps = 20; t.batch = 4;
                    t.checkpoint_every = 10; t.optim.warmup_steps = 2; t.eval_sequences = 2;
                }
                if (c.n_kv_heads == 0) c.n_kv_heads = c.n_heads;
                if (c.head_dim == 0) {
                    if (c.d_model % c.n_heads != 0)
                        throw Error("invalid config: d_model (" + std::to_string(c.d_model) + ") is not divisible by n_heads (" +
                                    std::to_string(c.n_heads) + ")");
                    c.head_dim = c.d_model / c.n_heads;
                }
                if (c.d_ff == 0) c.d_ff = c.ffn == model::FfnKind::gelu ? 4 * c.d_model : ((8 * c.d_model / 3 + 7) / 8) * 8;
                if (c.context_length == 0) c.context_length = seq_len + (c.attention == model::AttentionKind::sink_token ? 1 : 0);
                c.tied_embeddings = !untied;
                if (task == "text") {
                    if (text_tokens.empty()) throw Error("--task text needs --text-tokens FILE (make one with --prepare-text)");
                    t.task = {{"kind", "text"}, {"path", fs::absolute(text_tokens).string()}, {"vocab", text_vocab},
                              {"seq_len", seq_len}, {"seed", task_seed}, {"bos", text_bos}};
                    if (!text_heldout.empty()) t.task["heldout"] = fs::absolute(text_heldout).string();
                    c.vocab_size = text_vocab;
                } else {
                    t.task = {{"kind", task}, {"n_tokens", n_tokens}, {"seq_len", seq_len}, {"seed", task_seed}, {"bos", !no_bos}};
                    if (task == "bigram-backcopy") { t.task["triggers"] = triggers; t.task["dirichlet"] = dirichlet; }
                    else t.task["exponent"] = zipf_s;
                    c.vocab_size = n_tokens + 1;
                }
                if (!window.empty()) {
                    const auto comma = window.find(',');
                    if (comma == std::string::npos) throw Error("--loss-window wants a,b");
                    t.loss.begin = std::stoll(window.substr(0, comma));
                    t.loss.end = std::stoll(window.substr(comma + 1));
                }
                t.parallel = parallel == "gemm" ? train::Parallelism::gemm : train::Parallelism::sequences;
                t.precision = model::matmul_precision_from_string(matmul_precision, "--precision");
                t.optim.total_steps = t.steps;
                t.model = c;
                tr = make(t, nullptr);
            }
            const auto& cfg = tr->config();
            std::cout << "model:  " << cfg.model.describe() << "\n"
                      << "        " << model::parameter_count(tr->weights()) << " parameters, "
                      << (std::is_same_v<T, float> ? "float" : "double")
                      << (cfg.precision == model::MatmulPrecision::bf16 ? " weights, bf16 products" : "") << ", " << tr->compute() << "\n"
                      << "data:   " << tr->data().describe() << ", batch " << cfg.batch << "\n"
                      << "optim:  AdamW lr " << cfg.optim.lr << " (warmup " << cfg.optim.warmup_steps << ", cosine to "
                      << cfg.optim.min_lr_ratio << "x), betas " << cfg.optim.beta1 << "/" << cfg.optim.beta2 << ", wd "
                      << cfg.optim.weight_decay << ", clip " << cfg.optim.grad_clip << "; loss window [" << cfg.loss.begin << ", "
                      << cfg.loss.end << ")" << (cfg.loss.skip_first ? " + TNLM" : "") << "\n"
                      << "run:    " << out << ", " << cfg.steps << " steps, checkpoint every " << cfg.checkpoint_every << "\n";
            const auto t0 = std::chrono::steady_clock::now();
            const std::int64_t first = tr->current_step();
            double tokens = 0;
            train::run_training(*tr, out, [&](const train::StepResult& r) {
                tokens += double(r.tokens);
                const std::int64_t done = r.step + 1;
                if (quiet || (done % log_every != 0 && done != cfg.steps && done != first + 1)) return;
                const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                const double per_step = el / double(done - first);
                std::printf("step %6lld/%lld | loss %.4f | lr %.2e | |g| %.3f | %.0f tok/s | elapsed %s | ETA %s\n",
                            (long long)done, (long long)cfg.steps, r.loss, r.lr, r.grad_norm, tokens / el, hms(el).c_str(),
                            hms(per_step * double(cfg.steps - done)).c_str());
                std::fflush(stdout);
            });
            const auto last = tr->trace();
            print_summary(last, cfg.model);
            report_backcopy(*tr);
            std::cout << "\nwrote " << out << "/checkpoint.safetensors, trace.jsonl, trace.csv\n";
            return 0;
        };
        return dbl ? go(double{}) : go(float{});
    } catch (const Error& e) {
        std::cerr << e.what() << "\n";  // already "sinkscope: …"
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "sinkscope-train: " << e.what() << "\n";
        return 1;
    }
}
