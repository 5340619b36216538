// A few-step training run of the tiny Llama on the bigram-backcopy task, and bit-for-bit equality of two
// models' weights: what the trainer and run_trainer tests compare runs with.
#pragma once

#include <cstring>

#include <sinkscope/train/trainer.hpp>

#include "train/train_test_util.hpp"

namespace sinkscope::test {

inline train::TrainConfig tiny_run(std::int64_t steps, std::int64_t threads = 1) {
    train::TrainConfig t;
    t.model = tiny_llama_config();
    t.task = {{"kind", "bigram-backcopy"}, {"n_tokens", 12}, {"seq_len", 12}, {"triggers", 2}, {"seed", 3}};
    t.batch = 4;
    t.steps = steps;
    t.optim.lr = 3e-3;
    t.optim.warmup_steps = 2;
    t.optim.total_steps = steps;
    t.threads = threads;
    t.eval_sequences = 2;
    return t;
}

// Every tensor of a equals b's, bit for bit.
template <class T>
bool identical(model::Weights<T>& a, model::Weights<T>& b) {
    auto ra = train::tensor_refs(a), rb = train::tensor_refs(b);
    if (ra.size() != rb.size()) return false;
    for (std::size_t i = 0; i < ra.size(); ++i)
        if (ra[i].size != rb[i].size || std::memcmp(ra[i].data, rb[i].data, sizeof(T) * ra[i].size) != 0) return false;
    return true;
}

}  // namespace sinkscope::test
