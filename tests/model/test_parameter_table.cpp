// The parameter table (model/parameter_table.hpp) against references that do not come from it: the
// tensors the checkpoint files themselves list (every element of every family fixture is read exactly
// once), the size of TensorNames (every key a format can name has a reader), and round trips.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include <sinkscope/io/gguf.hpp>
#include <sinkscope/io/safetensors.hpp>
#include <sinkscope/model/load.hpp>
#include <sinkscope/model/parameter_table.hpp>
#include <sinkscope/train/init.hpp>

#include "test_paths.hpp"

using namespace sinkscope;
using namespace sinkscope::model;
namespace fs = std::filesystem;

namespace {
template <class Rows>
void add_names(const Rows& rows, std::set<std::string>& names, std::size_t& count) {
    for (const auto& r : rows) { names.insert(r.name); ++count; }
}
}  // namespace

TEST_CASE("every row has a unique name, a shape and a presence rule; readers have keys", "[model][parameter_table]") {
    std::set<std::string> top, block, expert;
    std::size_t n_top = 0, n_block = 0, n_expert = 0;
    add_names(input_parameters<float>(), top, n_top);
    add_names(output_parameters<float>(), top, n_top);
    add_names(block_parameters<float>(), block, n_block);
    add_names(expert_parameters<float>(), expert, n_expert);
    CHECK(top.size() == n_top);
    CHECK(block.size() == n_block);
    CHECK(expert.size() == n_expert);
    auto check_rows = [](const auto& rows) {
        for (const auto& r : rows) {
            INFO(r.name);
            CHECK((r.rows && r.cols && r.used));
            CHECK((r.read == ParamRead::none) == (r.key == nullptr));
            CHECK(int(r.mat != nullptr) + int(r.vec != nullptr) + int(r.norm != nullptr) == 1);
            if (r.view) CHECK(r.mat != nullptr);
        }
    };
    check_rows(input_parameters<float>());
    check_rows(block_parameters<float>());
    check_rows(expert_parameters<float>());
    check_rows(output_parameters<float>());
    // Every part of a packing is a row of its table.
    for (const Packing& p : block_packings()) {
        for (const auto& n : p.parts) CHECK(block.count(n) == 1);
        for (const auto& n : p.bias_parts) CHECK(block.count(n) == 1);
    }
    for (const Packing& p : expert_packings())
        for (const auto& n : p.parts) CHECK(expert.count(n) == 1);
}

TEST_CASE("every TensorNames entry is read by some row or packing", "[model][parameter_table]") {
    // TensorNames holds only strings: its size says how many entries it has, independently of the table.
    static_assert(sizeof(TensorNames) % sizeof(std::string) == 0, "TensorNames holds only std::string members");
    constexpr std::size_t entries = sizeof(TensorNames) / sizeof(std::string);
    // Member pointers have == but no order: a vector of the distinct ones.
    std::vector<MemberOf<TensorNames, std::string>> keys;
    auto insert = [&](MemberOf<TensorNames, std::string> k) {
        if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    };
    auto add = [&](const auto& rows) { for (const auto& r : rows) if (r.key) insert(r.key); };
    add(input_parameters<float>());
    add(block_parameters<float>());
    add(expert_parameters<float>());
    add(output_parameters<float>());
    for (const auto* packings : {&block_packings(), &expert_packings()})
        for (const Packing& p : *packings) {
            insert(p.key);
            if (p.bias_key) insert(p.bias_key);
        }
    CHECK(keys.size() == entries);
}

TEST_CASE("loading reads every element of every family fixture exactly once", "[model][parameter_table]") {
    // The files' own tensor lists are the reference: the loaded parameters hold as many elements as the
    // checkpoint, so no tensor is skipped, read twice, or sliced into the wrong parts' sizes.
    int checked = 0;
    for (const auto& entry : fs::directory_iterator(test::fixture("model"))) {
        const std::string dir = entry.path().string();
        const std::string name = entry.path().filename().string();
        std::int64_t in_file = 0;
        if (fs::exists(dir + "/model.safetensors")) {
            const io::SafetensorsCheckpoint ck(dir);
            for (const std::string& n : ck.names()) {
                std::int64_t k = 1;
                for (auto s : ck.shape(n)) k *= s;
                in_file += k;
            }
        } else if (fs::exists(dir + "/model.gguf")) {
            const io::GgufFile f(dir + "/model.gguf");
            for (const auto& t : f.tensors())
                if (t.name != "rope_freqs.weight") in_file += t.n_elements();  // a Config entry, not a parameter
        } else {
            continue;
        }
        INFO(name);
        const std::string path = fs::exists(dir + "/model.gguf") ? dir + "/model.gguf" : dir;
        const auto m = load_model<float>(path);
        CHECK(parameter_count(m.weights) == in_file);
        ++checked;
    }
    CHECK(checked >= 20);
}

TEST_CASE("cast_weights keeps every tensor, in order, to the last bit through double", "[model][parameter_table]") {
    Config c;
    c.n_layers = 2; c.d_model = 16; c.n_heads = 2; c.n_kv_heads = 1; c.head_dim = 8; c.d_ff = 24; c.vocab_size = 40;
    c.context_length = 16; c.ffn = FfnKind::moe; c.n_experts = 3; c.n_experts_used = 2; c.qkv_bias = true;
    c.qk_norm = true; c.norm_placement = NormPlacement::sandwich;
    const Weights<float> w = train::init_weights<float>(c, 7);
    const Weights<float> back = cast_weights<float>(cast_weights<double>(w));
    std::vector<std::pair<std::string, std::vector<float>>> a, b;
    visit_parameters(w, [&](const std::string& n, const auto& t) { a.push_back({n, {t.data(), t.data() + t.size()}}); });
    visit_parameters(back, [&](const std::string& n, const auto& t) { b.push_back({n, {t.data(), t.data() + t.size()}}); });
    CHECK(a.size() > 30);
    CHECK(a == b);
}
