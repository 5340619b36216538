// The synthetic tasks and the streamed corpus: structure (exact), determinism, and sampling laws
// checked against their defining probabilities with explicit statistical bounds.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sinkscope/train/data.hpp>

using namespace sinkscope;
using namespace sinkscope::train;

TEST_CASE("Bigram-Backcopy: BOS, triggers copy the token before them, bigram elsewhere", "[train][data]") {
    const BigramBackcopy bb(20, 64, 3, 7);
    REQUIRE(bb.vocab_size() == 21);
    REQUIRE(bb.triggers().size() == 3);
    // triggers are the 3 most likely tokens of the stationary law
    std::vector<double> pi = bb.stationary();
    std::vector<double> sorted = pi;
    std::sort(sorted.rbegin(), sorted.rend());
    for (auto t : bb.triggers()) CHECK(pi[t] >= sorted[2]);
    // π is stationary: πP = π
    const auto& P = bb.transition();
    for (std::size_t j = 0; j < pi.size(); ++j) {
        double s = 0;
        for (std::size_t i = 0; i < pi.size(); ++i) s += pi[i] * P[i][j];
        CHECK(std::abs(s - pi[j]) < 1e-12);
    }
    std::int64_t copies = 0;
    for (std::uint64_t i = 0; i < 200; ++i) {
        const auto s = bb.sequence(i);
        REQUIRE(s.size() == 65);
        CHECK(s[0] == bb.bos());
        CHECK_FALSE(bb.is_trigger(s[1]));
        for (std::size_t t = 1; t + 1 < s.size(); ++t) {
            CHECK(s[t] != bb.bos());
            if (bb.is_trigger(s[t])) { CHECK(s[t + 1] == s[t - 1]); ++copies; }
        }
    }
    CHECK(copies > 200);  // the copy rule is exercised
}

TEST_CASE("Bigram-Backcopy: non-trigger transitions follow P (total variation bound)", "[train][data]") {
    const BigramBackcopy bb(10, 256, 2, 3);
    // The most frequent non-trigger token: count its successors.
    std::int32_t x = -1;
    double best = 0;
    for (std::int32_t i = 0; i < 10; ++i) if (!bb.is_trigger(i) && bb.stationary()[i] > best) { best = bb.stationary()[i]; x = i; }
    std::vector<double> count(11, 0.0);
    double n = 0;
    for (std::uint64_t i = 0; i < 300; ++i) {
        const auto s = bb.sequence(i);
        for (std::size_t t = 1; t + 1 < s.size(); ++t) if (s[t] == x) { count[s[t + 1]] += 1; n += 1; }
    }
    REQUIRE(n > 2000);
    double tv = 0;
    for (int j = 0; j < 10; ++j) tv += 0.5 * std::abs(count[j] / n - bb.transition()[x][j]);
    // E[TV] ≤ ½ Σ_j √(p_j/n) ≤ ½ √(K/n); allow 3× that.
    CHECK(tv < 1.5 * std::sqrt(10.0 / n));
}

TEST_CASE("data streams are deterministic by (seed, index) and validation differs from training", "[train][data]") {
    const BigramBackcopy a(16, 32, 3, 5), b(16, 32, 3, 5), c(16, 32, 3, 6);
    CHECK(a.sequence(17) == b.sequence(17));
    CHECK(a.sequence(17) != a.sequence(18));
    CHECK(a.sequence(17) != c.sequence(17));
    CHECK(a.sequence(3, true) != a.sequence(3, false));
    const BigramBackcopy nob(16, 32, 3, 5, false);
    CHECK(nob.sequence(0).size() == 33);
    CHECK(nob.sequence(0)[0] != nob.bos());
}

TEST_CASE("Zipf-unigram: [BOS] then i.i.d. tokens with p(i) ∝ (i+1)^-s", "[train][data]") {
    const ZipfUnigram z(8, 200, 9, 1.2);
    double sum = 0;
    for (double p : z.probabilities()) sum += p;
    CHECK(sum == Approx(1.0).epsilon(1e-12));
    CHECK(z.probabilities()[0] / z.probabilities()[1] == Approx(std::pow(2.0, 1.2)).epsilon(1e-12));
    std::vector<double> count(8, 0.0);
    double n = 0;
    for (std::uint64_t i = 0; i < 100; ++i) {
        const auto s = z.sequence(i);
        CHECK(s[0] == 8);
        for (std::size_t t = 1; t < s.size(); ++t) { REQUIRE(s[t] < 8); count[s[t]] += 1; n += 1; }
    }
    for (int j = 0; j < 8; ++j) {
        const double p = z.probabilities()[j], sd = std::sqrt(p * (1 - p) / n);
        CHECK(std::abs(count[j] / n - p) < 5 * sd);
    }
}

TEST_CASE("text corpus: windows are slices of the file, split by block, bad files rejected", "[train][data]") {
    const auto dir = std::filesystem::temp_directory_path() / "sinkscope_test_corpus";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "tokens.bin").string();
    const std::int64_t n = 3 * TextCorpus::kBlock + 1000;
    {
        std::ofstream f(path, std::ios::binary);
        for (std::int64_t i = 0; i < n; ++i) { const std::uint16_t v = std::uint16_t(i % 1000); f.write(reinterpret_cast<const char*>(&v), 2); }
    }
    const TextCorpus c(path, 1001, 16, 4, 1000);
    CHECK(c.n_tokens() == n);
    for (std::uint64_t i = 0; i < 50; ++i) {
        for (bool val : {false, true}) {
            const auto s = c.sequence(i, val);
            REQUIRE(s.size() == 17);
            CHECK(s[0] == 1000);
            for (std::size_t t = 2; t < s.size(); ++t) CHECK(s[t] == (s[t - 1] + 1) % 1000);
        }
    }
    CHECK(c.sequence(5) == TextCorpus(path, 1001, 16, 4, 1000).sequence(5));
    try { (void)TextCorpus(path, 10, 16, 4).sequence(0); FAIL("expected an out-of-vocabulary error"); }  // every window holds ids >= 10
    catch (const Error& e) { CHECK(std::string(e.what()).find("outside the vocabulary") != std::string::npos); }
    {
        std::ofstream f(path, std::ios::binary | std::ios::app);
        f.put('x');
    }
    CHECK_THROWS_WITH(TextCorpus(path, 1001, 16, 4), Catch::Contains("odd number of bytes"));
    std::filesystem::remove_all(dir);
}

TEST_CASE("text corpus: a held-out file gives every validation window and no training window", "[train][data]") {
    const auto dir = std::filesystem::temp_directory_path() / "sinkscope_test_heldout";
    std::filesystem::create_directories(dir);
    const std::string train = (dir / "train.u16").string(), heldout = (dir / "heldout.u16").string(), tiny = (dir / "tiny.u16").string();
    auto write = [](const std::string& path, std::int64_t n, std::uint16_t base) {
        std::ofstream f(path, std::ios::binary);
        for (std::int64_t i = 0; i < n; ++i) { const std::uint16_t v = std::uint16_t(base + i % 1000); f.write(reinterpret_cast<const char*>(&v), 2); }
    };
    write(train, 2 * TextCorpus::kBlock, 0);   // ids 0..999
    write(heldout, 3000, 2000);                // ids 2000..2999: a window from here can only be validation
    write(tiny, 10, 2000);
    const TextCorpus c(train, 3000, 16, 4, -1, heldout);
    for (std::uint64_t i = 0; i < 200; ++i) {
        for (const auto t : c.sequence(i, false)) CHECK(t < 1000);
        for (const auto t : c.sequence(i, true)) CHECK(t >= 2000);
    }
    CHECK(c.describe().find("held out") != std::string::npos);
    // Without the held-out file the same training file validates on its own blocks (ids < 1000).
    for (const auto t : TextCorpus(train, 3000, 16, 4).sequence(0, true)) CHECK(t < 1000);
    CHECK_THROWS_WITH(TextCorpus(train, 3000, 16, 4, -1, tiny), Catch::Contains("no held-out block") && Catch::Contains(tiny));
    CHECK_THROWS_WITH(TextCorpus(train, 3000, 16, 4, -1, (dir / "missing.u16").string()), Catch::Contains("cannot open"));
    std::filesystem::remove_all(dir);
}

TEST_CASE("Bigram-Backcopy: Bayes-optimal loss is 0 after triggers and the bigram surprise elsewhere", "[train][data]") {
    const BigramBackcopy bb(12, 40, 2, 11);
    const auto s = bb.sequence(4);
    double start_sum = 0;
    for (std::int32_t i = 0; i < 12; ++i) start_sum += bb.is_trigger(i) ? 0.0 : bb.stationary()[i];
    CHECK(bb.bayes_loss(s, 0) == Approx(-std::log(bb.stationary()[s[1]] / start_sum)).epsilon(1e-12));
    for (std::size_t t = 1; t + 1 < s.size(); ++t) {
        if (bb.is_trigger(s[t])) CHECK(bb.bayes_loss(s, t) == 0.0);
        else CHECK(bb.bayes_loss(s, t) == Approx(-std::log(bb.transition()[s[t]][s[t + 1]])).epsilon(1e-12));
    }
}
