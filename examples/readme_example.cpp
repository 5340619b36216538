#include <sinkscope/sinkscope.hpp>
#include <iostream>
using namespace sinkscope;

int main(int argc, char** argv) {
    const std::string path = argc > 1 ? argv[1] : "models/SmolLM2-135M-Instruct.Q4_1.gguf";  // or a HF directory
    auto m   = model::load_model<float>(path);
    auto tok = analysis::tokenizer_for(m);
    auto ids = tok.encode("The quick brown fox.", /*add_bos=*/false);

    model::HookSet<float> hooks;
    model::ActivationCache<float> cache;                   // copies only what the filter accepts
    cache.attach(hooks, {"blocks.11.hook_resid_post", "blocks.3.attn.hook_pattern"});
    model::zero_ablate_channels<float>(hooks, "blocks.10.hook_resid_post", {507}, {0});  // an intervention
    auto logits = model::forward(m.config, m.weights, ids, &hooks);                // (T × vocab)

    const auto x = model::view(cache["blocks.11.hook_resid_post"]);  // xtensor view, shape [T, 576]
    auto trace = xt::view(x, xt::all(), 507);                         // channel 507 over positions
    std::cout << "position 0, channel 507: " << x(0, 507) << "\nchannel 507 over positions:";
    for (float v : trace) std::cout << ' ' << v;
    std::cout << "\nlogits: " << logits.rows() << " x " << logits.cols() << "\n";
}
