// Trainer: batches, AdamW steps, checkpoints, the training trace, NaN stops and resume.
//
// One step (B sequences of T tokens, drawn by DataSource::sequence(step·B + b)):
//   for each sequence (in parallel over sequences, or one after another with parallel GEMMs):
//     forward with a TapeRecorder (checks every saved activation for NaN/inf)
//     cross-entropy (mean over the B·N counted positions of the batch) and ∂L/∂logits
//     backward into that thread's gradient buffer
//   sum the per-thread buffers in thread order; global-norm clip; AdamW at the scheduled lr.
// Determinism: the batch depends only on (seed, step); with a fixed thread count the arithmetic order
// is fixed, so a resumed run repeats the uninterrupted one bit for bit (tested with one thread).
//
// Parallelism (measured on the 2-core development machine, see bench/README or the PR note):
//   sequences  each thread runs whole sequences with single-threaded Eigen (no synchronisation
//              inside a step; per-thread gradients, summed once)
//   gemm       sequences one by one; Eigen's GEMMs and the per-head loops use all threads
//
// Precision (TrainConfig::precision): float32, or bf16 — every product of a linear layer (forward and
// backward, layers/linear.hpp) and of the attention (q·kᵀ, p·v and their gradients, layers/attention.hpp)
// takes bf16 inputs and accumulates in float32 (oneDNN: AMX or AVX512-BF16), like PyTorch's CPU
// autocast; weights, optimizer state, gradients, norms, softmax and the scores' storage stay float32
// (master weights in float32). The validation trace always runs in float32.
//
// Faults: a non-finite activation, loss or gradient throws sinkscope::Error naming the step, the layer
// and the operation (the hook name, or the parameter); nothing is saved after the fault, so the last
// checkpoint on disk is the last good one.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif
#include <Eigen/Core>

#include "sinkscope/core/error.hpp"
#include "sinkscope/core/measures.hpp"
#include "sinkscope/layers/bf16_matmul.hpp"
#include "sinkscope/model/config.hpp"
#include "sinkscope/model/weights.hpp"
#include "sinkscope/train/checkpoint.hpp"
#include "sinkscope/model/config_io.hpp"
#include "sinkscope/train/data.hpp"
#include "sinkscope/train/init.hpp"
#include "sinkscope/train/loss.hpp"
#include "sinkscope/train/model_backward.hpp"
#include "sinkscope/train/optimizer.hpp"
#include "sinkscope/train/tape.hpp"
#include "sinkscope/train/trace.hpp"

namespace sinkscope::train {

enum class Parallelism { sequences, gemm };

struct TrainConfig {
    model::Config model;
    AdamWConfig optim;
    LossMask loss;
    nlohmann::json task = nlohmann::json::object();  // the data source (make_data), kept for resume
    std::int64_t batch = 8;
    std::int64_t steps = 100;
    std::uint64_t seed = 1;            // weights; the task has its own seed in `task`
    double init_std = 0.02;
    std::int64_t checkpoint_every = 0; // 0: only at the end
    std::int64_t eval_sequences = 8;   // validation sequences of the trace
    double sink_eps = measures::kSinkEps;
    std::int64_t threads = 0;          // 0: OpenMP's default
    Parallelism parallel = Parallelism::sequences;
    bool check_finite = true;
    model::MatmulPrecision precision = model::MatmulPrecision::float32;

    // Rejects impossible settings with a message naming the setting.
    void validate(std::int64_t seq_len) const {
        model.validate();
        require(model.backward_missing_switches().empty(),
                "training: the backward pass does not implement " + model.backward_missing_switches());
        require(model.d_model % model.n_heads == 0 || model.architecture != "sinkscope",
                "invalid config: d_model (" + std::to_string(model.d_model) + ") is not divisible by n_heads (" +
                    std::to_string(model.n_heads) + ")");
        const std::int64_t positions = seq_len + (model.attention == model::AttentionKind::sink_token ? 1 : 0);
        require(positions <= model.context_length,
                "invalid config: sequences of " + std::to_string(seq_len) + " tokens" +
                    (positions > seq_len ? " plus the sink token" : "") + " exceed the context length " +
                    std::to_string(model.context_length));
        require(batch >= 1, "invalid config: batch must be >= 1");
        require(steps >= 1, "invalid config: steps must be >= 1");
        require(checkpoint_every >= 0, "invalid config: checkpoint_every must be >= 0");
        require(eval_sequences >= 1, "invalid config: eval_sequences must be >= 1");
        require(init_std > 0, "invalid config: init_std must be > 0");
        optim.validate();
        loss.validate(seq_len);
        require(precision == model::MatmulPrecision::float32 || model::bf16_matmul_available(),
                "training: precision bf16 needs oneDNN, and this build has none (install Debian's libdnnl-dev, rebuild)");
    }

    nlohmann::json to_json() const {
        return {{"model", model::config_to_json(model)},
                {"optim", {{"lr", optim.lr}, {"beta1", optim.beta1}, {"beta2", optim.beta2}, {"eps", optim.eps},
                           {"weight_decay", optim.weight_decay}, {"grad_clip", optim.grad_clip},
                           {"warmup_steps", optim.warmup_steps}, {"total_steps", optim.total_steps},
                           {"min_lr_ratio", optim.min_lr_ratio}}},
                {"loss", {{"begin", loss.begin}, {"end", loss.end}, {"skip_first", loss.skip_first}}},
                {"task", task}, {"batch", batch}, {"steps", steps}, {"seed", seed}, {"init_std", init_std},
                {"checkpoint_every", checkpoint_every}, {"eval_sequences", eval_sequences}, {"sink_eps", sink_eps},
                {"threads", threads}, {"parallel", parallel == Parallelism::gemm ? "gemm" : "sequences"},
                {"check_finite", check_finite}, {"precision", model::to_string(precision)}};
    }
    static TrainConfig from_json(const nlohmann::json& j) {
        TrainConfig t;
        t.model = model::config_from_json(j.at("model"));
        const auto& o = j.at("optim");
        t.optim.lr = o.at("lr"); t.optim.beta1 = o.at("beta1"); t.optim.beta2 = o.at("beta2"); t.optim.eps = o.at("eps");
        t.optim.weight_decay = o.at("weight_decay"); t.optim.grad_clip = o.at("grad_clip");
        t.optim.warmup_steps = o.at("warmup_steps"); t.optim.total_steps = o.at("total_steps");
        t.optim.min_lr_ratio = o.at("min_lr_ratio");
        const auto& l = j.at("loss");
        t.loss = {l.at("begin").get<std::int64_t>(), l.at("end").get<std::int64_t>(), l.at("skip_first").get<bool>()};
        t.task = j.at("task");
        t.batch = j.at("batch"); t.steps = j.at("steps"); t.seed = j.at("seed"); t.init_std = j.at("init_std");
        t.checkpoint_every = j.at("checkpoint_every"); t.eval_sequences = j.at("eval_sequences");
        t.sink_eps = j.at("sink_eps"); t.threads = j.at("threads");
        t.parallel = j.at("parallel").get<std::string>() == "gemm" ? Parallelism::gemm : Parallelism::sequences;
        t.check_finite = j.at("check_finite");
        // Checkpoints written before the setting existed trained in float32.
        t.precision = model::matmul_precision_from_string(j.value("precision", std::string("float32")),
                                                          "training settings: precision");
        return t;
    }
};

// Builds the data source a task JSON describes:
//   {"kind": "bigram-backcopy", "n_tokens": N, "seq_len": T, "triggers": k, "seed": s, "bos": true, "dirichlet": α}
//   {"kind": "zipf", "n_tokens": N, "seq_len": T, "seed": s, "exponent": 1.0, "bos": true}
//   {"kind": "text", "path": file, "vocab": V, "seq_len": T, "seed": s, "bos": id or -1}
inline std::shared_ptr<DataSource> make_data(const nlohmann::json& t) {
    const std::string kind = t.value("kind", "");
    if (kind == "bigram-backcopy")
        return std::make_shared<BigramBackcopy>(t.at("n_tokens").get<std::int64_t>(), t.at("seq_len").get<std::int64_t>(),
                                                t.value("triggers", std::int64_t(3)), t.value("seed", std::uint64_t(1)),
                                                t.value("bos", true), t.value("dirichlet", 0.2));
    if (kind == "zipf")
        return std::make_shared<ZipfUnigram>(t.at("n_tokens").get<std::int64_t>(), t.at("seq_len").get<std::int64_t>(),
                                             t.value("seed", std::uint64_t(1)), t.value("exponent", 1.0), t.value("bos", true));
    if (kind == "text")
        return std::make_shared<TextCorpus>(t.at("path").get<std::string>(), t.at("vocab").get<std::int64_t>(),
                                            t.at("seq_len").get<std::int64_t>(), t.value("seed", std::uint64_t(1)),
                                            t.value("bos", std::int32_t(-1)), t.value("heldout", std::string()));
    throw Error("unknown task kind '" + kind + "' (bigram-backcopy, zipf or text)");
}

struct StepResult {
    std::int64_t step = 0;       // the step just done (0-based)
    double loss = 0;             // batch mean loss before the update
    double grad_norm = 0;        // before clipping
    double lr = 0;
    double seconds = 0;
    std::int64_t tokens = 0;     // B·T
};

// "blocks.2.mlp.hook_post" → "layer 2, operation mlp.hook_post"
inline std::string describe_hook(const std::string& name) {
    const std::int64_t l = model::hook_layer(name);
    if (l < 0) return "operation " + name + " (outside the blocks)";
    const std::size_t dot = name.find('.', 7);
    return "layer " + std::to_string(l) + ", operation " + name.substr(dot + 1);
}

// The checks every trainer makes before its first step: the task fits the model, the settings are valid.
inline void require_task_fits(const TrainConfig& cfg, const DataSource* data) {
    require(data != nullptr, "trainer: no data source");
    require(data->vocab_size() <= cfg.model.vocab_size,
            "invalid config: the task needs a vocabulary of " + std::to_string(data->vocab_size()) +
                " tokens but the model has " + std::to_string(cfg.model.vocab_size));
    cfg.validate(data->seq_len());
}

// A fresh run's weights: init_weights at the run's seed and init_std.
template <class T>
model::Weights<T> initial_weights(const TrainConfig& cfg) {
    InitOptions io;
    io.init_std = cfg.init_std;
    return init_weights<T>(cfg.model, cfg.seed, io);
}

// The trace record of weights `w` after `step` updates: measure_trace on the first eval_sequences
// validation sequences (the same for every trainer, so CPU and device runs are measured alike).
template <class T>
TraceRecord validation_trace(const TrainConfig& cfg, const DataSource& data, const model::Weights<T>& w, std::int64_t step,
                             double train_loss) {
    std::vector<std::vector<std::int32_t>> seqs;
    for (std::int64_t i = 0; i < cfg.eval_sequences; ++i) seqs.push_back(data.sequence(std::uint64_t(i), true));
    TraceRecord r = measure_trace(cfg.model, w, seqs, cfg.loss, cfg.sink_eps);
    r.step = step;
    r.train_loss = train_loss;
    require(std::isfinite(r.val_loss), "non-finite validation loss at step " + std::to_string(step));
    return r;
}

// The random state of a run is its data stream position: sequence i is drawn from
// stream_seed(task seed, i), and the next step starts at i = step·B (weights were drawn at init).
inline std::string data_stream_state(const TrainConfig& cfg, std::int64_t step) {
    return nlohmann::json{{"generator", "mt19937_64 seeded by stream_seed(task.seed, sequence index)"},
                          {"next_sequence", step * cfg.batch}}.dump();
}

// The name of the first parameter whose gradient holds a NaN or an infinity ("?" if none does).
template <class T>
std::string first_nonfinite_parameter(model::Weights<T>& grads) {
    for (auto& t : tensor_refs(grads))
        if (!Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(t.data, t.size).allFinite()) return t.name;
    return "?";
}

template <class T>
class Trainer {
public:
    Trainer(TrainConfig cfg, std::shared_ptr<const DataSource> data) : cfg_(std::move(cfg)), data_(std::move(data)) {
        require_task_fits(cfg_, data_.get());
        require(std::is_same_v<T, float> || cfg_.precision == model::MatmulPrecision::float32,
                "training: precision bf16 needs a float model (double runs are the exact reference)");
        w_ = initial_weights<T>(cfg_);
        opt_ = AdamW<T>(cfg_.optim, w_);
        setup_threads();
    }

    // Continues the run saved in `checkpoint` (its own settings; `data` must be the same task).
    Trainer(const Checkpoint<T>& ck, std::shared_ptr<const DataSource> data)
        : cfg_(TrainConfig::from_json(ck.run)), data_(std::move(data)) {
        require_task_fits(cfg_, data_.get());
        w_ = ck.weights;
        opt_ = AdamW<T>(cfg_.optim, w_);
        opt_.m() = ck.adam_m;
        opt_.v() = ck.adam_v;
        opt_.set_step(ck.optimizer_step);
        step_ = ck.step;
        setup_threads();
    }

    // One optimizer step on batch `step()`.
    StepResult step() {
        const auto t0 = std::chrono::steady_clock::now();
        const std::int64_t B = cfg_.batch, T_in = data_->seq_len();
        const double N = double(cfg_.loss.count(T_in) * B);
        std::vector<double> loss(B, 0.0);
        std::string fault;
        // The last step's passes left the gradients zero; after a failed step they are cleared here.
        if (!grads_zero_)
            for (auto& g : grads_) {
                const auto refs = tensor_refs(g);
                for_each_chunk(tensor_chunks(refs), tail_threads_, [&](std::size_t, const TensorChunk& c) { chunk_of(refs[c.tensor], c).setZero(); });
            }
        grads_zero_ = false;
        const std::uint64_t epoch = model::new_matmul_epoch();
        auto one = [&](std::int64_t b, std::size_t slot) {
            // Thread-local: set on the thread that runs b. One epoch per step: the weights change only
            // between steps, so each thread converts each weight matrix to bf16 once per step.
            // Attention products in bf16 too under bf16, as torch.autocast computes them.
            const model::ScopedMatmulPrecision precision(cfg_.precision, epoch, /*attention=*/true);
            const auto seq = data_->sequence(std::uint64_t(step_ * B + b));
            const std::vector<std::int32_t> in(seq.begin(), seq.end() - 1), target(seq.begin() + 1, seq.end());
            const auto& tape = recorders_[slot]->record(w_, in);
            if (!tape.nonfinite.empty()) {
                // A sentinel fired: record the sequence again checking every activation, to name the operation.
                TapeRecorder<T> full(cfg_.model, FiniteCheck::all);
                const std::string where = full.record(w_, in).nonfinite;
                const std::string name = where.empty() ? tape.nonfinite : where;
                report(fault, "non-finite activation at step " + std::to_string(step_) + ", sequence " + std::to_string(b) +
                                  ": " + describe_hook(name) + " (hook " + name + ")");
                return;
            }
            model::Mat<T>& dlogits = dlogits_[slot];
            loss[b] = cross_entropy<T>(&dlogits, tape.logits, target, cfg_.loss, T(1.0 / N)).sum;
            backward(grads_[slot], dlogits, tape, w_, cfg_.model);
        };
        if (cfg_.parallel == Parallelism::sequences && grads_.size() > 1) {
#pragma omp parallel for schedule(static) num_threads(int(grads_.size()))
            for (std::int64_t b = 0; b < B; ++b) {
#ifdef _OPENMP
                const std::size_t slot = std::size_t(omp_get_thread_num());
#else
                const std::size_t slot = 0;
#endif
                try { one(b, slot); } catch (const std::exception& e) { report(fault, e.what()); }
            }
        } else {
            for (std::int64_t b = 0; b < B; ++b) one(b, 0);
        }
        if (!fault.empty()) throw Error(fault);
        // The workers' gradients summed into grads_[0] and its norm, then AdamW with the clipping folded in.
        std::vector<model::Weights<T>*> others;
        for (std::size_t i = 1; i < grads_.size(); ++i) others.push_back(&grads_[i]);
        const double grad_norm = sum_gradients(grads_[0], others, tail_threads_, /*zero_others=*/true);

        double sum = 0;
        for (double l : loss) sum += l;
        StepResult r;
        r.step = step_;
        r.loss = sum / N;
        if (!std::isfinite(r.loss)) throw Error("non-finite loss at step " + std::to_string(step_) + ": " + std::to_string(r.loss));
        r.grad_norm = grad_norm;
        if (!std::isfinite(r.grad_norm))
            throw Error("non-finite gradient at step " + std::to_string(step_) + ": parameter " + first_nonfinite_parameter(grads_[0]));
        r.lr = learning_rate(cfg_.optim, step_);
        opt_.update(w_, grads_[0], r.lr, clip_coefficient(grad_norm, cfg_.optim.grad_clip), tail_threads_,
                    /*zero_gradients=*/true);
        grads_zero_ = true;
        ++step_;
        r.tokens = B * T_in;
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return r;
    }

    // The trace of the current weights on the first eval_sequences validation sequences.
    TraceRecord trace(double train_loss = 0) const { return validation_trace(cfg_, *data_, w_, step_, train_loss); }

    std::string rng_state() const { return data_stream_state(cfg_, step_); }
    void save(const std::string& path) { save_checkpoint(path, cfg_.model, w_, opt_, step_, cfg_.to_json(), rng_state()); }

    std::int64_t current_step() const { return step_; }
    const TrainConfig& config() const { return cfg_; }
    model::Weights<T>& weights() { return w_; }
    const model::Weights<T>& weights() const { return w_; }
    AdamW<T>& optimizer() { return opt_; }
    const DataSource& data() const { return *data_; }
    std::size_t threads() const { return grads_.size(); }
    std::string compute() const {
        return std::to_string(threads()) + " CPU thread(s) over " + (cfg_.parallel == Parallelism::gemm ? "GEMMs" : "sequences");
    }

private:
    static void report(std::string& fault, const std::string& what) {
#pragma omp critical(sinkscope_trainer_fault)
        if (fault.empty()) fault = what;
    }
    void setup_threads() {
        std::size_t n = 1;
#ifdef _OPENMP
        const int avail = cfg_.threads > 0 ? int(cfg_.threads) : omp_get_max_threads();
        if (cfg_.parallel == Parallelism::sequences) n = std::size_t(std::max(1, std::min<int>(avail, int(cfg_.batch))));
        // The trainer owns the process's threads: in gemm mode every OpenMP region (Eigen's GEMMs, the
        // per-head loops) gets `avail`; with one sequence thread the inner regions must not fan out
        // either (a second thread would only spin at their barriers).
        tail_threads_ = avail;
        Eigen::setNbThreads(cfg_.parallel == Parallelism::gemm ? avail : 1);
        if (cfg_.parallel == Parallelism::gemm) omp_set_num_threads(avail);
        else if (n == 1) omp_set_num_threads(1);
#endif
        grads_.clear();
        recorders_.clear();
        for (std::size_t i = 0; i < n; ++i) {
            grads_.push_back(zeros_like(w_));
            recorders_.push_back(std::make_unique<TapeRecorder<T>>(
                cfg_.model, cfg_.check_finite ? FiniteCheck::sentinels : FiniteCheck::none));
        }
        dlogits_.resize(n);
        grads_zero_ = true;
    }

    TrainConfig cfg_;
    std::shared_ptr<const DataSource> data_;
    model::Weights<T> w_;
    AdamW<T> opt_;
    std::int64_t step_ = 0;
    std::vector<model::Weights<T>> grads_;
    std::vector<std::unique_ptr<TapeRecorder<T>>> recorders_;
    std::vector<model::Mat<T>> dlogits_;
    int tail_threads_ = 1;  // threads of the passes over all parameters (zeroing, gradient sum, AdamW)
    bool grads_zero_ = true;  // every worker's gradients are zero (fresh, or cleared by the last step's passes)
};

// The run loop used by tools/train.cpp and the sweep: trains to cfg.steps from wherever `trainer` is,
// writing <out>/checkpoint.safetensors and a trace record at step 0 (fresh runs), every checkpoint_every
// steps and at the end. `progress` gets every StepResult (for the progress line). Any trainer with
// Trainer's run interface: config(), current_step(), step(), trace(train_loss), save(path) —
// Trainer<T> on the CPU, cuda::HostedTrainer on a GPU.
template <class Tr>
void run_training(Tr& trainer, const std::string& out, const std::function<void(const StepResult&)>& progress) {
    std::filesystem::create_directories(out);
    const auto& cfg = trainer.config();
    {
        std::ofstream f(out + "/run.json");
        f << cfg.to_json().dump(2) << "\n";
    }
    auto checkpoint = [&](double train_loss) {
        append_trace(out, trainer.trace(train_loss));
        trainer.save(out + "/checkpoint.safetensors");
    };
    if (trainer.current_step() == 0) append_trace(out, trainer.trace(0.0));
    double recent = 0;
    std::int64_t recent_n = 0;
    while (trainer.current_step() < cfg.steps) {
        const StepResult r = trainer.step();
        recent += r.loss;
        ++recent_n;
        if (progress) progress(r);
        const std::int64_t done = trainer.current_step();
        if ((cfg.checkpoint_every > 0 && done % cfg.checkpoint_every == 0) || done == cfg.steps) {
            checkpoint(recent / double(std::max<std::int64_t>(1, recent_n)));
            recent = 0;
            recent_n = 0;
        }
    }
}

}  // namespace sinkscope::train
