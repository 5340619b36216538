// sinkscope._sinkscope.Model: a loaded checkpoint and its forward pass with hooks, for the Python layer
// (python/sinkscope/__init__.py), which checks arguments and gives TransformerLens's names and signatures.
//
// Arrays: logits and captured activations are the C++ buffers themselves, moved into a capsule that
// NumPy owns (no copy). The array a hook receives is a view of the live activation inside the forward
// pass: edits in place change what the forward continues with; it must not be kept after the call.
// Threads: the forward runs without the GIL; each hook call takes it back. Hooks are offered outside
// any OpenMP parallel region (model/forward.hpp runs its parallel loops between hook points), so the
// thread that calls a hook is the one that released the GIL.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <sinkscope/analysis/bos.hpp>
#include <sinkscope/analysis/logit_attribution.hpp>
#include <filesystem>
#include <fstream>
#include <sinkscope/analysis/head_view.hpp>
#include <sinkscope/analysis/head_view_html.hpp>
#include <sinkscope/analysis/logit_lens.hpp>
#include <sinkscope/analysis/stats_run.hpp>
#include <sinkscope/analysis/text.hpp>
#include <sinkscope/model/attention_surgery.hpp>
#include <sinkscope/model/batch.hpp>
#include <sinkscope/model/forward.hpp>
#include <sinkscope/model/interventions.hpp>
#include <sinkscope/model/load.hpp>
#include <sinkscope/model/config_io.hpp>
#include <sinkscope/train/attribution_patching.hpp>
#include <sinkscope/train/random_model.hpp>

#include "arrays.hpp"

namespace sinkscope::python {

using Ids = nb::ndarray<const std::int32_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using PyHook = std::pair<std::string, nb::object>;  // (hook name, callable(x, name))

using AnyFloats = nb::ndarray<const float, nb::c_contig, nb::device::cpu>;

// The interventions of model/interventions.hpp and model/attention_surgery.hpp for one forward pass,
// registered from Python (python/sinkscope/__init__.py's intervention classes) on a HookSet that the
// forward runs before the Python hooks. `names` are checked against the model's hook names.
struct NativeHooks {
    model::HookSet<float> set;
    std::vector<std::string> names;

    static model::Captured<float> captured(const AnyFloats& a) {
        model::Captured<float> c;
        for (std::size_t i = 0; i < a.ndim(); ++i) c.shape.push_back(std::int64_t(a.shape(i)));
        c.data.assign(a.data(), a.data() + a.size());
        return c;
    }
    void zero_ablate_channels(const std::string& name, std::vector<std::int64_t> channels, std::vector<std::int64_t> positions) {
        names.push_back(name);
        model::zero_ablate_channels<float>(set, name, std::move(channels), std::move(positions));
    }
    void scale_channels(const std::string& name, std::vector<std::int64_t> channels, float factor, std::vector<std::int64_t> positions,
                        std::vector<float> centres) {
        names.push_back(name);
        model::scale_channels<float>(set, name, std::move(channels), factor, std::move(positions), std::move(centres));
    }
    void scale_heads(std::int64_t layer, std::vector<std::int64_t> heads, float factor, std::vector<std::int64_t> positions) {
        names.push_back(model::hook_name("z", layer));
        model::scale_heads<float>(set, layer, std::move(heads), factor, std::move(positions));
    }
    // `pattern`: one row (key_pos,) for every chosen (head, query), or a [head, query, key] array.
    void force_pattern(std::int64_t layer, const AnyFloats& pattern, std::vector<std::int64_t> heads,
                       std::vector<std::int64_t> queries, bool keep_mass) {
        names.push_back(model::hook_name("pattern", layer));
        const auto mass = keep_mass ? model::RowMass::model : model::RowMass::one;
        if (pattern.ndim() == 1)
            model::force_pattern_row<float>(set, layer, std::vector<float>(pattern.data(), pattern.data() + pattern.size()),
                                            std::move(heads), std::move(queries), mass);
        else
            model::force_pattern<float>(set, layer, captured(pattern), std::move(heads), std::move(queries), mass);
    }
    void self_only_attention(std::int64_t layer, std::vector<std::int64_t> heads, std::vector<std::int64_t> queries) {
        names.push_back(model::hook_name("pattern", layer));
        model::self_only_attention<float>(set, layer, std::move(heads), std::move(queries));
    }
    void attend_only_to(std::int64_t layer, std::int64_t key, std::vector<std::int64_t> heads, std::vector<std::int64_t> queries) {
        names.push_back(model::hook_name("pattern", layer));
        model::attend_only_to<float>(set, layer, key, std::move(heads), std::move(queries));
    }
    // The source: arrays[i] is the activation source_names[i] (a run_with_cache cache's entries).
    void patch_sites(const std::vector<model::PatchSite>& sites, const std::vector<std::string>& source_names,
                     const std::vector<AnyFloats>& arrays) {
        require(source_names.size() == arrays.size(), "patch_sites: one array per source name");
        std::map<std::string, model::Captured<float>> source;
        for (std::size_t i = 0; i < arrays.size(); ++i) source[source_names[i]] = captured(arrays[i]);
        for (const auto& site : sites) names.push_back(site.name());
        model::patch_sites<float>(set, sites, source);
    }
};

class Model {
public:
    // weights: "auto" (float32 when it fits in memory, else "file"), "float32" (every tensor converted at load;
    // GGUF, HF directory or sinkscope checkpoint) or
    // "file" (the linear maps of a GGUF or HF directory kept in their file types, memory-mapped) or "bf16"
    // (converted at load, then the linear maps rounded to BF16 once: model/bf16_weights.hpp); compute:
    // "exact", "int8" (block-typed maps) or "bf16" (bf16 inputs, float32 sums; oneDNN): model::load_options_from.
    Model(const std::string& path, const std::string& weights, const std::string& compute) {
        model::LoadOptions o;
        try {
            o = model::load_options_from(weights, compute);
        } catch (const Error& e) {
            throw Error(std::string("load: ") + e.what());
        }
        nb::gil_scoped_release release;
        m_ = train::load_within_memory(path, o);  // an Error naming what it needs, instead of bad_alloc
        names_ = model::hook_names(m_.config);
    }

    const model::LoadedModel<float>& loaded() const { return m_; }
    const std::vector<std::string>& hook_names() const { return names_; }
    std::string config_json() const { return model::config_to_json(m_.config).dump(); }

    void require_hook(const std::string& name) const {
        require(std::find(names_.begin(), names_.end(), name) != names_.end(),
                "unknown hook '" + name + "' for this model (Model.hook_names() lists them)", {"", name, {}});
    }

    nb::object to_tokens(const std::string& text, std::optional<bool> bos) const {
        std::vector<std::int32_t> ids;
        {
            nb::gil_scoped_release release;
            const auto tok = analysis::tokenizer_for(m_);
            ids = tok.encode(text, bos ? *bos : tok.add_bos_default());
        }
        const auto n = std::int64_t(ids.size());
        return owned(std::move(ids), {n});
    }

    // Bytes, not str: a byte-fallback piece (<0xDD>) alone is half a UTF-8 character; Python decodes with
    // errors="replace".
    nb::bytes to_string(const std::vector<std::int32_t>& ids) const {
        const std::string s = analysis::tokenizer_for(m_).decode(ids);
        return nb::bytes(s.data(), s.size());
    }

    // One forward pass. `ids` is (B, T); with batched = false B must be 1 and shapes have no batch
    // dimension (model::forward); otherwise row b's first lengths[b] ids are sequence b
    // (model::forward_batch, right-padded to T). Captures the names in `capture` (copies made by the
    // forward's hooks, then handed over without another copy); calls `hooks` in order at their names;
    // applies the C++ interventions `native` before them. Returns (logits, {name: array}).
    nb::tuple run(const Ids& ids, bool batched, const std::vector<std::int64_t>& lengths, const std::vector<std::string>& capture,
                  const std::vector<PyHook>& hooks, const NativeHooks& native, bool logits) const {
        const auto B = std::int64_t(ids.shape(0)), T = std::int64_t(ids.shape(1));
        require(B > 0 && T > 0, "forward: empty ids");
        require(batched || B == 1, "forward: more than one sequence needs the batch path");
        require(lengths.empty() || std::int64_t(lengths.size()) == B,
                "forward: " + std::to_string(lengths.size()) + " lengths for " + std::to_string(B) + " sequences");
        std::vector<std::vector<std::int32_t>> sequences;
        for (std::int64_t b = 0; b < B; ++b) {
            const std::int64_t n = lengths.empty() ? T : lengths[std::size_t(b)];
            require(n >= 1 && n <= T, "forward: length " + std::to_string(n) + " of sequence " + std::to_string(b) +
                                          " is outside [1, " + std::to_string(T) + "]");
            const std::int32_t* row = ids.data() + b * T;
            sequences.emplace_back(row, row + n);
        }
        for (const auto& n : capture) require_hook(n);
        for (const auto& h : hooks) require_hook(h.first);

        for (const auto& n : native.names) require_hook(n);
        model::HookSet<float> set = native.set;
        // A hook that raises stops the forward: its exception travels through the C++ frames as
        // nb::python_error (the forward holds its buffers in RAII objects) and is re-raised as it was.
        for (const auto& [name, fn] : hooks)
            set.add(name, [fn = fn](const std::string& n, model::ActivationRef<float>& x) {
                nb::gil_scoped_acquire acquire;
                fn(borrowed(x.data, x.shape), n);
            });
        model::ActivationCache<float> cache;
        if (!capture.empty()) cache.attach(set, capture);

        model::Mat<float> out;
        std::vector<std::int64_t> shape;
        {
            nb::gil_scoped_release release;
            const model::ForwardOptions options{logits, -1};
            if (!batched) {
                out = model::forward(m_.config, m_.weights, sequences[0], &set, options);
                shape = {out.rows(), out.cols()};
            } else {
                auto r = model::forward_batch(m_.config, m_.weights, sequences, &set, options);
                shape = {r.batch, r.positions, r.logits.cols()};
                out = std::move(r.logits);
            }
        }
        nb::dict arrays;
        for (auto& [name, a] : cache.take()) arrays[nb::str(name.c_str())] = owned(std::move(a.data), a.shape);
        nb::object l = logits ? owned(std::move(out), shape) : nb::none();
        return nb::make_tuple(l, arrays);
    }

    // `sinkscope stats`: the JSON the CLI's --json writes for the same request, as a string.
    std::string stats(const analysis::StatsRequest& r) const {
        nb::gil_scoped_release release;
        return analysis::run_stats(m_, r).json().dump();
    }

    // The logit lens (analysis/logit_lens.hpp) of one sequence: a dict of arrays named as LogitLens's fields.
    nb::dict logit_lens(const std::vector<std::int32_t>& ids, std::int64_t top_k, std::int32_t target) const {
        analysis::LogitLens r;
        {
            nb::gil_scoped_release release;
            r = analysis::logit_lens(m_.config, m_.weights, ids, {top_k, target});
        }
        const std::int64_t R = std::int64_t(r.points.size()), T = r.positions, K = r.top_k;
        nb::dict d;
        d["points"] = nb::cast(r.points);
        d["top_tokens"] = owned(std::move(r.top_tokens), {R, T, K});
        d["top_probs"] = owned(std::move(r.top_probs), {R, T, K});
        if (target >= 0) {
            d["target_rank"] = owned(std::move(r.target_rank), {R, T});
            d["target_prob"] = owned(std::move(r.target_prob), {R, T});
            d["target_logit"] = owned(std::move(r.target_logit), {R, T});
        }
        const std::int64_t V = r.logits.cols();
        d["logits"] = owned(std::move(r.logits), {T, V});
        return d;
    }

    // analysis/head_view.hpp of one sequence: a dict named as HeadView's fields; with `html` set, also the
    // page of `sinkscope view` (analysis/head_view_html.hpp) written there.
    nb::dict head_view(const std::vector<std::int32_t>& ids, std::int64_t top_channels, const std::string& html) const {
        analysis::HeadView v;
        std::string page;
        {
            nb::gil_scoped_release release;
            v = analysis::head_view(m_.config, m_.weights, ids, {top_channels, 3});
            if (!html.empty()) {
                std::optional<tokenizer::Tokenizer> tok;
                try { tok.emplace(analysis::tokenizer_for(m_)); }
                catch (const Error&) {}  // no tokenizer: the page shows token ids
                page = analysis::head_view_html(
                    v, [&](std::int32_t id) { return tok ? tok->decode({id}) : std::to_string(id); }, ids,
                    {{"model", std::filesystem::path(m_.path).filename().string()}, {"tokens", ids.size()}});
                std::ofstream f(html, std::ios::binary);
                f << page;
                require(bool(f), "head_view: cannot write the page", {html, "", {}});
            }
        }
        const std::int64_t L = v.layers, H = v.heads, P = v.positions, R = std::int64_t(v.points.size()), K = v.top_channels;
        nb::dict d;
        d["points"] = nb::cast(v.points);
        d["sink_slots"] = v.sink_slots;
        d["pattern"] = owned(std::move(v.pattern), {L, H, P, P});
        d["alpha0"] = owned(std::move(v.alpha0), {L, H});
        d["resid_norm"] = owned(std::move(v.resid_norm), {R, P});
        d["top_channel"] = owned(std::move(v.top_channel), {R, P, K});
        d["top_value"] = owned(std::move(v.top_value), {R, P, K});
        return d;
    }

    // Attribution patching (train/attribution_patching.hpp): per kind of site, estimate and exact float64
    // (exact NaN where no real patch ran), named as `sinkscope atp` names its files: estimate / exact for the
    // block inputs (n_layers, positions), estimate_attn_out, estimate_mlp_out (n_layers, positions),
    // estimate_z (n_layers, positions, n_heads), estimate_group_NAME (n_layers, positions) per channel group;
    // the metrics; Spearman's ρ.
    nb::dict attribution_patch(const std::vector<std::int32_t>& clean, const std::vector<std::int32_t>& corrupt, std::int32_t target,
                               std::int32_t contrast, std::int64_t position, std::int64_t exact_k, std::uint64_t seed,
                               const std::vector<std::string>& sites, const std::vector<std::string>& group_names,
                               const std::vector<std::vector<std::int64_t>>& group_channels, const std::string& metric_word) const {
        require(exact_k >= 0, "attribution_patch: exact must be >= 0");
        const train::MetricKind kind = train::metric_kind_from(metric_word);
        std::vector<train::ChannelGroup> groups;
        for (std::size_t g = 0; g < group_names.size(); ++g) groups.push_back({group_names[g], group_channels[g]});
        const train::AttributionSites which = train::attribution_sites(sites, std::move(groups));
        // metric "loss": the clean sequence's mean next-token cross-entropy (no target).
        const train::Metric metric =
            kind == train::MetricKind::loss ? train::Metric::next_token_loss(clean) : train::Metric{position, target, contrast, kind};
        train::AttributionPatching r;
        train::ExactComparison cmp;
        {
            nb::gil_scoped_release release;
            auto run = train::attribution_patch_tokens(m_.config, m_.weights, clean, corrupt, metric, which);
            cmp = train::compare_with_exact(run.result, m_.config, m_.weights, clean, run.corrupted.activations, metric, std::size_t(exact_k),
                                            seed);
            r = std::move(run.result);
        }
        nb::dict d;
        for (auto& a : train::site_arrays(r, m_.config)) {  // named as `sinkscope atp` names its files
            const std::vector<std::int64_t> shape(a.shape.begin(), a.shape.end());
            d[("estimate" + a.suffix).c_str()] = owned(std::move(a.estimate), shape);
            d[("exact" + a.suffix).c_str()] = owned(std::move(a.exact), shape);
        }
        d["clean_metric"] = r.clean_metric;
        d["corrupted_metric"] = r.corrupted_metric;
        d["spearman_top"] = cmp.spearman_top;
        d["spearman_random"] = cmp.spearman_random;
        return d;
    }

    // Direct logit attribution (analysis/logit_attribution.hpp) of one sequence: a dict named as
    // LogitAttribution's fields, float64; by_source as (L, H, S).
    nb::dict dla(const std::vector<std::int32_t>& ids, std::int32_t target, std::int32_t contrast, std::int64_t position) const {
        analysis::LogitAttribution a;
        {
            nb::gil_scoped_release release;
            a = analysis::logit_attribution(m_.config, m_.weights, ids, {target, contrast, position});
        }
        const std::int64_t L = a.heads.rows(), H = a.heads.cols();
        auto rows = [](const Eigen::MatrixXd& x) { return RowMatrix64(x); };
        nb::dict d;
        d["position"] = a.position;
        d["sources"] = a.sources;
        d["embed"] = a.embed;
        d["pos_embed"] = a.pos_embed;
        d["heads"] = owned(rows(a.heads), {L, H});
        d["mlp"] = owned(Eigen::VectorXd(a.mlp), {L});
        d["experts"] = a.experts.size() ? owned(rows(a.experts), {L, std::int64_t(a.experts.cols())}) : nb::none();
        d["attn_bias"] = owned(Eigen::VectorXd(a.attn_bias), {L});
        d["mlp_bias"] = owned(Eigen::VectorXd(a.mlp_bias), {L});
        d["final_bias"] = a.final_bias;
        d["bias"] = a.bias();
        d["by_source"] = owned(rows(a.by_source), {L, H, a.sources});
        d["logit"] = a.logit;
        d["model_logit"] = a.model_logit;
        d["total"] = a.total();
        return d;
    }

    // A SwiGLU block's W_gate (d_ff, d), W_up (d_ff, d), W_down (d, d_ff): copies, float32.
    nb::tuple ffn_weights(std::int64_t layer) const {
        require(layer >= 0 && layer < m_.config.n_layers, "ffn_weights: layer " + std::to_string(layer) + " out of range");
        require(!m_.weights.file_type(), "ffn_weights: the model keeps its linear maps as views (weights='file' or 'bf16'); load with weights='float32'");
        require(m_.config.ffn == model::FfnKind::swiglu, "ffn_weights: the FFN is not a dense SwiGLU");
        const auto& w = m_.weights.layers[std::size_t(layer)];
        auto copy = [](const model::Mat<float>& a) { return owned(model::Mat<float>(a), {a.rows(), a.cols()}); };
        return nb::make_tuple(copy(w.w_gate), copy(w.w_up), copy(w.w_down));
    }

    // The canonical names of the parameters (model/parameter_table.hpp), in visit_parameters order.
    std::vector<std::string> parameter_names() const {
        require_dense_for("parameter_names");
        std::vector<std::string> out;
        model::visit_parameters(m_.weights, [&](const std::string& n, const auto&) { out.push_back(n); });
        return out;
    }
    // A float32 copy of one parameter: (rows, cols) for a matrix, (n,) for a vector.
    nb::object parameter(const std::string& name) const {
        require_dense_for("parameter");
        nb::object out;
        model::visit_parameters(m_.weights, [&](const std::string& n, const auto& t) {
            if (n != name || out.is_valid()) return;
            using X = std::decay_t<decltype(t)>;
            if constexpr (X::ColsAtCompileTime == 1) out = owned(X(t), {t.rows()});
            else out = owned(X(t), {t.rows(), t.cols()});
        });
        if (!out.is_valid())
            throw Error("parameter: this model has no parameter '" + name + "' (parameter_names() lists them)");
        return out;
    }

    // Gradients of a scalar metric whose gradient with respect to the logits is `dlogits` (pos × vocab), at
    // every block's hook_resid_pre, hook_attn_out and hook_mlp_out, float32 (pos, d_model), and attn.hook_z
    // (pos, n_heads, d_head) (with a sink token, its row first), and with `params` every parameter's gradient
    // under parameter_names()'s names.
    nb::dict grad(const std::vector<std::int32_t>& ids, const Matrix64& dlogits, bool params) const {
        require_dense_for("grad");
        require(std::int64_t(dlogits.shape(0)) == std::int64_t(ids.size()) && std::int64_t(dlogits.shape(1)) == m_.config.vocab_size,
                "grad: the metric's gradient must be (pos, vocab) = (" + std::to_string(ids.size()) + ", " +
                    std::to_string(m_.config.vocab_size) + "), not (" + std::to_string(dlogits.shape(0)) + ", " +
                    std::to_string(dlogits.shape(1)) + ")");
        model::Weights<float> grads;
        std::vector<train::BlockActivationGradients<float>> act;
        {
            nb::gil_scoped_release release;
            train::TapeRecorder<float> recorder(m_.config, train::FiniteCheck::none);
            recorder.keep_bf16_operands(false);
            const train::Tape<float>& tape = recorder.record(m_.weights, ids);
            const model::Mat<float> dl = as_matrix(dlogits).cast<float>();
            grads = train::zeros_like(m_.weights);
            train::backward(grads, dl, tape, m_.weights, m_.config, act);
        }
        nb::dict d;
        for (std::size_t l = 0; l < act.size(); ++l) {
            const model::BlockNames names{std::int64_t(l)};
            auto put = [&](model::HookId id, model::Mat<float>& g, std::vector<std::int64_t> shape) {
                if (g.size()) d[names[id].c_str()] = owned(std::move(g), std::move(shape));
            };
            const std::int64_t n = act[l].resid_pre.rows(), dm = m_.config.d_model;
            put(model::HookId::resid_pre, act[l].resid_pre, {n, dm});
            put(model::HookId::attn_out, act[l].attn_out, {n, dm});
            put(model::HookId::z, act[l].z, {n, m_.config.n_heads, m_.config.head_dim});
            put(model::HookId::mlp_out, act[l].mlp_out, {n, dm});
        }
        if (params) {
            nb::dict p;
            model::visit_parameters(grads, [&](const std::string& n, auto& t) {
                using X = std::decay_t<decltype(t)>;
                if constexpr (X::ColsAtCompileTime == 1) p[n.c_str()] = owned(X(t), {t.rows()});
                else p[n.c_str()] = owned(X(t), {t.rows(), t.cols()});
            });
            d["params"] = p;
        }
        return d;
    }

private:
    void require_dense_for(const char* what) const {
        require(!m_.weights.file_type(), std::string(what) + ": the model keeps its linear maps as views (weights='file' or "
                                                             "'bf16'); load with weights='float32'");
    }

    model::LoadedModel<float> m_;
    std::vector<std::string> names_;
};

inline void bind_model(nb::module_& m) {
    nb::class_<model::PatchSite>(m, "_PatchSite")
        .def(nb::init<>())
        .def_rw("hook", &model::PatchSite::hook)
        .def_rw("layer", &model::PatchSite::layer)
        .def_rw("positions", &model::PatchSite::positions)
        .def_rw("heads", &model::PatchSite::heads)
        .def_rw("channels", &model::PatchSite::channels)
        .def("name", &model::PatchSite::name);

    nb::class_<NativeHooks>(m, "_NativeHooks")
        .def(nb::init<>())
        .def("zero_ablate_channels", &NativeHooks::zero_ablate_channels)
        .def("scale_channels", &NativeHooks::scale_channels)
        .def("scale_heads", &NativeHooks::scale_heads)
        .def("force_pattern", &NativeHooks::force_pattern)
        .def("self_only_attention", &NativeHooks::self_only_attention)
        .def("attend_only_to", &NativeHooks::attend_only_to)
        .def("patch_sites", &NativeHooks::patch_sites);

    nb::class_<analysis::StatsRequest>(m, "_StatsRequest")
        .def(nb::init<>())
        .def_rw("model", &analysis::StatsRequest::model)
        .def_rw("text_file", &analysis::StatsRequest::text_file)
        .def_rw("text", &analysis::StatsRequest::text)
        .def_rw("tokens_file", &analysis::StatsRequest::tokens_file)
        .def_rw("seq_len", &analysis::StatsRequest::seq_len)
        .def_rw("max_samples", &analysis::StatsRequest::max_samples)
        .def_rw("eps", &analysis::StatsRequest::eps)
        .def_rw("bos", &analysis::StatsRequest::bos)
        .def_rw("batch", &analysis::StatsRequest::batch)
        .def("set_shard", [](analysis::StatsRequest& r, const std::string& s) { r.shard = analysis::parse_shard(s); });

    nb::class_<Model>(m, "_Model")
        .def(nb::init<const std::string&, const std::string&, const std::string&>(), nb::arg("path"), nb::arg("weights"),
             nb::arg("compute"))
        .def("hook_names", &Model::hook_names)
        .def("config_json", &Model::config_json)
        .def("to_tokens", &Model::to_tokens, nb::arg("text"), nb::arg("bos").none())
        // --bos auto|on|off against the checkpoint (analysis/bos.hpp), as JSON {"mode","use","id","source","id_source"}.
        .def("resolve_bos", [](const Model& self, const std::string& mode) {
            return analysis::resolve_bos(self.loaded(), analysis::parse_bos_mode(mode)).to_json().dump();
        })
        .def("to_string", &Model::to_string)
        .def("run", &Model::run)
        .def("stats", &Model::stats)
        .def("ffn_weights", &Model::ffn_weights)
        .def("parameter_names", &Model::parameter_names)
        .def("parameter", &Model::parameter)
        .def("logit_lens", &Model::logit_lens)
        .def("dla", &Model::dla)
        .def("attribution_patch", &Model::attribution_patch)
        .def("grad", &Model::grad)
        .def("head_view", &Model::head_view)
        .def_prop_ro("path", [](const Model& self) { return self.loaded().path; })
        .def_prop_ro("format", [](const Model& self) { return self.loaded().format; })
        .def_prop_ro("file_type_weights", [](const Model& self) { return self.loaded().weights.file_type(); });
}

}  // namespace sinkscope::python
