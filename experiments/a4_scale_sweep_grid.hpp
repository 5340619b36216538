// a4_scale_sweep's grid: the presets (model sizes, steps, tasks), fixed before any run was measured, and
// the jobs they make (one training run per grid point and seed, train::TrainConfig by training.hpp).
// Split from a4_scale_sweep.cpp, which keeps the method, the measurements' use and the rule.
#pragma once

#include <algorithm>
#include <sstream>

#include "training.hpp"

namespace sinkscope::experiments::scale_sweep {

// The text task's token files (--text-tokens, --text-heldout, --text-vocab; scripts/make_text_tokens.sh).
struct TextData {
    std::string path, heldout;
    std::int64_t vocab = 512, bos = -1;
};

inline constexpr std::int64_t kRecords = 8;   // trace records after step 0

struct Point {
    std::string task;   // bigram-backcopy | zipf | text
    std::int64_t layers, d_model, heads, seq_len, steps, batch;
    double lr;
};

struct Preset {
    std::string name, purpose;
    std::vector<Point> points;
    bool cuda = false;  // sized for the device trainer
};

// The grids, fixed before any run was measured. Guo et al.'s recipe (training.hpp) throughout: the only
// one that formed a sink within our CPU budgets (A1, A4). No BOS: position 0 is an ordinary token.
inline Preset make_preset(const std::string& name) {
    Preset p;
    p.name = name;
    if (name == "smoke") {
        p.purpose = "test size: seconds";
        p.points = {{"bigram-backcopy", 2, 16, 2, 16, 8, 2, 3e-3}, {"bigram-backcopy", 2, 32, 2, 16, 8, 2, 3e-3}};
    } else if (name == "cpu") {
        p.purpose = "the main job's budget: minutes on 2 cores";
        // A first version also trained Bigram-Backcopy at L 4, d 128 (3 × ~140 s): 18 min in all on 2 cores,
        // over the main job's budget; that size is in `workstation`. A4's model is a4_training_trace's (L 4, d 64).
        p.points = {{"bigram-backcopy", 2, 32, 2, 64, 1200, 16, 3e-3},
                    {"bigram-backcopy", 2, 64, 2, 64, 1200, 16, 3e-3},
                    {"bigram-backcopy", 4, 64, 2, 64, 1200, 16, 3e-3},
                    {"zipf", 2, 32, 2, 64, 600, 16, 3e-3},
                    {"zipf", 4, 64, 2, 64, 600, 16, 3e-3},
                    {"zipf", 4, 128, 4, 64, 600, 16, 3e-3}};
    } else if (name == "text") {
        p.purpose = "English text on the CPU: tens of minutes on 2 cores; needs --text-tokens";
        p.points = {{"text", 2, 64, 2, 128, 1500, 16, 3e-3},
                    {"text", 4, 64, 2, 128, 1500, 16, 3e-3},
                    {"text", 4, 128, 4, 128, 1500, 16, 2e-3}};
    } else if (name == "workstation") {
        p.purpose = "hours on a many-core workstation, days on 2 cores (--plan measures the estimate); text needs --text-tokens";
        for (const std::string task : {"bigram-backcopy", "zipf", "text"}) {
            p.points.push_back({task, 2, 64, 2, 128, 4000, 16, 3e-3});
            p.points.push_back({task, 4, 128, 4, 128, 4000, 16, 2e-3});
            p.points.push_back({task, 8, 256, 4, 256, 4000, 16, 1e-3});
            p.points.push_back({task, 12, 512, 8, 512, 4000, 16, 6e-4});
        }
    } else if (name == "gpu") {
        p.purpose = "one H200 with the CUDA trainer: a ~60M model past 1B tokens (Gu et al.'s sink scale) and a "
                    "GPT-2-small-sized model (Paper B's spikes); needs --text-tokens";
        p.cuda = true;
        p.points = {{"text", 8, 640, 10, 512, 32000, 64, 6e-4},     // ~39M non-embedding, 1.05B tokens
                    {"text", 12, 768, 12, 1024, 40000, 32, 6e-4}};  // ~85M non-embedding, 1.31B tokens
    } else {
        throw Error("unknown preset '" + name + "' (smoke, cpu, text, workstation, gpu)");
    }
    return p;
}

// The model the A4 rule judges: the largest Bigram-Backcopy point (size L·d²·steps), the task on which
// Guo et al. form sinks fastest; in a preset without one (gpu, text) the largest point of any task.
inline Point rule_point(const Preset& p) {
    auto size = [](const Point& q) { return double(q.layers) * double(q.d_model) * double(q.d_model) * double(q.steps); };
    const bool backcopy = std::any_of(p.points.begin(), p.points.end(), [](const Point& q) { return q.task == "bigram-backcopy"; });
    Point best{};
    for (const auto& q : p.points)
        if ((!backcopy || q.task == "bigram-backcopy") && size(q) >= size(best)) best = q;
    return best;
}

struct Job {
    Point point;
    std::int64_t seed;
    std::string name;
};

inline std::vector<Job> jobs_of(const Preset& p, std::int64_t seeds) {
    std::vector<Job> jobs;
    for (const auto& pt : p.points)
        for (std::int64_t s = 0; s < seeds; ++s) {
            std::ostringstream n;
            n << pt.task << "_L" << pt.layers << "_d" << pt.d_model << "_T" << pt.seq_len << "_n" << pt.steps << "_seed" << s;
            jobs.push_back({pt, s, n.str()});
        }
    return jobs;
}

inline train::TrainConfig job_config(const Job& j, const TextData& text, std::int64_t eval, bool bos, model::MatmulPrecision precision) {
    const Point& p = j.point;
    TrainSize z{p.layers, p.d_model, p.heads, p.seq_len, 64, 3, p.steps, p.batch, eval, p.lr, 1e-4,
                p.task == "text" ? "zipf" : p.task, bos, 0, "guo"};
    auto t = train_config(z, 1000 + std::uint64_t(j.seed), [&](train::TrainConfig& c) {
        if (p.task != "text") return;
        // (no path: the GPU preset's --plan, which reads nothing)
        c.task = {{"kind", "text"}, {"path", text.path.empty() ? std::string() : fs::absolute(text.path).string()}, {"vocab", text.vocab},
                  {"seq_len", p.seq_len}, {"seed", 1001 + j.seed}, {"bos", text.bos}};
        if (!text.heldout.empty()) c.task["heldout"] = fs::absolute(text.heldout).string();
        c.model.vocab_size = text.vocab;
    });
    t.checkpoint_every = std::max<std::int64_t>(1, p.steps / kRecords);
    t.threads = 0;
    t.precision = precision;
    return t;
}

}  // namespace sinkscope::experiments::scale_sweep
