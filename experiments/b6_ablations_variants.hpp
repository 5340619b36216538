// b6_ablations' variants (the paper's ablation table: each row's change to the baseline's training
// configuration, the paper's values beside it) and its measured table read back from a file (--from-table):
// the rows of a variants.csv, one per variant and seed, so that B6's decision (directions against the
// baseline, the two verdicts) can run on a table it did not train: an earlier run's own output, or a
// synthetic table that calibrates the rules at the decision level (scripts/calibrate_decisions.py). Split
// from b6_ablations.cpp, which keeps the training, the directions and the rules.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "training.hpp"

namespace sinkscope::experiments {

struct Variant {
    std::string name;
    double paper_ppl, paper_sink, paper_spike;  // NaN: "–" or "≈" in the paper
    std::function<void(train::TrainConfig&, std::int64_t seq_len)> apply;
};

// The variants of the table: the paper's value of each column beside it (NaN: "–" or "≈" in the paper), and
// the change each makes to the baseline's training configuration.
inline std::vector<Variant> all_variants() {
    const double na = std::nan("");
    using TC = train::TrainConfig;
    return {
        {"baseline", 10.1, 46.0, 3818, [](TC&, std::int64_t) {}},
        {"sandwich", 9.8, 44.7, 520, [](TC& t, std::int64_t) { t.model.norm_placement = model::NormPlacement::sandwich; }},
        {"sandwich_qknorm", 10.0, 42.0, 92, [](TC& t, std::int64_t) { t.model.norm_placement = model::NormPlacement::sandwich; t.model.qk_norm = true; }},
        {"dynamic_tanh", 10.0, 61.0, 153, [](TC& t, std::int64_t) { t.model.norm = model::NormKind::dynamic_tanh; }},
        {"ffn_gelu", na, 69.3, 3369, [](TC& t, std::int64_t) { t.model.ffn = model::FfnKind::gelu; t.model.activation = model::Activation::gelu_tanh; }},
        {"ffn_linear", na, 58.9, 688, [](TC& t, std::int64_t) { t.model.ffn = model::FfnKind::linear; }},
        {"attention_only", na, 73.9, 637, [](TC& t, std::int64_t) { t.model.ffn = model::FfnKind::none; }},
        {"weight_decay_0", na, 33.8, 12275, [](TC& t, std::int64_t) { t.optim.weight_decay = 0.0; }},
        {"head_dim_8", na, 4.1, 291, [](TC& t, std::int64_t) { t.model.head_dim = 8; t.model.n_heads = t.model.d_model / 8; }},
        {"gate_per_channel", na, 4.5, 202, [](TC& t, std::int64_t) { t.model.gate = model::GateKind::per_channel; }},
        {"gate_per_head", na, 6.4, 186, [](TC& t, std::int64_t) { t.model.gate = model::GateKind::per_head; }},
        {"loss_last_3_4", 10.1, 13.0, 38470, [](TC& t, std::int64_t T) { t.loss.begin = T / 4; t.loss.end = -1; }},
        {"loss_last_1_2", 10.6, 1.2, 7193, [](TC& t, std::int64_t T) { t.loss.begin = T / 2; t.loss.end = -1; }},
        // Beyond the paper's main table: its fixed-width head-dimension row (d_h/H 32/128 → 41.1%, no spike given),
        // static gates ("keep 31–42%": a range across the ±20% band, no direction), and the sink substitutes of
        // StreamingLLM / Paper B's discussion, which the paper does not tabulate. NaN: reported, never scored.
        {"head_dim_32", na, 41.1, na, [](TC& t, std::int64_t) {
             t.model.head_dim = std::min<std::int64_t>(32, t.model.d_model);  // the smoke size has d 16
             t.model.n_heads = t.model.d_model / t.model.head_dim;
         }},
        {"gate_static_per_head", na, na, na, [](TC& t, std::int64_t) { t.model.gate = model::GateKind::static_per_head; }},
        {"gate_static_per_channel", na, na, na, [](TC& t, std::int64_t) { t.model.gate = model::GateKind::static_per_channel; }},
        {"softmax_off_by_one", na, na, na, [](TC& t, std::int64_t) { t.model.attention = model::AttentionKind::softmax_off_by_one; }},
        {"sink_token", na, na, na, [](TC& t, std::int64_t) { t.model.attention = model::AttentionKind::sink_token; }},
        {"kv_bias", na, na, na, [](TC& t, std::int64_t) { t.model.attention = model::AttentionKind::kv_bias; }},
    };
}

}  // namespace sinkscope::experiments

namespace sinkscope::experiments::ablations {

// One variant's values over seeds, in file order.
struct TableRows {
    std::vector<double> seed, sink, spike, spike_ratio, val_loss;
    std::vector<bool> massive;
};

// Reads `path` (comma-separated, a header line naming at least variant, seed, sink_ratio, spike and massive;
// spike_ratio and val_loss are read when present, NaN otherwise). An Error names the file, the line and the
// column of anything it cannot read.
inline std::map<std::string, TableRows> read_variant_table(const std::string& path) {
    const CsvTable t(path, {"variant", "seed", "sink_ratio", "spike", "massive"});
    const std::int64_t cv = t.column("variant"), cs = t.column("seed"), ck = t.column("sink_ratio"), cp = t.column("spike"),
                       cm = t.column("massive"), cr = t.column("spike_ratio"), cl = t.column("val_loss");
    std::map<std::string, TableRows> out;
    for (std::size_t n = 0; n < t.size(); ++n) {
        auto& r = out[t.text(n, cv)];
        r.seed.push_back(t.number(n, cs));
        r.sink.push_back(t.number(n, ck));
        r.spike.push_back(t.number(n, cp));
        r.massive.push_back(t.number(n, cm) != 0);
        r.spike_ratio.push_back(t.number(n, cr));
        r.val_loss.push_back(t.number(n, cl));
    }
    return out;
}

}  // namespace sinkscope::experiments::ablations
