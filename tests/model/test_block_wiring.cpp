// model/block_wiring.hpp evaluated symbolically: an Ops whose buffers hold expressions instead of numbers, so
// that one wire_block call yields the block's whole formula and what each hook sees. Checked against the
// formulas of the placements as the papers and Hugging Face's modelling code write them (the header's table):
//   pre-norm  x' = h + FFN(N₂(h)),        h = x + Attn(N₁(x))          (Llama)
//   sandwich  x' = h + N₂ᵖ(FFN(N₂(h))),   h = x + N₁ᵖ(Attn(N₁(x)))     (Gemma 2/3)
//   post-norm x' = N₂(h + FFN(h)),        h = N₁(x + Attn(x))          (BERT, the original Transformer)
//   output    x' = h + N₂ᵖ(FFN(h)),       h = x + N₁ᵖ(Attn(x))         (OLMo-2)
//   parallel  x' = x + (FFN(N₂(x)) + Attn(N₁(x)))                     (GPT-NeoX: the sum's order as in HF)
#include <catch2/catch.hpp>

#include <map>
#include <sinkscope/model/block_wiring.hpp>
#include <sinkscope/model/config.hpp>
#include <sinkscope/model/hook_table.hpp>
#include <string>

using namespace sinkscope::model;

namespace {

struct SymbolicOps {
    std::map<Buf, std::string> buf{{Buf::x, "x"}, {Buf::xn_attn, "?"}, {Buf::xn_ffn, "?"}, {Buf::out, "?"}, {Buf::side, "?"}};
    std::map<std::string, std::string> seen;  // hook (short name) → what it saw
    static std::string sub(Sublayer s) { return s == Sublayer::attention ? "Attn" : "FFN"; }
    void norm(NormSlot slot, Sublayer s, Buf dst, Buf src) {
        const std::string n = std::string("N") + (s == Sublayer::attention ? "1" : "2") + (slot == NormSlot::second ? "p" : "");
        buf[dst] = n + "(" + buf[src] + ")";
    }
    void run(Sublayer s, Buf dst, Buf src) { buf[dst] = sub(s) + "(" + buf[src] + ")"; }
    void add(Buf dst, Buf src) { buf[dst] = "(" + buf[dst] + " + " + buf[src] + ")"; }
    void copy(Buf dst, Buf src) { buf[dst] = buf[src]; }
    void swap(Buf a, Buf b) { std::swap(buf[a], buf[b]); }
    void hook(HookId id, const std::string& name, Buf b) {
        CHECK(name == BlockNames(3)[id]);  // the names the wiring is given, unchanged
        seen[hook_spec(id).short_name] = buf[b];
    }
};

SymbolicOps wire(NormPlacement placement, bool parallel = false, FfnKind ffn = FfnKind::swiglu) {
    Config c;
    c.norm_placement = placement;
    c.parallel_residual = parallel;
    c.ffn = ffn;
    SymbolicOps ops;
    wire_block(ops, c, BlockNames(3));
    return ops;
}

}  // namespace

TEST_CASE("block wiring: each placement computes its published formula, and each hook sees its term", "[model][wiring]") {
    SECTION("pre-norm") {
        const auto o = wire(NormPlacement::pre);
        const std::string h = "(x + Attn(N1(x)))";
        CHECK(o.buf.at(Buf::x) == "(" + h + " + FFN(N2(" + h + ")))");
        CHECK(o.seen.at("resid_pre") == "x");
        CHECK(o.seen.at("normalized1") == "N1(x)");
        CHECK(o.seen.at("attn_out") == "Attn(N1(x))");
        CHECK(o.seen.at("resid_mid") == h);
        CHECK(o.seen.at("normalized2") == "N2(" + h + ")");
        CHECK(o.seen.at("mlp_out") == "FFN(N2(" + h + "))");
        CHECK(o.seen.at("resid_post") == o.buf.at(Buf::x));
    }
    SECTION("sandwich") {
        const auto o = wire(NormPlacement::sandwich);
        const std::string h = "(x + N1p(Attn(N1(x))))";
        CHECK(o.buf.at(Buf::x) == "(" + h + " + N2p(FFN(N2(" + h + "))))");
        CHECK(o.seen.at("attn_out") == "N1p(Attn(N1(x)))");  // after the post-norm, as the hook table says
        CHECK(o.seen.at("mlp_out") == "N2p(FFN(N2(" + h + ")))");
    }
    SECTION("post-norm") {
        const auto o = wire(NormPlacement::post);
        const std::string h = "N1((x + Attn(x)))";
        CHECK(o.buf.at(Buf::x) == "N2((" + h + " + FFN(" + h + ")))");
        CHECK(o.seen.at("attn_out") == "Attn(x)");
        CHECK(o.seen.at("normalized1") == h);  // the norm's hook sees the new residual stream
        CHECK(o.seen.at("resid_mid") == h);
        CHECK(o.seen.at("mlp_out") == "FFN(" + h + ")");
    }
    SECTION("output norms (OLMo-2)") {
        const auto o = wire(NormPlacement::output);
        const std::string h = "(x + N1p(Attn(x)))";
        CHECK(o.buf.at(Buf::x) == "(" + h + " + N2p(FFN(" + h + ")))");
        CHECK(o.seen.count("normalized1") == 0);  // no norm before a sub-layer, so no norm hook
        CHECK(o.seen.at("attn_out") == "N1p(Attn(x))");
    }
    SECTION("parallel (GPT-NeoX)") {
        const auto o = wire(NormPlacement::pre, true);
        CHECK(o.buf.at(Buf::x) == "(x + (FFN(N2(x)) + Attn(N1(x))))");
        CHECK(o.seen.count("resid_mid") == 0);
        CHECK(o.seen.at("attn_out") == "Attn(N1(x))");
        CHECK(o.seen.at("mlp_out") == "FFN(N2(x))");
    }
    SECTION("attention only") {
        const auto o = wire(NormPlacement::pre, false, FfnKind::none);
        CHECK(o.buf.at(Buf::x) == "(x + Attn(N1(x)))");
        CHECK(o.seen.count("mlp_out") == 0);
        CHECK(o.seen.at("resid_post") == o.seen.at("resid_mid"));
    }
}
