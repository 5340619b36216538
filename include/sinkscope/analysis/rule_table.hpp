// The rule set: one row per verdict the experiments write (experiments/*.cpp, analysis::Verdict), in the
// schema of analysis/rule_set.hpp. experiments/README.md ("The rules, and where each threshold comes
// from") is the prose of the same rules.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sinkscope/analysis/rule_set.hpp"

namespace sinkscope::analysis {

inline constexpr const char* kRuleSetVersion = "4";

// One row per rule, in the order the experiments run (A1 … A4-scale, B1 … B6, C1 … C3, P1, P2).
//   id        the claim string the experiment passes to Verdict(...) where it is a short id; where it
//             passes a sentence (A1, A1-window, A1-control, A3, A3-drain, A4, A4-scale), the id the README
//             and the report use, with the sentence quoted in a comment above the row.
//   values    every number a precondition or condition is compared with (">=" / "<="), every minimum
//             count ("minimum") and every parameter that picks what is measured ("locator"). A value
//             equals the literal the experiment writes today, written the same way (1.0 / 1.2 stays a
//             division); the trailing comment gives the file:line of that literal and of its use. A
//             literal that serves two checks has two keys. Thresholds built from a formula are
//             registered by their literal parts, the formula stated in `source`.
//             Config defaults that pick what is measured (trace_samples, window, max_spectrum_channels,
//             bootstrap_resamples, knockout_samples_min) are registered at their default size; --smoke
//             shrinks them, and the smoke run is a test of the code, not of the rule.
//   not here  checks (theorems and sanity bounds reported beside a verdict, never evidence), sentinel
//             values (1e9 for an infinite ratio or spread), bounds that only keep a computation defined
//             (a slope needs 2 points, a control position needs T >= 3: in `outcomes`), and the sizes of
//             a run (samples, T, steps, the training recipe), which `scope` names where they matter.
//   preconditions  the condition name the experiment writes; where it builds the name (A1's from_layer,
//             A4-scale's rule model), filled in at the defaults.
// Sources: "definition: core/measures.hpp" for Sun et al.'s 100 / 1000 and Gu et al.'s ε; "convention"
// for the project's own thresholds (with the paper's wording they read, where the README cites it);
// "paper: …" where the number is taken from a paper's figure or table.
// How every rule turns its conditions into an outcome (analysis/verdict.hpp, Verdict::decide), added to
// each row's outcome map: "not reproduced" needs a condition's whole interval on the wrong side of its
// threshold; an interval that straddles it, or none at all, leaves the claim undecided.
inline std::vector<Rule> with_decision_outcomes(std::vector<Rule> rules) {
    for (auto& r : rules) {
        if (r.outcomes.erase("a condition fails"))
            r.outcomes["a condition fails: its whole interval on the wrong side of the threshold"] = "not reproduced";
        r.outcomes["a condition or precondition undecided: its interval straddles the threshold, or there is none"] =
            "inconclusive";
    }
    return rules;
}

inline const std::vector<Rule>& rule_table() {
    static const std::vector<Rule> rules = with_decision_outcomes({
        // ---- Paper A -----------------------------------------------------------------------------------
        // Claim string (a1_bos_ablation.cpp:258): "A1: removing BOS from a model trained with BOS changes only
        // layers 0-1; Sink^0.3_0[2:] recovers".
        Rule{/*id*/ "A1",
             /*experiment*/ "a1_bos_ablation",
             /*kind*/ "claim",
             /*scope*/ "The 4-layer model trained here with BOS at every sequence start (Guo et al.'s Bigram-Backcopy recipe, "
                      "lr 1e-2, 2000 steps), on validation sequences with BOS ([BOS] x1..x_{T-1}) and without (x1..x_T): "
                      "Sink^eps_0 of layers >= from_layer per sample (model::AttentionStats), and the mean |alpha0(with) - "
                      "alpha0(without)| per head of layers 0..from_layer-1 against that of layers >= from_layer.",
             /*values*/
                 {
                     {"from_layer", 2, "locator", "paper: Paper A's Sink^eps_0[2:] ('changes only the first two layers')"},  // a1_bos_ablation.cpp:60, used :244
                     {"sink_eps", 0.3, "locator", "definition: core/measures.hpp (Gu et al.'s eps)"},  // a1_bos_ablation.cpp:65 (kSinkPresent), used as eps :118
                     {"with_bos_sink_rate_min", 0.3, ">=", "convention: a sink to remove"},  // a1_bos_ablation.cpp:65 (kSinkPresent), used :125
                     {"recovery_ratio_min", 0.8, ">=", "convention: within 20 %; Paper A: 'recovers to near its with-BOS level'"},  // a1_bos_ablation.cpp:66, used :150
                     {"first_layers_change_ratio_min", 2.0, ">=", "convention: a factor 2; Paper A: 'changes only the first two layers'"},  // a1_bos_ablation.cpp:67, used :157
                 },
             /*preconditions*/ {{"with-BOS Sink^0.3_0[2:] (mean over samples)", "not shown at this scale"}},
             /*outcomes*/ {{"every condition holds", "reproduced"},
                          {"a condition fails", "not reproduced"},
                          {"a precondition fails", "not shown at this scale"},
                          {"a precondition fails on the --random-init null", "not applicable"}}},

        // Claim string (a1_bos_ablation.cpp:284): "A1-window: a sliding-window model trained with BOS loses its P0
        // sink without BOS (Paper A's explanation of Mistral's collapse)".
        Rule{/*id*/ "A1-window",
             /*experiment*/ "a1_bos_ablation",
             /*kind*/ "claim",
             /*scope*/ "A1's recipe trained with a sliding window, measured at T = window (where the window does not bind): "
                      "Sink^eps_0 over all layers (from layer 0) per sample, with and without BOS; the same on its "
                      "full-attention twin (the A1 model, trained alike), which must not collapse (Paper A's contrast).",
             /*values*/
                 {
                     {"window", 32, "locator", "convention: w < T; >= 16, below which uniform attention's alpha0 exceeds eps"},  // a1_bos_ablation.cpp:54 (Config), measured at T = window :271
                     {"from_layer", 0, "locator", "paper: Paper A's Mistral figures use Gu's Sink^eps_0 over all layers"},  // a1_bos_ablation.cpp:293-294 (literal 0)
                     {"sink_eps", 0.3, "locator", "definition: core/measures.hpp (Gu et al.'s eps)"},  // a1_bos_ablation.cpp:65 (kSinkPresent), used as eps :118
                     {"with_bos_sink_rate_min", 0.3, ">=", "convention: a sink to remove"},  // a1_bos_ablation.cpp:65 (kSinkPresent), used :125 via :293
                     {"collapse_ratio_max", 0.5, "<=", "convention: loses at least half; Paper A: Mistral 87 % -> 2 %, ratio ~0.02"},  // a1_bos_ablation.cpp:68, used :294
                     {"full_attention_ratio_min", 0.5, ">=", "convention: the twin keeps at least half; Paper A: the window collapses where full attention 'recovers to near its with-BOS level'"},  // a1_bos_ablation.cpp (twin_ratio)
                 },
             /*preconditions*/ {{"with-BOS Sink^0.3_0[0:] (mean over samples)", "not shown at this scale"},
                                {"full-attention twin: with-BOS Sink^0.3_0[0:] (mean over samples)", "not shown at this scale"}},
             /*outcomes*/ {{"every condition holds", "reproduced"},
                          {"a condition fails", "not reproduced"},
                          {"a precondition fails", "not shown at this scale"},
                          {"a precondition fails on the --random-init null", "not applicable"},
                          {"--window 0", "no verdict written"}}},

        // Claim string (a1_bos_ablation.cpp:321): "A1-control: the same rule on --model (SmolLM2-135M by default), a
        // model trained WITHOUT a BOS token: recovery is expected there and tests nothing".
        Rule{/*id*/ "A1-control",
             /*experiment*/ "a1_bos_ablation",
             /*kind*/ "control",
             /*scope*/ "A1's rule on --model (SmolLM2-135M-Instruct by default, trained without BOS): natural-text samples with "
                      "the checkpoint's BOS id (GGUF tokenizer.ggml.bos_token_id, or the Hugging Face tokenizer's bos_token) "
                      "prepended to the first T-1 tokens against T text tokens; from_layer capped at L-1. The population is "
                      "a model trained without BOS, read from the resolved --bos (auto: the checkpoint's add_bos_token, an "
                      "absent key meaning no BOS; analysis/bos.hpp). SmolLM2 never saw BOS, so the rule tests nothing there: "
                      "a check of the method.",
             /*values*/
                 {
                     {"from_layer", 2, "locator", "paper: Paper A's Sink^eps_0[2:] ('changes only the first two layers')"},  // a1_bos_ablation.cpp:60, capped :310
                     {"sink_eps", 0.3, "locator", "definition: core/measures.hpp (Gu et al.'s eps)"},  // a1_bos_ablation.cpp:65 (kSinkPresent), used as eps :118
                     {"with_bos_sink_rate_min", 0.3, ">=", "convention: a sink to remove"},  // a1_bos_ablation.cpp:65 (kSinkPresent), used :125
                     {"recovery_ratio_min", 0.8, ">=", "convention: within 20 %; Paper A: 'recovers to near its with-BOS level'"},  // a1_bos_ablation.cpp:66, used :150
                     {"first_layers_change_ratio_min", 2.0, ">=", "convention: a factor 2; Paper A: 'changes only the first two layers'"},  // a1_bos_ablation.cpp:67, used :157
                     {"used_with_bos_max", 0, "<=", "definition: the control's population is models used without BOS (1 when the resolved --bos puts BOS first)"},  // a1_bos_ablation.cpp (population)
                 },
             /*preconditions*/ {{"--model used with BOS (the resolved --bos: 1 yes, 0 no)", "not applicable"},
                                {"with-BOS Sink^0.3_0[2:] (mean over samples)", "not applicable"}},
             /*outcomes*/ {{"every condition holds", "reproduced"},
                          {"a condition fails", "not reproduced"},
                          {"a precondition fails", "not applicable"},
                          {"--control 0, or a --model with one layer", "no verdict written"},
                          // Registered 2026-12-07 from the claim string above ("recovery is expected there"):
                          // the rule should pass on a model that never saw BOS.
                          {kControlExpectation, "reproduced"},
                          {"the control: the rule's outcome equals the expected one", "as expected"},
                          {"the control: any other outcome", "unexpected"}}},

        // A2 is scored twice (set registered 2026-12-06, RULES_CHANGELOG.md): at the early stage, the two blocks
        // Paper A places the circuit in ("A2", below), and at the massive stage after B1's step-up
        // ("A2-massive"). Both replace the size-matched random knockout by a same-kind whole-block knockout.
        Rule{/*id*/ "A2",
             /*experiment*/ "a2_p0_circuit",
             /*kind*/ "claim",
             /*scope*/ "The early stage, Paper A's two blocks: blocks 0 and 1, read after block 2 (hook_resid_post 2, the "
                      "first block after the stage, as the massive stage is read after S+1); natural text without BOS. Norms "
                      "and cross-input cosines of position 0 against positions >= 1 there; zero knockouts (every position) of "
                      "the MLP and the attention of blocks 0 and 1 and of every single head of blocks 0 and 1, each read as "
                      "the position-0 norm kept after block 2; the specificity control is the knockout of the same kind "
                      "(MLP or attention) as the most effective stage knockout, of block 2.",
             /*values*/
                 {
                     {"stage_last_layer", 1, "locator", "paper: Paper A, 'the P0 Sink Circuit lives in two blocks' (blocks 0 and 1; Paper A's training trace: 'finally concentrates in layers 0-1')"},
                     {"stage_layers_min", 3, "minimum", "definition: the stage's two blocks and the block read after them"},
                     {"p0_norm_ratio_min", 10.0, ">=", "convention (first version); Paper A: 'very large l2 norm'"},
                     {"p0_cross_input_cosine_min", 0.95, ">=", "convention (first version); Paper A: 'cross-input cosine ~ 1'"},
                     {"p0_cosine_gap_min", 0.2, ">=", "convention (first version)"},
                     {"best_block_knockout_kept_max", 0.1, "<=", "convention (first version); the minimum of the stage's four block knockouts"},
                     {"control_block_knockout_kept_min", 0.5, ">=", "convention: the first version's random-knockout threshold, now for the same-kind whole block outside the stage"},
                     {"single_head_knockout_kept_min", 0.5, ">=", "convention (first version); Paper A: 'ablating single heads does not remove it (heads cooperate)'"},
                     {"knockout_samples_min", 16, "minimum", "convention: issue 10 ('>= 16 samples per knockout')"},
                 },
             /*preconditions*/ {{"layers: the stage's two blocks and one block after them (n_layers >= 3)", "not applicable"}},
             /*outcomes*/ {{"every condition holds", "reproduced"},
                          {"a condition fails", "not reproduced"},
                          {"a precondition fails", "not applicable"}}},

        Rule{/*id*/ "A2-massive",
             /*experiment*/ "a2_p0_circuit",
             /*kind*/ "claim",
             /*scope*/ "The massive stage: layer M = S+1 (hook_resid_post) after the step-up layer S of analysis::trace_spike "
                      "over every sample (tau; S = step_up_layer_fallback when no step-up is found); natural text without BOS. "
                      "Norms and cross-input cosines of position 0 against positions >= 1 at M; zero knockouts (every "
                      "position) of each MLP, attention block and single head of layers 0..S, each read as the position-0 norm "
                      "kept at M; the specificity control is the knockout of the same kind (MLP or attention) as the most "
                      "effective one, of block M (outside the candidates 0..S, before the reading).",
             /*values*/
                 {
                     {"step_tau", 0.2, "locator", "convention: analysis/spikes.hpp's step rule (Paper B gives none)"},
                     {"step_up_layer_fallback", 1, "locator", "convention"},
                     {"massive_abs_min", 100.0, "locator", "definition: core/measures.hpp (Sun et al.: |x| > 100)"},
                     {"massive_median_ratio_min", 1000.0, "locator", "definition: core/measures.hpp (Sun et al.: |x| >= 1000 x median |x|)"},
                     {"massive_p0_share_min", 0.5, ">=", "convention: the spike is present in most samples"},
                     {"blocks_after_step_up_min", 1, "minimum", "definition: the control block M = S+1 must exist"},
                     {"p0_norm_ratio_min", 10.0, ">=", "convention (first version); Paper A: 'very large l2 norm'"},
                     {"p0_cross_input_cosine_min", 0.95, ">=", "convention (first version); Paper A: 'cross-input cosine ~ 1'"},
                     {"p0_cosine_gap_min", 0.2, ">=", "convention (first version)"},
                     {"best_block_knockout_kept_max", 0.1, "<=", "convention (first version); the minimum of many knockouts"},
                     {"control_block_knockout_kept_min", 0.5, ">=", "convention: the first version's random-knockout threshold, now for the same-kind whole block outside the candidates"},
                     {"single_head_knockout_kept_min", 0.5, ">=", "convention (first version); Paper A: 'ablating single heads does not remove it (heads cooperate)'"},
                     {"knockout_samples_min", 16, "minimum", "convention: issue 10 ('>= 16 samples per knockout')"},
                 },
             /*preconditions*/ {{"samples with a massive activation at position 0 after block M", "not applicable"},
                                {"layers: a block after the step-up layer S (S + 1 < n_layers)", "not applicable"}},
             /*outcomes*/ {{"every condition holds", "reproduced"},
                          {"a condition fails", "not reproduced"},
                          {"a precondition fails", "not applicable"}}},

        // Claim string (a3_cone_model.cpp:218): "A3 (Paper A): E||o||^2 = a^2 + (1 - a^2) E[sum p^2] for unit-norm
        // values; position 0 (sum p^2 = 1) has the strictly largest expected attention-output norm, in any attention layer".
        Rule{/*id*/ "A3",
             /*experiment*/ "a3_cone_model",
             /*kind*/ "claim",
             /*scope*/ "Every layer and query head, natural text without BOS: the unit-norm prediction of E||o_t||^2 from the "
                      "cone fit of the kv head's values (theory::fit_cone on hook_v) against the measured ||z_t||^2 (hook_z), "
                      "averaged over heads, then samples; the cone and sink preconditions over all layers and heads.",
             /*values*/
                 {
                     {"sink_eps", 0.3, "locator", "definition: core/measures.hpp (Gu et al.'s eps)"},  // a3_cone_model.cpp:35 (kSinkRate), used as eps :196
                     {"model_sink_rate_min", 0.3, ">=", "convention: the project's sink-layer share, Gu et al.'s eps; added after the null"},  // a3_cone_model.cpp:35 (kSinkRate), used :199
                     {"cone_alpha_sq_min", 0.1, ">=", "convention: the common axis carries >= 10 % of a value's squared norm"},  // a3_cone_model.cpp:32, used :190
                     {"size_error_max", 0.25, "<=", "convention: right in size within a quarter"},  // a3_cone_model.cpp:33, used :231
                     {"pos0_above_layer_share_min", 0.75, ">=", "convention (first version): a quarter of exceptions to Paper A's 'any layer'"},  // a3_cone_model.cpp:34, used :233
                 },
             /*preconditions*/ {{"mean over layers and kv heads of the debiased cone alpha^2 (value energy along the common axis)",
                                "not applicable"},
                               {"Sink^0.3_0 over all layers and heads (the position-0 sink exists)", "not applicable"}},
             /*outcomes*/ {{"every condition holds", "reproduced"},
                          {"a condition fails", "not reproduced"},
                          {"a precondition fails", "not applicable"}}},

        // Claim string (a3_cone_model.cpp:238): "A3-drain (this project's extension of A3, theory/cone_model.md C6): with
        // value norms r, E||o||^2 = a^2 (sum p r)^2 + (1 - a^2) sum p^2 r^2 predicts every layer's attention-output norms,
        // sink layers included".
        Rule{/*id*/ "A3-drain",
             /*experiment*/ "a3_cone_model",
             /*kind*/ "claim",
             /*scope*/ "As A3, with the value-drain prediction (theory::predict_output_norm_sq_with_norms); the sink layers are "
                      "the layers whose Sink^eps_0 over all samples (point value) is >= sink_layer_rate_min.",
             /*values*/
                 {
                     {"sink_eps", 0.3, "locator", "definition: core/measures.hpp (Gu et al.'s eps)"},  // a3_cone_model.cpp:35 (kSinkRate), used as eps :146, :196
                     {"sink_layer_rate_min", 0.3, "locator", "convention: the project's sink-layer share"},  // a3_cone_model.cpp:35 (kSinkRate), used :147, :154
                     {"model_sink_rate_min", 0.3, ">=", "convention: the project's sink-layer share, Gu et al.'s eps; added after the null"},  // a3_cone_model.cpp:35 (kSinkRate), used :199
                     {"cone_alpha_sq_min", 0.1, ">=", "convention: the common axis carries >= 10 % of a value's squared norm"},  // a3_cone_model.cpp:32, used :190
                     {"size_error_max", 0.25, "<=", "convention: right in size within a quarter (as A3)"},  // a3_cone_model.cpp:33, used :251
                     {"sink_layer_size_error_max", 0.25, "<=", "convention: right in size within a quarter (as A3)"},  // a3_cone_model.cpp:33, used :253
                     {"side_agree_layer_share_min", 0.75, ">=", "convention (first version, as A3)"},  // a3_cone_model.cpp:34, used :255
                 },
             /*preconditions*/ {{"mean over layers and kv heads of the debiased cone alpha^2 (value energy along the common axis)",
                                "not applicable"},
                               {"Sink^0.3_0 over all layers and heads (the position-0 sink exists)", "not applicable"}},
             /*outcomes*/ {{"every condition holds", "reproduced"},
                          {"a condition fails", "not reproduced"},
                          {"a precondition fails", "not applicable"},
                          {"no sink layer", "the sink-layer size error reads NaN and fails: not reproduced"}}},

        // Claim string (a4_training_trace.cpp:184): "A4: trained without BOS, the position-0 sink moves toward layers 0-1
        // over training and concentrates there".
        Rule{/*id*/ "A4",
             /*experiment*/ "a4_training_trace",
             /*kind*/ "claim",
             /*scope*/ "The 4-layer model trained here without BOS (Guo et al.'s Bigram-Backcopy recipe, 2000 steps, a checkpoint "
                      "every 250), on the same validation sequences at every checkpoint: share_c = sink heads (alpha0 > eps) "
                      "of layers 0..early_layers-1 over all sink heads, pooled over sequences; the sink checkpoints are those "
                      "whose Sink^eps_0 (all layers) has bootstrap lower bound >= sink_checkpoint_rate_min. The fitted change's "
                      "interval is a two-stage percentile bootstrap: the sink checkpoints drawn with replacement (each with its "
                      "position), then the sequences (one draw shared by the drawn checkpoints); each resample's slope times the "
                      "full span (analysis/checkpoint_trend.hpp).",
             /*values*/
                 {
                     {"sink_eps", 0.3, "locator", "definition: core/measures.hpp (Gu et al.'s eps)"},  // a4_training_trace.cpp:43 (Config), used :112-113
                     {"early_layers", 2, "locator", "paper: Paper A, 'finally concentrates in layers 0-1'"},  // a4_training_trace.cpp:112 (min(1, L-1)), :115 (min(2, L)), :171 (2.0 / L)
                     {"sink_checkpoint_rate_min", 0.1, "locator", "convention: one head in ten"},  // a4_training_trace.cpp:47 (kSinkForms), used :176
                     {"last_checkpoint_sink_rate_min", 0.1, ">=", "convention: one head in ten"},  // a4_training_trace.cpp:47 (kSinkForms), used :196
                     {"sink_checkpoints_min", 3, "minimum", "convention: a trend needs three points"},  // a4_training_trace.cpp:49 (kMinCheckpoints), used :199
                     {"migration_change_min", 0.1, ">=", "convention: the sink moves by >= 10 points of its mass toward layers 0-1"},  // a4_training_trace.cpp:48 (kMigration), used :204, :213
                     {"concentration_excess_over_uniform", 0.5, ">=",
                      "convention: more than halfway from the uniform share u = early_layers / L to all of it; threshold = "
                      "(1 + u) x 0.5, which the code writes (1.0 + 2.0 / L) / 2.0 (u + 0.5 (1 - u) is the same number but "
                      "rounds differently at some L); Paper A: 'finally concentrates in layers 0-1'"},  // a4_training_trace.cpp:171, used :209
                 },
             /*preconditions*/ {{"Sink^0.3_0 (all layers) at the last checkpoint", "not shown at this scale"},
                               {"checkpoints with a sink", "not shown at this scale"}},
             /*outcomes*/ {{"every condition holds", "reproduced"},
                          {"a condition fails", "not reproduced"},
                          {"a precondition fails", "not shown at this scale"},
                          {"a precondition fails on the --random-init null", "not applicable"},
                          {"fewer than 2 sink checkpoints",
                           "migration reads an exact NaN and fails; the concentration condition is not written"}}},

        // Claim string (a4_scale_sweep.cpp:538): "A4-scale: trained without BOS, the sink moves toward layers 0-1 over
        // training and concentrates there, across seeds" ("trained WITH BOS (--bos, a check of the rule, not Paper A's
        // premise)" under --bos). Its precondition names the rule model: "the preset's largest text model" in the
        // gpu and text presets.
        Rule{/*id*/ "A4-scale",
             /*experiment*/ "a4_scale_sweep",
             /*kind*/ "claim",
             /*scope*/ "The preset's largest Bigram-Backcopy model (rule_point: the largest layers x d^2 x steps; a preset "
                      "without one: its largest model), trained here without BOS, per seed: share_c = the sum of the sink rates "
                      "(alpha0 > eps, the trace records) of layers 0..early_layers-1 over the sum over all layers, at every "
                      "checkpoint whose sink rate (all layers, point value) is >= sink_checkpoint_rate_min; Student-t intervals "
                      "over seeds. A4's thresholds, fixed before the sweep was run.",
             /*values*/
                 {
                     {"sink_eps", 0.3, "locator", "definition: core/measures.hpp (Gu et al.'s eps)"},  // train/trainer.hpp:76 (TrainConfig::sink_eps), read by the trace
                     {"early_layers", 2, "locator", "paper: Paper A, 'finally concentrates in layers 0-1'"},  // a4_scale_sweep.cpp:281 (l <= 1), :536 (2.0 / L)
                     {"sink_checkpoint_rate_min", 0.1, "locator", "convention: one head in ten (A4's threshold)"},  // a4_scale_sweep.cpp:48 (kSinkForms), used :524
                     {"sink_checkpoints_min", 3, "minimum", "convention: a trend needs three points"},  // a4_scale_sweep.cpp:50 (kMinCheckpoints), used :529
                     {"seeds_min", 3, "minimum", "convention: an interval over seeds needs three seeds"},  // a4_scale_sweep.cpp:51 (kMinSeeds), used :550
                     {"migration_change_min", 0.1, ">=", "convention (A4's): >= 10 points of the sink's mass toward layers 0-1"},  // a4_scale_sweep.cpp:49 (kMigration), used :555, :560
                     {"concentration_excess_over_uniform", 0.5, ">=",
                      "convention (A4's): more than halfway from the uniform share u = early_layers / L to all of it; "
                      "threshold = (1 + u) x 0.5, which the code writes (1.0 + 2.0 / max(1, L)) / 2.0"},  // a4_scale_sweep.cpp:536, used :557
                 },
             /*preconditions*/ {{"seeds of the preset's largest Bigram-Backcopy model with >= 3 sink checkpoints",
                                "not shown at this scale"}},
             /*outcomes*/ {{"every condition holds", "reproduced"},
                          {"a condition fails", "not reproduced"},
                          {"a precondition fails", "not shown at this scale"},
                          {"a precondition fails on the --random-init null", "not applicable"},
                          {"fewer than 2 seeds with a trend",
                           "migration reads an exact NaN and fails; the concentration condition is not written"}}},

        // ---- Paper B -----------------------------------------------------------------------------------
        Rule{/*id*/ "B1",
             /*experiment*/ "b1_spike_lifecycle",
             /*kind*/ "claim",
             /*scope*/ "The spike coordinate (t*, c*) = argmax |H_i| over the first trace_samples samples "
                      "(analysis::trace_spike, tau); its trajectory over Paper B's sub-blocks H_0..H_2L averaged over every "
                      "sample and classified by analysis::classify_steps(tau); the in-between ratio per sample for those "
                      "steps; spike channels at the plateau state (the traced peak's sub-block) of every sample, consensus "
                      "over the spiking samples, ratios to c* on every spike token.",
             /*values*/
                 {
                     {"trace_samples", 8, "locator", "convention"},  // b1_spike_lifecycle.cpp:24 (Config; --smoke 2), used :49
                     {"step_tau", 0.2, "locator", "convention: analysis/spikes.hpp's step rule (Paper B gives none)"},  // b1_spike_lifecycle.cpp:25 (Config), used :50, :143
                     {"massive_abs_min", 100.0, "locator", "definition: core/measures.hpp (Sun et al.: |x| > 100)"},  // spikes.hpp:46, used b1_spike_lifecycle.cpp:88, :105
                     {"massive_median_ratio_min", 1000.0, "locator", "definition: core/measures.hpp (Sun et al.: |x| >= 1000 x median |x|)"},  // spikes.hpp:47, used b1_spike_lifecycle.cpp:88, :105
                     {"spike_present_share_min", 0.5, ">=", "convention: the spike is present in most samples"},  // b1_spike_lifecycle.cpp:223
                     {"step_up_window_max", 0.20, "<=",
                      "paper: Paper B Table 1, step-ups at 6.3-19.4 % of 2L (4/64, 4/64, 8,10/56, 14/72), rounded up to a fifth"},  // spikes.hpp:48 (kStepUpWindow), used b1_spike_lifecycle.cpp:226
                     {"step_down_window_min", 0.92, ">=",
                      "paper: Paper B Table 1, step-downs at 96.4-100 % of 2L, less ~4 % (the last 8 %)"},  // spikes.hpp:49 (kStepDownWindow), used b1_spike_lifecycle.cpp:228
                     {"step_ups_min", 1, ">=", "paper: Paper B, 'one or two' step-up sub-blocks"},  // b1_spike_lifecycle.cpp:230
                     {"step_ups_max", 2, "<=", "paper: Paper B, 'one or two' step-up sub-blocks"},  // b1_spike_lifecycle.cpp:231
                     {"in_between_ratio_max", 0.05, "<=", "convention; Paper B: 1e-2 to 1e-3"},  // b1_spike_lifecycle.cpp:234, :236
                     {"cstar_share_min", 0.5, ">=", "convention: c* massive in most spiking samples"},  // b1_spike_lifecycle.cpp:237-238
                     {"consensus_share", 0.5, "locator", "convention: massive in >= half the spiking samples"},  // b1_spike_lifecycle.cpp:159
                     {"consensus_channels_max", 4, "<=", "convention; Paper B: 'a few' channels"},  // b1_spike_lifecycle.cpp:240
                     {"ratio_spread_max", 0.05, "<=", "convention: 'nearly fixed' ratios"},  // b1_spike_lifecycle.cpp:255
                 },
             /*preconditions*/ {{"share of samples with a massive activation in some residual state", "not applicable"}},
             /*outcomes*/ {{"every condition holds", "reproduced"},
                          {"a condition fails", "not reproduced"},
                          {"a precondition fails", "not applicable"},
                          {"no step-up or no step-down on the mean trajectory", "its window condition reads NaN and fails"},
                          {"no trajectory", "the in-between ratio reads an exact NaN '(no trajectory)' and fails"},
                          {"no spiking sample at the plateau", "the c* share reads an exact NaN and fails"},
                          {"fewer than 2 consensus channels",
                           "the ratio-spread condition is not written; a failed check is reported instead (not evidence)"},
                          {"a consensus channel's spread is not finite (< 2 spike tokens)", "it counts as 1e9: fails"}}},

        Rule{/*id*/ "B2",
             /*experiment*/ "b2_quadratic_ffn",
             /*kind*/ "claim",
             /*scope*/ "The step-up layer S and channel c* of analysis::trace_spike on the first trace_samples samples (tau; S = "
                      "step_up_layer_fallback when none). From the weights: ||U_k||_F of every channel of every FFN; spectra of "
                      "S_k for c* and up to max_spectrum_channels channels (consensus-massive after block S, then S's "
                      "large-||U_k|| channels); step layers = the FFN sub-blocks among the trace's step-ups and step-downs. On "
                      "natural text: the FFN input ln2.hook_normalized of S, errors at c* on spike tokens (massive after S).",
             /*values*/
                 {
                     {"trace_samples", 4, "locator", "convention"},  // b2_quadratic_ffn.cpp:55 (literal 4)
                     {"step_tau", 0.2, "locator", "convention: analysis/spikes.hpp's step rule (Paper B gives none)"},  // common.hpp:326 (trace_spike default), called b2_quadratic_ffn.cpp:55
                     {"step_up_layer_fallback", 0, "locator", "convention"},  // b2_quadratic_ffn.cpp:56
                     {"massive_abs_min", 100.0, "locator", "definition: core/measures.hpp (Sun et al.: |x| > 100)"},  // spikes.hpp:46, used b2_quadratic_ffn.cpp:106, :167
                     {"massive_median_ratio_min", 1000.0, "locator", "definition: core/measures.hpp (Sun et al.: |x| >= 1000 x median |x|)"},  // spikes.hpp:47, used b2_quadratic_ffn.cpp:106, :167
                     {"spike_present_share_min", 0.5, ">=", "convention: the spike is present in most samples"},  // b2_quadratic_ffn.cpp:250
                     {"frobenius_median_factor", 10.0, "locator", "convention: 'exceptionally large' ||U_k||_F"},  // b2_quadratic_ffn.cpp:31 (Config, --factor), used :72
                     {"consensus_share", 0.5, "locator", "convention: massive in >= half the spiking samples"},  // b2_quadratic_ffn.cpp:109
                     {"max_spectrum_channels", 4, "locator", "convention"},  // b2_quadratic_ffn.cpp:32 (Config; --smoke 2), used :114
                     {"cstar_detected_min", 1, ">=", "convention: c* is among the large-||U_k|| channels"},  // b2_quadratic_ffn.cpp:253
                     {"step_layer_share_min", 1, ">=", "paper: Paper B, large ||U_k|| 'only in step-up / step-down blocks'"},  // b2_quadratic_ffn.cpp:256
                     {"dominance_min", 2, ">=", "convention: one dominant eigenvalue"},  // b2_quadratic_ffn.cpp:257
                     {"alignment_min", 0.9, ">=", "convention: 'nearly shared' s*"},  // b2_quadratic_ffn.cpp:258
                     {"quadratic_error_max", 0.10, "<=", "convention (first version)"},  // b2_quadratic_ffn.cpp:260
                     {"rank_one_error_max", 0.25, "<=", "convention (first version)"},  // b2_quadratic_ffn.cpp:261
                 },
             /*preconditions*/ {{"share of samples with a massive activation after the step-up block", "not applicable"}},
             /*outcomes*/ {{"every condition holds", "reproduced"},
                          {"a condition fails", "not reproduced"},
                          {"a precondition fails", "not applicable"},
                          {"no spike token", "both error conditions read an exact NaN '(no spike token)' and fail"},
                          {"fewer than 2 spectrum channels",
                           "the alignment condition is not written; a failed check is reported instead (not evidence)"},
                          {"no layer with large-||U_k|| channels, or lambda_2 = 0", "that condition reads NaN and fails"}}},

        Rule{/*id*/ "B3a",
             /*experiment*/ "b3_vocab_position0",
             /*kind*/ "claim",
             /*scope*/ "Every vocabulary token alone at position 0 (batched with sliding_window = 1), its state after block S "
                      "(hook_resid_post), S = the step-up layer of analysis::trace_spike on the first trace_samples natural "
                      "samples (tau; else the layer of the peak sub-block, else L-1); the reference median = the median over "
                      "natural-text samples of each sample's median |x| after block S.",
             /*values*/
                 {
                     {"trace_samples", 4, "locator", "convention"},  // b3_vocab_position0.cpp:32 (Config; --smoke 1), used :71
                     {"step_tau", 0.2, "locator", "convention: analysis/spikes.hpp's step rule (Paper B gives none)"},  // common.hpp:326 (trace_spike default), called b3_vocab_position0.cpp:72
                     {"massive_abs_min", 100.0, "locator", "definition: core/measures.hpp (Sun et al.: |x| > 100)"},  // spikes.hpp:46, used b3_vocab_position0.cpp:108, :163
                     {"massive_median_ratio_min", 1000.0, "locator", "definition: core/measures.hpp (Sun et al.: |x| >= 1000 x median |x|)"},  // spikes.hpp:47, used b3_vocab_position0.cpp:108, :163
                     {"spike_present_share_min", 0.5, ">=", "convention: the spike is present in most samples"},  // b3_vocab_position0.cpp:205
                     {"vocab_share_min", 0.95, ">=", "convention: below the paper's lowest share (Paper B: 98.40 % for Qwen2.5-7B)"},  // b3_vocab_position0.cpp:217
                 },
             /*preconditions*/ {{"share of natural-text samples with a massive activation after the step-up block", "not applicable"}},
             /*outcomes*/ {{"every condition holds", "reproduced"},
                          {"a condition fails", "not reproduced"},
                          {"a precondition fails", "not applicable"}}},

        Rule{/*id*/ "B3b",
             /*experiment*/ "b3_vocab_position0",
             /*kind*/ "claim",
             /*scope*/ "Positions >= 1 of the natural-text samples after block S (B3a's S): spike tokens = positions with a "
                      "massive entry (Sun et al., the sample state's own median); delimiters = tokens of punctuation and "
                      "whitespace only (is_delimiter); the rate ratio resamples whole samples.",
             /*values*/
                 {
                     {"trace_samples", 4, "locator", "convention"},  // b3_vocab_position0.cpp:32 (Config; --smoke 1), used :71
                     {"step_tau", 0.2, "locator", "convention: analysis/spikes.hpp's step rule (Paper B gives none)"},  // common.hpp:326 (trace_spike default), called b3_vocab_position0.cpp:72
                     {"massive_abs_min", 100.0, "locator", "definition: core/measures.hpp (Sun et al.: |x| > 100)"},  // spikes.hpp:46, used b3_vocab_position0.cpp:108
                     {"massive_median_ratio_min", 1000.0, "locator", "definition: core/measures.hpp (Sun et al.: |x| >= 1000 x median |x|)"},  // spikes.hpp:47, used b3_vocab_position0.cpp:108
                     {"spike_present_share_min", 0.5, ">=", "convention: the spike is present in most samples"},  // b3_vocab_position0.cpp:205
                     {"spike_tokens_min", 10, "minimum", "convention: fewer are too few to judge (inconclusive: present but rare, not absent)"},  // b3_vocab_position0.cpp:247
                     {"delimiter_rate_ratio_min", 5, ">=", "convention"},  // b3_vocab_position0.cpp:249
                     {"delimiter_share_min", 0.5, ">=", "convention: Paper B, spikes 'sit on delimiters'"},  // b3_vocab_position0.cpp:250-251
                 },
             /*preconditions*/ {{"share of natural-text samples with a massive activation after the step-up block", "not applicable"},
                               {"spike tokens at positions >= 1", "inconclusive"}},
             /*outcomes*/ {{"every condition holds", "reproduced"},
                          {"a condition fails", "not reproduced"},
                          {"a precondition fails", "not applicable"},
                          {"other tokens never spike", "the rate ratio is 1e9 when delimiters spike, else 0"}}},

        Rule{/*id*/ "B4",
             /*experiment*/ "b4_rmsnorm_sparsity",
             /*kind*/ "claim",
             /*scope*/ "Spike tokens = positions with a massive entry after the step-up block S (analysis::trace_spike on the "
                      "first trace_samples samples, tau); before = blocks.S.ln2.hook_normalized, after = "
                      "blocks.(S+1).ln1.hook_normalized (S+1 capped at L-1); one random non-spike position >= 1 per sample as "
                      "the other token; spike channels for the energy share chosen on the even samples, scored on the odd.",
             /*values*/
                 {
                     {"trace_samples", 4, "locator", "convention"},  // b4_rmsnorm_sparsity.cpp:108 (literal 4)
                     {"step_tau", 0.2, "locator", "convention: analysis/spikes.hpp's step rule (Paper B gives none)"},  // common.hpp:326 (trace_spike default), called b4_rmsnorm_sparsity.cpp:108
                     {"massive_abs_min", 100.0, "locator", "definition: core/measures.hpp (Sun et al.: |x| > 100)"},  // spikes.hpp:46, used b4_rmsnorm_sparsity.cpp:128
                     {"massive_median_ratio_min", 1000.0, "locator", "definition: core/measures.hpp (Sun et al.: |x| >= 1000 x median |x|)"},  // spikes.hpp:47, used b4_rmsnorm_sparsity.cpp:128
                     {"step_up_found_min", 1.0, ">=", "convention: a step-up block to measure"},  // b4_rmsnorm_sparsity.cpp:221
                     {"spike_samples_min", 2.0, "minimum", "convention: a cosine across samples needs two"},  // b4_rmsnorm_sparsity.cpp:223
                     {"spike_cosine_after_min", 0.9, ">=", "convention: Paper B's 'cosine -> 1' read as within 26 degrees"},  // b4_rmsnorm_sparsity.cpp:225
                     {"cosine_gap_vs_other_min", 0.0, ">=", "convention: above other tokens (paired difference)"},  // b4_rmsnorm_sparsity.cpp:227
                     {"cosine_gain_vs_before_min", 0.0, ">=", "convention: made by the block (paired difference)"},  // b4_rmsnorm_sparsity.cpp:228
                     {"heldout_energy_share_min", 0.9, ">=", "convention: B5's 90 % energy; Paper B: h~ ~ sum over the spike channels"},  // b4_rmsnorm_sparsity.cpp:230
                 },
             /*preconditions*/ {{"step-up block located by the spike trace", "not applicable"},
                               {"samples with spike tokens after the step-up block (Sun et al.)", "not applicable"}},
             /*outcomes*/ {{"every condition holds", "reproduced"},
                          {"a condition fails", "not reproduced"},
                          {"a precondition fails", "not applicable"},
                          {"a statistic with no sample", "it reads NaN and fails"}}},

        Rule{/*id*/ "B5",
             /*experiment*/ "b5_sink_keys",
             /*kind*/ "claim",
             /*scope*/ "Every layer, kv head and query head, natural text without BOS. Sink kv heads: any query head of the "
                      "group has alpha0 > eps over all samples. Scored layers: position 0's input (hook_resid_pre) carries "
                      "spike channels C, channels massive by Sun et al.'s criterion in at least spike_channel_sample_share "
                      "of the samples. Per scored sink kv head, S = span{W_K e_i : i in C} from the weights (no fitting) and "
                      "E(k) = ||P_S k||^2 / ||k||^2 of the pre-RoPE keys: mean over samples of the position-0 key's share, "
                      "and of the mean share of the keys at positions >= 1. Reported, not deciding: the centred key_energy-"
                      "variance dimension of the position-0 keys against a random-position null, and the balanced accuracy "
                      "of a mean-field sink-head prediction fit on the even samples and scored on the odd ones.",
             /*values*/
                 {
                     {"sink_eps", 0.3, "locator", "definition: core/measures.hpp (Gu et al.'s eps)"},  // b5_sink_keys.cpp (Config, --eps)
                     {"key_energy", 0.9, "locator", "convention: a subspace's dimension holds 90 % of the variance (diagnostic)"},  // b5_sink_keys.cpp (Config)
                     {"spike_channel_sample_share", 0.5, "locator", "convention: massive in most samples (as the spike-present precondition)"},  // b5_sink_keys.cpp (Config)
                     {"bootstrap_resamples", 1000, "locator", "convention (README's default is 2000)"},  // b5_sink_keys.cpp (Config; --smoke 200)
                     {"sink_heads_min", 1.0, "minimum", "convention: a sink head to explain"},
                     {"scored_sink_kv_heads_min", 1.0, "minimum", "convention: a sink kv head where position 0 carries a spike"},
                     {"position0_key_share_min", 0.5, ">=", "first principles: most of the key's energy in S (cos^2 to S >= 1/2); "
                                                            "Paper B: sink keys k^s ~ sum_{i in C} h_i W_K^T e_i; chance: dim S / d_head"},
                     {"share_excess_over_ordinary_min", 0.0, ">=", "paper: Paper B, queries closer to that subspace than to "
                                                                   "ordinary keys: ordinary keys hold a smaller share (paired)"},
                 },
             /*preconditions*/ {{"measured sink heads (alpha_0 > 0.3 over all samples)", "not applicable"},
                               {"sink kv heads in layers whose position-0 input carries spike channels (massive in at least "
                                "half of the samples), with a defined key share", "not applicable"}},
             /*outcomes*/ {{"every condition holds", "reproduced"},
                          {"a condition fails", "not reproduced"},
                          {"a precondition fails", "not applicable"}}},

        Rule{/*id*/ "B6 (sinks)",
             /*experiment*/ "b6_ablations",
             /*kind*/ "claim",
             /*scope*/ "The ablation table trained here (Guo et al.'s recipe with BOS, lr 1e-2, weight decay 0.1, --seeds seeds "
                      "per variant): Sink^eps_0 over every (layer, head) of train::Trainer::trace at the end of training; per "
                      "variant with a paper value, our direction from the ratio of its seed mean to the baseline's (paired by "
                      "seed, bootstrap interval), the paper's from its value over its baseline's; rows without a paper value "
                      "(and ffn_gelu under Guo's baseline) are measured, not scored.",
             /*values*/
                 {
                     {"sink_eps", 0.3, "locator", "definition: core/measures.hpp (Gu et al.'s eps)"},  // train/trainer.hpp:76 (TrainConfig::sink_eps), read by the trace
                     {"seeds_min", 3, "minimum", "convention: an interval across seeds needs three"},  // b6_ablations.cpp:225
                     {"baseline_sink_rate_min", 0.05, ">=", "convention: the baseline has a sink"},  // b6_ablations.cpp:226
                     {"baseline_sink_rate_max", 1.0 / 1.2, "<=", "convention: room for a +20 % rise (the band's upper edge)"},  // b6_ablations.cpp:228
                     {"direction_up_ratio", 1.2, "locator", "convention: 'up' when the interval lies above, 'same' needs it at or below"},  // b6_ablations.cpp:171, :173
                     {"direction_down_ratio", 0.8, "locator", "convention: 'down' when the interval lies below, 'same' needs it at or above"},  // b6_ablations.cpp:172, :173
                     {"paper_same_band", 0.2, "locator", "convention: the paper's value within +-20 % of its baseline is 'same'"},  // b6_ablations.cpp:168
                     {"agree_share_min", 0.75, ">=", "convention: share of the decided variants"},  // b6_ablations.cpp:231
                     {"decided_variants_min", 8, "minimum", "convention: 8 of the paper's 12 scored variants decided (up, down or same); fewer: inconclusive"},
                 },
             /*preconditions*/ {{"baseline sink ratio (mean over seeds) has a sink", "not shown at this scale"},
                               {"baseline sink ratio (mean over seeds) leaves room for a +20% rise", "not shown at this scale"},
                               {"seeds per variant (at least 3 for an interval across seeds)", "not shown at this scale"},
                               {"scored variants whose direction is decided (up, down or same)", "inconclusive"}},
             /*outcomes*/ {{"every condition holds", "reproduced"},
                          {"a condition fails", "not reproduced"},
                          {"a precondition fails", "not shown at this scale"},
                          {"a variant's interval is neither up, down nor same", "'undecided': left out of the share (low power, not disagreement)"},
                          {"no scored variant", "the share reads an exact NaN and fails"},
                          {"no baseline among --variants", "no verdict written"}}},

        Rule{/*id*/ "B6 (spikes)",
             /*experiment*/ "b6_ablations",
             /*kind*/ "claim",
             /*scope*/ "As B6 (sinks), on the spike column: the largest |resid_post| over layers and validation sequences of "
                      "train::Trainer::trace; the baseline's massive activation by Sun's criterion on one hidden state (one "
                      "sequence's resid_post, its own max over its own median; train/trace.hpp), per seed.",
             /*values*/
                 {
                     {"massive_abs_min", 100.0, "locator", "definition: core/measures.hpp (Sun et al.: |x| > 100)"},  // measures.hpp:26, used train/trace.hpp:138
                     {"massive_median_ratio_min", 1000.0, "locator", "definition: core/measures.hpp (Sun et al.: |x| >= 1000 x median |x|)"},  // measures.hpp:27, used train/trace.hpp:138
                     {"seeds_min", 3, "minimum", "convention: an interval across seeds needs three"},  // b6_ablations.cpp:225
                     {"baseline_massive_seed_share_min", 1.0, ">=", "convention: a massive activation in every baseline seed"},  // b6_ablations.cpp:239
                     {"direction_up_ratio", 1.2, "locator", "convention: 'up' when the interval lies above, 'same' needs it at or below"},  // b6_ablations.cpp:171, :173
                     {"direction_down_ratio", 0.8, "locator", "convention: 'down' when the interval lies below, 'same' needs it at or above"},  // b6_ablations.cpp:172, :173
                     {"paper_same_band", 0.2, "locator", "convention: the paper's value within +-20 % of its baseline is 'same'"},  // b6_ablations.cpp:168
                     {"agree_share_min", 0.75, ">=", "convention: share of the decided variants"},  // b6_ablations.cpp:243
                     {"decided_variants_min", 8, "minimum", "convention: 8 of the paper's 12 scored variants decided (up, down or same); fewer: inconclusive"},
                 },
             /*preconditions*/ {{"share of baseline seeds with a massive activation", "not shown at this scale"},
                               {"seeds per variant (at least 3 for an interval across seeds)", "not shown at this scale"},
                               {"scored variants whose direction is decided (up, down or same)", "inconclusive"}},
             /*outcomes*/ {{"every condition holds", "reproduced"},
                          {"a condition fails", "not reproduced"},
                          {"a precondition fails", "not shown at this scale"},
                          {"a variant's interval is neither up, down nor same", "'undecided': left out of the share (low power, not disagreement)"},
                          {"no scored variant", "the share reads an exact NaN and fails"},
                          {"no baseline among --variants", "no verdict written"}}},

        // ---- The causal chain spike -> sink (c1_spike_to_sink) -----------------------------------------
        Rule{/*id*/ "C1",
             /*experiment*/ "c1_spike_to_sink",
             /*kind*/ "claim",
             /*scope*/ "S = the step-up layer of analysis::trace_spike over every sample (tau), c* its channel. The spike "
                      "channels (a massive entry at hook_resid_post S in some sample) are set to x_l <- mu_l + f (x_l^clean - "
                      "mu_l) at each sample's massive positions after blocks l = S..L-2 (mu_l: the layer's channel mean over "
                      "positions without a large entry; x^clean: the clean run's value, so the dose does not compound), at doses "
                      "f = 0 (mean-ablation), dose_low, dose_mid (f = 1: the clean run); control: as "
                      "many random channels never large (|x| > large_abs_min at no layer of any sample), same positions, dose 0. "
                      "Sinks (alpha0 > eps) counted in layers S+1..L-1, per sample; each counted layer's dose-response and its "
                      "own extra drop are reported, not deciding.",
             /*values*/
                 {
                     {"step_tau", 0.2, "locator", "convention: analysis/spikes.hpp's step rule (Paper B gives none)"},  // common.hpp:326 (trace_spike default), called c1_spike_to_sink.cpp:174
                     {"sink_eps", 0.3, "locator", "definition: core/measures.hpp (Gu et al.'s eps)"},  // c1_spike_to_sink.cpp:65 (Config), used :276, :281
                     {"massive_abs_min", 100.0, "locator", "definition: core/measures.hpp (Sun et al.: |x| > 100)"},  // spikes.hpp:46, used c1_spike_to_sink.cpp:195
                     {"massive_median_ratio_min", 1000.0, "locator", "definition: core/measures.hpp (Sun et al.: |x| >= 1000 x median |x|)"},  // spikes.hpp:47, used c1_spike_to_sink.cpp:195
                     {"large_abs_min", 100.0, "locator",
                      "definition: core/measures.hpp (Sun et al.'s |x| > 100 alone): positions excluded from the channel means, "
                      "channels excluded from the control"},  // spikes.hpp:46 (kMassiveAbs), used c1_spike_to_sink.cpp:79, :236
                     {"spike_present_share_min", 0.5, ">=", "convention: the spike is present in most samples"},  // c1_spike_to_sink.cpp:68 (massive_share_min), used :126
                     {"clean_sink_rate_min", 0.1, ">=", "convention: at least one head in ten"},  // c1_spike_to_sink.cpp:67 (sinks_present_min), used :130
                     {"extra_drop_min_heads", 1.0, ">=",
                      "convention: more than the control by one (layer, head) per sample; threshold = 1.0 / (H x counted "
                      "layers), counted layers = L-1-S (1 when C1 cannot run)"},  // c1_spike_to_sink.cpp:338 (1.0 / double(H * n_layers)), :331, used :132, :139
                     {"dose_low", 0.1, "locator", "convention: the dose-response's doses 0, 0.1, 0.3, 1 (neither paper gives a share of sinks the spike must carry)"},  // c1_spike_to_sink.cpp (doses), used c1_spike_to_sink_interventions.hpp dose_runs
                     {"dose_mid", 0.3, "locator", "convention: the dose-response's doses 0, 0.1, 0.3, 1"},  // c1_spike_to_sink.cpp (doses)
                     {"dose_rise_min_heads", -1.0, ">=",
                      "convention: the sink rate follows the dose: from each dose to the next larger one the paired change is "
                      "above minus one (layer, head) per sample; threshold = -1.0 / (H x counted layers)"},  // c1_spike_to_sink.cpp ablation_verdict (rise_min)
                 },
             /*preconditions*/ {{"samples with a massive entry (Sun et al.) after block S", "not applicable"},
                               {"clean sink rate of the counted layers", "not applicable"}},
             /*outcomes*/ {{"every condition holds", "reproduced"},
                          {"a condition fails", "not reproduced"},
                          {"a precondition fails", "not applicable"},
                          {"no step-up layer, or S = L-1",
                           "no rates: the clean-sink precondition reads 0 with interval [0, 0] and fails (not applicable); the "
                           "extra drop reads an exact 0 with n 0"}}},

        Rule{/*id*/ "C2",
             /*experiment*/ "c1_spike_to_sink",
             /*kind*/ "claim",
             /*scope*/ "P = E (C3's early layer), else S. Attention surgery in blocks 0..P: every head's pattern row of every "
                      "query t >= 1 forced to self-only attention (z_t = v_t, as position 0 attends under the causal mask); a "
                      "position gets the spike when sign(x_0[c*]) x_t[c*] after block P is >= spike_fraction_of_clean x the "
                      "clean |x_0[c*]|; control: the same rows forced to uniform attention over keys 0..t; shares over t >= 1 "
                      "per sample, paired. Reported, not deciding: position 0's attention output at layer P copied onto every "
                      "t >= 1, and one random position q >= 1's (the scope before 2026-12-07).",
             /*values*/
                 {
                     {"step_tau", 0.2, "locator", "convention: analysis/spikes.hpp's step rule (Paper B gives none)"},  // common.hpp:326 (trace_spike default), called c1_spike_to_sink.cpp:174
                     {"early_layer_mean_abs_min", 100.0, "locator",
                      "definition: core/measures.hpp (Sun et al.'s |x| > 100 alone): E = the first layer < S whose |mean over "
                      "samples of x_0[c*]| exceeds it"},  // spikes.hpp:46 (kMassiveAbs), used c1_spike_to_sink.cpp:232
                     {"x0_abs_min", 100.0, "locator",
                      "definition: core/measures.hpp (Sun et al.'s |x| > 100 alone): a sample carries the spike at P"},  // spikes.hpp:46 (kMassiveAbs), used c1_spike_to_sink.cpp:227
                     {"spike_present_share_min", 0.5, ">=", "convention: the spike is present in most samples"},  // c1_spike_to_sink.cpp:68 (massive_share_min), used :374
                     {"spike_fraction_of_clean", 0.5, "locator", "convention: half the spike"},  // c1_spike_to_sink.cpp:317
                     {"patched_share_min", 0.5, ">=", "convention: most positions"},  // c1_spike_to_sink.cpp:69 (patch_share_min), used :380, :390
                     {"control_excess_min_positions", 1.0, ">=",
                      "convention: more than the uniform-attention control by one position; threshold = 1.0 / (T - 1)"},  // c1_spike_to_sink.cpp (C2 verdict)
                 },
             /*preconditions*/ {{"samples whose spike coordinate |x_0[c*]| > 100 after block P", "not applicable"}},
             /*outcomes*/ {{"every condition holds", "reproduced"},
                          {"a condition fails", "not reproduced"},
                          {"a precondition fails", "not applicable"},
                          {"no layer P, or T < 3", "the share reads an exact 0 with n 0 and fails"}}},

        Rule{/*id*/ "C3",
             /*experiment*/ "c1_spike_to_sink",
             /*kind*/ "claim",
             /*scope*/ "E = the first layer l < S whose |mean over samples of x_0[c*]| exceeds early_layer_mean_abs_min (S, c* "
                      "as in C1). Its large entries (|x| > large_abs_min at hook_resid_post E) give the channels and positions, "
                      "dosed as in C1 after blocks E..S-1 at C1's doses; C1's random never-large control at dose 0; "
                      "sinks (alpha0 > eps) counted in layers E+1..S, per sample; each counted layer's dose-response reported.",
             /*values*/
                 {
                     {"step_tau", 0.2, "locator", "convention: analysis/spikes.hpp's step rule (Paper B gives none)"},  // common.hpp:326 (trace_spike default), called c1_spike_to_sink.cpp:174
                     {"sink_eps", 0.3, "locator", "definition: core/measures.hpp (Gu et al.'s eps)"},  // c1_spike_to_sink.cpp:65 (Config), used :276, :281
                     {"early_layer_mean_abs_min", 100.0, "locator",
                      "definition: core/measures.hpp (Sun et al.'s |x| > 100 alone; SmolLM2's early spike is not yet 1000 x "
                      "median)"},  // spikes.hpp:46 (kMassiveAbs), used c1_spike_to_sink.cpp:232
                     {"x0_abs_min", 100.0, "locator",
                      "definition: core/measures.hpp (Sun et al.'s |x| > 100 alone): a sample carries the spike at E"},  // spikes.hpp:46 (kMassiveAbs), used c1_spike_to_sink.cpp:227
                     {"large_abs_min", 100.0, "locator",
                      "definition: core/measures.hpp (Sun et al.'s |x| > 100 alone): the ablated entries, and the channels "
                      "excluded from the control"},  // spikes.hpp:46 (kMassiveAbs), used c1_spike_to_sink.cpp:79, :236
                     {"spike_present_share_min", 0.5, ">=", "convention: the spike is present in most samples"},  // c1_spike_to_sink.cpp:68 (massive_share_min), used :126
                     {"clean_sink_rate_min", 0.1, ">=", "convention: at least one head in ten"},  // c1_spike_to_sink.cpp:67 (sinks_present_min), used :130
                     {"extra_drop_min_heads", 1.0, ">=",
                      "convention: more than the control by one (layer, head) per sample; threshold = 1.0 / (H x counted "
                      "layers), counted layers = S-E (1 when C3 cannot run)"},  // c1_spike_to_sink.cpp:355 (1.0 / double(H * n_layers)), :347, used :132, :139
                     {"dose_low", 0.1, "locator", "convention: the dose-response's doses 0, 0.1, 0.3, 1 (neither paper gives a share of sinks the spike must carry)"},  // c1_spike_to_sink.cpp (doses), used c1_spike_to_sink_interventions.hpp dose_runs
                     {"dose_mid", 0.3, "locator", "convention: the dose-response's doses 0, 0.1, 0.3, 1"},  // c1_spike_to_sink.cpp (doses)
                     {"dose_rise_min_heads", -1.0, ">=",
                      "convention: the sink rate follows the dose: from each dose to the next larger one the paired change is "
                      "above minus one (layer, head) per sample; threshold = -1.0 / (H x counted layers)"},  // c1_spike_to_sink.cpp ablation_verdict (rise_min)
                 },
             /*preconditions*/ {{"samples with |x_0[c*]| > 100 after block E", "not applicable"},
                               {"clean sink rate of the counted layers", "not applicable"}},
             /*outcomes*/ {{"every condition holds", "reproduced"},
                          {"a condition fails", "not reproduced"},
                          {"a precondition fails", "not applicable"},
                          {"no early layer E < S",
                           "no rates: the clean-sink precondition reads 0 with interval [0, 0] and fails (not applicable); the "
                           "extra drop reads an exact 0 with n 0"}}},

        // ---- Prior work ----------------------------------------------------------------------------------
        Rule{/*id*/ "P1",
             /*experiment*/ "p1_massive_ablation",
             /*kind*/ "claim",
             /*scope*/ "S = the step-up layer of analysis::trace_spike on the first trace_samples samples (tau; S = "
                      "step_up_layer_fallback when none). At blocks.S.hook_resid_post, each sample's massive positions and the "
                      "union C of massive channels: zeroed, set to each channel's mean over every spike position of every "
                      "sample, or |C| random other channels zeroed; perplexity of every next-token prediction, paired per sample.",
             /*values*/
                 {
                     {"trace_samples", 4, "locator", "convention"},  // p1_massive_ablation.cpp:47 (literal 4)
                     {"step_tau", 0.2, "locator", "convention: analysis/spikes.hpp's step rule (Paper B gives none)"},  // common.hpp:326 (trace_spike default), called p1_massive_ablation.cpp:47
                     {"step_up_layer_fallback", 0, "locator", "convention"},  // p1_massive_ablation.cpp:48
                     {"massive_abs_min", 100.0, "locator", "definition: core/measures.hpp (Sun et al.: |x| > 100)"},  // spikes.hpp:46, used p1_massive_ablation.cpp:61
                     {"massive_median_ratio_min", 1000.0, "locator", "definition: core/measures.hpp (Sun et al.: |x| >= 1000 x median |x|)"},  // spikes.hpp:47, used p1_massive_ablation.cpp:61
                     {"spike_present_share_min", 0.5, ">=", "convention: the spike is present in most samples"},  // p1_massive_ablation.cpp:153
                     {"zero_ppl_ratio_min", 10, ">=", "convention; Sun et al.: perplexity -> inf"},  // p1_massive_ablation.cpp:155
                     {"mean_ppl_ratio_min", 0.9, ">=", "convention: within 10 %; Sun et al.: 5.47 -> 5.47"},  // p1_massive_ablation.cpp:156
                     {"mean_ppl_ratio_max", 1.1, "<=", "convention: within 10 %; Sun et al.: 5.47 -> 5.47"},  // p1_massive_ablation.cpp:157
                     {"random_ppl_ratio_min", 0.9, ">=", "convention: the control stays within 10 %"},  // p1_massive_ablation.cpp:158
                     {"random_ppl_ratio_max", 1.1, "<=", "convention: the control stays within 10 %"},  // p1_massive_ablation.cpp:159
                 },
             /*preconditions*/ {{"share of samples with a massive activation after the step-up block", "not applicable"}},
             /*outcomes*/ {{"every condition holds", "reproduced"},
                          {"a condition fails", "not reproduced"},
                          {"a precondition fails", "not applicable"},
                          {"a sample's NLL is not finite",
                           "each ratio reads an exact +inf: the zero >= 10 condition holds, the <= 1.1 conditions fail"}}},

        // No precondition: on random weights no token is special and the first ratio stays near 1.
        Rule{/*id*/ "P2",
             /*experiment*/ "p2_streaming_window",
             /*kind*/ "claim",
             /*scope*/ "Natural text without BOS, T = 256: perplexity of the predictions at positions >= W under full "
                      "attention, a window of W recent tokens (0+W) and sink_tokens initial tokens plus W - sink_tokens recent "
                      "ones, as a mask on every layer (analysis::add_streaming_window; RoPE angles kept); paired per sample.",
             /*values*/
                 {
                     {"window", 64, "locator", "convention: W (StreamingLLM's cache size; the paper's 1024)"},  // p2_streaming_window.cpp:22 (Config, --window; --smoke 8)
                     {"sink_tokens", 4, "locator", "paper: StreamingLLM keeps 4 initial tokens (4+1020)"},  // p2_streaming_window.cpp:23 (Config sinks {0, 1, 4}), used :84, :91, :92
                     {"evicting_sink_tokens", 0, "locator", "paper: StreamingLLM's 0+W window (0+1024)"},  // p2_streaming_window.cpp:23, used :91
                     {"eviction_ppl_ratio_min", 2, ">=", "convention; StreamingLLM: 5158 / 5.40 for Llama-2-13B at W = 1024"},  // p2_streaming_window.cpp:91
                     {"restore_ppl_ratio_max", 1.25, "<=", "convention: 'restores'"},  // p2_streaming_window.cpp:92
                 },
             /*preconditions*/ {},
             /*outcomes*/ {{"every condition holds", "reproduced"}, {"a condition fails", "not reproduced"}}},
    });
    return rules;
}

// The rule registered under `id`; an Error when there is none.
inline const Rule& rule(std::string_view id) {
    for (const auto& r : rule_table())
        if (r.id == id) return r;
    throw Error("no rule '" + std::string(id) + "' in the rule set (analysis/rule_table.hpp)");
}

}  // namespace sinkscope::analysis
