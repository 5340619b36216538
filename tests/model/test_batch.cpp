// forward_batch (model/batch.hpp): sequences of different lengths, right-padded into one batch, give
// the logits and hooks they give alone under forward(), to a few float ulps (kBatchTolerance says why).
// SINKSCOPE_PRINT_BATCH_DIFF=1 prints the measured differences.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>
#include <sinkscope/model/batch.hpp>
#include <sinkscope/model/forward.hpp>
#include <sinkscope/model/load.hpp>
#include <sinkscope/model/reducers.hpp>

#include "test_paths.hpp"
#include "tiny_model.hpp"

using namespace sinkscope;
using namespace sinkscope::model;

namespace {

// Deterministic tokens of three lengths; the longest is the middle one, so that both a shorter first and a
// shorter last sequence are padded.
std::vector<std::vector<std::int32_t>> three_sequences(std::int64_t vocab, std::vector<std::size_t> lengths = {5, 17, 11}) {
    std::vector<std::vector<std::int32_t>> s;
    for (std::size_t b = 0; b < lengths.size(); ++b) {
        std::vector<std::int32_t> t(lengths[b]);
        for (std::size_t i = 0; i < t.size(); ++i) t[i] = std::int32_t((7 * b + 13 * i + 3 * i * i + 1) % std::size_t(vocab));
        s.push_back(t);
    }
    return s;
}

bool wanted(const std::string& n) {
    return n.find("hook_resid_post") != std::string::npos || n.find("hook_pattern") != std::string::npos ||
           n.find("hook_rot_q") != std::string::npos || n.find("hook_chosen_experts") != std::string::npos;
}

// Largest |a − b| over the largest |b|, over the entries of one tensor.
struct Diff {
    double max_abs = 0, max_ref = 0;
    void add(double a, double b) { max_abs = std::max(max_abs, std::abs(a - b)); max_ref = std::max(max_ref, std::abs(b)); }
    double rel() const { return max_ref > 0 ? max_abs / max_ref : max_abs; }
};

// Runs `seqs` as one batch and each alone; compares the logits and every captured hook, sliced to each
// sequence's length. Returns the largest relative difference (Diff::rel) over the tensors compared.
double batch_vs_alone(const Config& c, const Weights<float>& w, const std::vector<std::vector<std::int32_t>>& seqs) {
    HookSet<float> bh;
    ActivationCache<float> bcache;
    bcache.attach(bh, wanted);
    const BatchLogits<float> batch = forward_batch(c, w, seqs, &bh);
    const std::int64_t B = std::int64_t(seqs.size()), P = batch.positions, V = c.vocab_size;
    REQUIRE(batch.batch == B);
    REQUIRE(batch.logits.rows() == B * P);
    REQUIRE(batch.logits.cols() == V);
    double worst = 0;
    for (std::int64_t b = 0; b < B; ++b) {
        const std::int64_t n = std::int64_t(seqs[std::size_t(b)].size());
        REQUIRE(batch.lengths[std::size_t(b)] == n);
        HookSet<float> h;
        ActivationCache<float> cache;
        cache.attach(h, wanted);
        const Mat<float> alone = forward(c, w, seqs[std::size_t(b)], &h);
        REQUIRE(batch.sequence(b).rows() == n);
        Diff d;
        for (std::int64_t t = 0; t < n; ++t)
            for (std::int64_t j = 0; j < V; ++j) d.add(batch.sequence(b)(t, j), alone(t, j));
        worst = std::max(worst, d.rel());
        REQUIRE(!cache.all().empty());
        for (const auto& [name, one] : cache.all()) {
            INFO(name << " of sequence " << b);
            REQUIRE(bcache.has(name));
            const Captured<float>& all = bcache[name];
            d = Diff{};
            if (name.find("hook_pattern") != std::string::npos) {  // [B, H, T, T] against [H, n, n]
                const std::int64_t H = one.shape[0];
                REQUIRE(all.shape == std::vector<std::int64_t>{B, H, P, P});
                for (std::int64_t hh = 0; hh < H; ++hh)
                    for (std::int64_t i = 0; i < P; ++i)
                        for (std::int64_t j = 0; j < P; ++j) {
                            const float got = all.data[std::size_t(((b * H + hh) * P + i) * P + j)];
                            if (i < n && j < n) d.add(got, one.data[std::size_t((hh * n + i) * n + j)]);
                            else REQUIRE(got == 0.0f);  // padded queries and keys: exactly 0
                        }
            } else {  // [B, T, …] against [n, …]
                std::vector<std::int64_t> expect{B, P};
                expect.insert(expect.end(), one.shape.begin() + 1, one.shape.end());
                REQUIRE(all.shape == expect);
                const std::size_t row = one.data.size() / std::size_t(n);
                for (std::size_t i = 0; i < one.data.size(); ++i) d.add(all.data[std::size_t(b * P) * row + i], one.data[i]);
            }
            worst = std::max(worst, d.rel());
        }
    }
    return worst;
}

// The tolerance of batch against alone: not bit-exact. Measured max |Δ| / max |ref| per tensor (logits,
// resid_post, rot_q, pattern of every layer, every sequence), OpenMP on or off alike: 1.9e-7 (gpt2) to
// 4.3e-7 (olmo2) on the fixtures, 1.1e-6 on gemma2, whose logits are soft-capped at 3: the reference's
// largest entry is then 3 while the rounding is that of the uncapped logits, ~10× larger; 1.9e-7 to
// 3.9e-7 on the tiny variants. The cause is Eigen's GEMM, not the batching: the first activation that
// differs is q/k/v of layer 0 (its input ln1 is bit-identical). Eigen computes x Wᵀ in panels of a few
// positions, and the panel a position falls in (a full one, or the tail of n mod the panel width, which
// takes another micro-kernel) depends on how many rows the GEMM has, so one row rounds differently in a
// GEMM of 5 rows and in one of 51, by an ulp or two, growing through the layers. A batch of one sequence
// is bit-exact (a test below). 2e-6 is 1.8× the largest measured.
constexpr double kBatchTolerance = 2e-6;

}  // namespace

TEST_CASE("forward_batch: each sequence gives what it gives alone, on the fixture models", "[model]") {
    for (const char* kind : {"llama", "gpt2", "gemma2", "gpt_neox", "qwen3", "olmo2", "mixtral", "phi3"}) {
        SECTION(kind) {
            const auto m = load_model<float>(test::fixture(std::string("model/random_") + kind));
            const double rel = batch_vs_alone(m.config, m.weights, three_sequences(m.config.vocab_size));
            if (std::getenv("SINKSCOPE_PRINT_BATCH_DIFF")) std::printf("%s: batch vs alone %.3g\n", kind, rel);
            CHECK(rel <= kBatchTolerance);
        }
    }
}

TEST_CASE("forward_batch: attention variants of the tiny model give what they give alone", "[model]") {
    Config c = test::tiny_llama();
    SECTION("softmax, sliding window 4") { c.sliding_window = 4; }
    SECTION("softmax off by one") { c.attention = AttentionKind::softmax_off_by_one; }
    SECTION("kv bias") { c.attention = AttentionKind::kv_bias; }
    SECTION("force sink channels") { c.force_sink_channels = 3; }
    SECTION("learned positions, no RoPE") { c.positions = PositionKind::learned; }
    auto w = test::random_weights<float>(c, 11);
    if (c.attention == AttentionKind::kv_bias)
        for (auto& L : w.layers) L.sink_kv = Mat<float>::Random(2, c.kv_dim());
    const double rel = batch_vs_alone(c, w, three_sequences(c.vocab_size, {5, 16, 1, 11}));
    if (std::getenv("SINKSCOPE_PRINT_BATCH_DIFF")) std::printf("tiny: batch vs alone %.3g\n", rel);
    CHECK(rel <= kBatchTolerance);
}

TEST_CASE("forward_batch: one sequence is forward with a batch dimension", "[model]") {
    const Config c = test::tiny_llama();
    const auto w = test::random_weights<float>(c, 3);
    const std::vector<std::int32_t> tokens{1, 5, 9, 2, 7};
    HookSet<float> h;
    ActivationCache<float> cache;
    cache.attach(h, std::vector<std::string>{"blocks.1.hook_resid_post", "blocks.0.attn.hook_pattern", "logits"});
    const auto b = forward_batch(c, w, {tokens}, &h);
    CHECK(cache["blocks.1.hook_resid_post"].shape == std::vector<std::int64_t>{1, 5, c.d_model});
    CHECK(cache["blocks.0.attn.hook_pattern"].shape == std::vector<std::int64_t>{1, c.n_heads, 5, 5});
    CHECK(cache["logits"].shape == std::vector<std::int64_t>{1, 5, c.vocab_size});
    // Bit for bit against forward with the same hooks: a hook on the pattern makes both materialise the
    // scores, whereas forward without hooks runs the fused causal kernel, whose sums round differently
    // on some instruction sets (seen under the portable -O1 ASan build).
    HookSet<float> h_alone;
    ActivationCache<float> alone;
    alone.attach(h_alone, std::vector<std::string>{"blocks.1.hook_resid_post", "blocks.0.attn.hook_pattern", "logits"});
    CHECK(b.logits == forward(c, w, tokens, &h_alone));
    ForwardOptions no_logits;
    no_logits.logits = false;
    CHECK(forward_batch<float>(c, w, {tokens}, nullptr, no_logits).logits.size() == 0);
}

TEST_CASE("forward_batch: a hook edit in one sequence changes only that sequence", "[model]") {
    const Config c = test::tiny_llama();
    const auto w = test::random_weights<float>(c, 5);
    const auto seqs = three_sequences(c.vocab_size, {5, 9, 7});
    const auto clean = forward_batch(c, w, seqs);
    HookSet<float> h;
    h.add("blocks.0.hook_resid_post", [&](const std::string&, ActivationRef<float>& x) {
        REQUIRE(x.shape == std::vector<std::int64_t>{3, 9, c.d_model});
        const std::int64_t b = 1, t = 2;
        for (std::int64_t i = 0; i < c.d_model; ++i) x.data[(b * 9 + t) * c.d_model + i] += 1.0f;
    });
    const auto edited = forward_batch(c, w, seqs, &h);
    CHECK(edited.sequence(0) == clean.sequence(0));
    CHECK(edited.sequence(2) == clean.sequence(2));
    CHECK(edited.sequence(1).topRows(2) == clean.sequence(1).topRows(2));     // before the edit: causal
    CHECK(edited.sequence(1).bottomRows(7) != clean.sequence(1).bottomRows(7));  // the edit and after
    // The same edit under forward on that sequence alone gives the same logits.
    HookSet<float> h1;
    h1.add("blocks.0.hook_resid_post", [&](const std::string&, ActivationRef<float>& x) {
        for (std::int64_t i = 0; i < c.d_model; ++i) x.data[2 * c.d_model + i] += 1.0f;
    });
    const Mat<float> alone = forward(c, w, seqs[1], &h1);
    CHECK((edited.sequence(1) - alone).cwiseAbs().maxCoeff() <= kBatchTolerance * alone.cwiseAbs().maxCoeff());
}

TEST_CASE("forward_batch rejects bad input with sinkscope::Error", "[model]") {
    Config c = test::tiny_llama();
    const auto w = test::random_weights<float>(c, 1);
    CHECK_THROWS_AS(forward_batch<float>(c, w, {}), Error);
    CHECK_THROWS_WITH(forward_batch<float>(c, w, {{1, 2}, {}}), Catch::Contains("sequence 1") && Catch::Contains("empty"));
    CHECK_THROWS_WITH(forward_batch<float>(c, w, {{1, 2}, {3, std::int32_t(c.vocab_size)}}),
                      Catch::Contains("sequence 1") && Catch::Contains("outside the vocabulary"));
    CHECK_THROWS_WITH(forward_batch<float>(c, w, {{1, -1}}), Catch::Contains("outside the vocabulary"));
    CHECK_THROWS_WITH(forward_batch<float>(c, w, {std::vector<std::int32_t>(std::size_t(c.context_length) + 1, 1)}),
                      Catch::Contains("context length"));
    c.attention = AttentionKind::sink_token;
    CHECK_THROWS_WITH(forward_batch<float>(c, w, {{1, 2}}), Catch::Contains("sink_token"));
}

// Where batch and alone agree bit for bit: on a dense model (no MoE, whose experts gather rows) when every
// length is the same multiple of 4, Eigen 3.4's GEMM panel width in positions (gebp's nr), so that no position
// of a sequence lands in a tail panel, alone or batched, and each sequence's attention has its shapes alone
// (model::batch_is_bit_exact says why padded sequences are not). `sinkscope stats` batches only then (its shards must
// merge into exactly the whole run); if this fails after an Eigen upgrade, see tools/sinkscope.cpp.
TEST_CASE("forward_batch is bit-exact on dense models when every length is the same multiple of 4", "[model]") {
    for (const char* kind : {"llama", "gemma2", "gpt2"}) {
        SECTION(kind) {
            const auto m = load_model<float>(test::fixture(std::string("model/random_") + kind));
            for (const auto& lengths : {std::vector<std::size_t>{8, 8, 8}, std::vector<std::size_t>{12, 12, 12, 12}}) {
                const auto seqs = three_sequences(m.config.vocab_size, lengths);
                CHECK(batch_vs_alone(m.config, m.weights, seqs) == 0.0);
            }
        }
    }
}

TEST_CASE("forward_batch_replay feeds the streaming reducers what forward feeds them", "[model]") {
    const auto m = load_model<float>(test::fixture("model/random_llama"));
    const Config& c = m.config;
    SECTION("equal lengths, a multiple of 4: the same state bit for bit") {
        const auto seqs = three_sequences(c.vocab_size, {8, 8, 8, 8, 8});
        HookSet<float> h1, h2;
        ResidualStats<float> r1(c.n_layers), r2(c.n_layers);
        AttentionStats<float> a1(c.n_layers, c.n_heads), a2(c.n_layers, c.n_heads);
        r1.attach(h1); a1.attach(h1);
        r2.attach(h2); a2.attach(h2);
        for (std::size_t i = 0; i < seqs.size(); ++i) {
            if (i > 0) r1.begin_sample();
            a1.begin_sample();
            forward(c, m.weights, seqs[i], &h1);
        }
        forward_batch_replay<float>(c, m.weights, seqs, h2, [&](std::int64_t b) {
            if (b > 0) r2.begin_sample();
            a2.begin_sample();
        });
        CHECK(r2.samples() == 5);
        CHECK(r2.to_json() == r1.to_json());
        CHECK(a2.to_json() == a1.to_json());
    }
    SECTION("different lengths: each sequence's activations with forward's shapes") {
        const auto seqs = three_sequences(c.vocab_size);
        std::vector<std::string> names{"blocks.1.hook_resid_post", "blocks.0.attn.hook_pattern", "logits"};
        HookSet<float> h;
        std::vector<std::map<std::string, Captured<float>>> per(seqs.size());  // what the replay offered sequence b
        std::int64_t current = -1;
        h.add([&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); },
              [&](const std::string& n, ActivationRef<float>& x) {
                  per[std::size_t(current)][n] = Captured<float>{x.shape, std::vector<float>(x.data, x.data + x.size())};
              });
        forward_batch_replay<float>(c, m.weights, seqs, h, [&](std::int64_t b) { current = b; });
        for (std::size_t b = 0; b < seqs.size(); ++b) {
            HookSet<float> h1;
            ActivationCache<float> alone;
            alone.attach(h1, names);
            forward(c, m.weights, seqs[b], &h1);
            for (const auto& n : names) {
                INFO(n << " of sequence " << b);
                REQUIRE(per[b].count(n) == 1);
                REQUIRE(per[b][n].shape == alone[n].shape);
                double worst = 0, ref = 0;
                for (std::size_t i = 0; i < alone[n].data.size(); ++i) {
                    worst = std::max(worst, double(std::abs(per[b][n].data[i] - alone[n].data[i])));
                    ref = std::max(ref, double(std::abs(alone[n].data[i])));
                }
                CHECK(worst <= kBatchTolerance * ref);
            }
        }
    }
}

TEST_CASE("forward_each offers each sequence what forward gives it, in batches only where that is bit-exact", "[model]") {
    const auto m = load_model<float>(test::fixture("model/random_llama"));
    const Config& c = m.config;
    const std::vector<std::string> names{"blocks.0.hook_resid_post", "blocks.1.attn.hook_pattern"};
    // Events in the order forward_each makes them: "b<i>" before, "h<i>" a hook, "a<i>" after; and what each
    // sequence was offered (hooks and logits).
    struct Seen {
        std::vector<std::string> events;
        std::map<std::int64_t, std::map<std::string, Captured<float>>> hooks;
        std::map<std::int64_t, Mat<float>> logits;
    };
    auto run_each = [&](const std::vector<std::vector<std::int32_t>>& seqs, std::int64_t per_pass, std::int64_t& passes,
                        std::int64_t first = 0, std::int64_t end = -1) {
        Seen seen;
        std::int64_t current = -1;
        HookSet<float> h;
        h.add([&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); },
              [&](const std::string& n, ActivationRef<float>& x) {
                  seen.events.push_back("h" + std::to_string(current));
                  seen.hooks[current][n] = Captured<float>{x.shape, std::vector<float>(x.data, x.data + x.size())};
              });
        EachSequence<float> each;
        each.before = [&](std::int64_t i) { current = i; seen.events.push_back("b" + std::to_string(i)); };
        each.after = [&](std::int64_t i, const Mat<float>& logits) {
            seen.events.push_back("a" + std::to_string(i));
            seen.logits[i] = logits;
        };
        passes = forward_each<float>(c, m.weights, seqs, h, per_pass, each, {}, first, end);
        return seen;
    };
    auto expected_events = [&](std::int64_t first, std::int64_t end) {
        std::vector<std::string> e;
        for (std::int64_t i = first; i < end; ++i) {
            e.push_back("b" + std::to_string(i));
            for (std::size_t k = 0; k < names.size(); ++k) e.push_back("h" + std::to_string(i));
            e.push_back("a" + std::to_string(i));
        }
        return e;
    };
    auto check_alone = [&](const Seen& seen, const std::vector<std::vector<std::int32_t>>& seqs, std::int64_t first,
                           std::int64_t end) {
        for (std::int64_t i = first; i < end; ++i) {
            HookSet<float> h1;
            ActivationCache<float> alone;
            alone.attach(h1, names);
            const Mat<float> logits = forward(c, m.weights, seqs[std::size_t(i)], &h1);
            INFO("sequence " << i);
            CHECK(seen.logits.at(i) == logits);
            for (const auto& n : names) {
                CHECK(seen.hooks.at(i).at(n).shape == alone[n].shape);
                CHECK(seen.hooks.at(i).at(n).data == alone[n].data);
            }
        }
    };
    SECTION("equal lengths, a multiple of 4: passes of per_pass sequences, bit for bit what forward gives") {
        const auto seqs = three_sequences(c.vocab_size, {8, 8, 8, 8, 8});
        REQUIRE(batch_is_bit_exact(c, m.weights, seqs));
        std::int64_t passes = 0;
        const Seen seen = run_each(seqs, 2, passes);
        CHECK(passes == 3);
        CHECK(seen.events == expected_events(0, 5));
        check_alone(seen, seqs, 0, 5);
        std::int64_t one = 0;
        run_each(seqs, 1, one);
        CHECK(one == 5);
        SECTION("a range of the sequences") {
            const Seen part = run_each(seqs, 4, passes, 1, 4);
            CHECK(passes == 1);
            CHECK(part.events == expected_events(1, 4));
            check_alone(part, seqs, 1, 4);
        }
    }
    SECTION("a length not a multiple of 4, or unequal lengths: one forward per sequence, the same offers") {
        for (const auto& lengths : {std::vector<std::size_t>{8, 5, 12}, std::vector<std::size_t>{8, 16, 12}}) {
            const auto seqs = three_sequences(c.vocab_size, lengths);
            CHECK_FALSE(batch_is_bit_exact(c, m.weights, seqs));
            std::int64_t passes = 0;
            const Seen seen = run_each(seqs, 8, passes);
            CHECK(passes == 3);
            CHECK(seen.events == expected_events(0, 3));
            check_alone(seen, seqs, 0, 3);
        }
    }
    SECTION("bad arguments are errors") {
        const auto seqs = three_sequences(c.vocab_size, {8, 8});
        HookSet<float> h;
        CHECK_THROWS_AS(forward_each<float>(c, m.weights, seqs, h, 0, {}), Error);
        CHECK_THROWS_WITH(forward_each<float>(c, m.weights, seqs, h, 2, {}, {}, 1, 3), Catch::Contains("outside"));
    }
}
