// Training data: synthetic tasks that grow attention sinks at CPU scale, and a streamed text corpus.
//
// Every source draws sequence i of a stream from its own generator seeded by stream_seed(seed, i)
// (random.hpp), so a batch depends only on (seed, step) — a resumed run draws exactly the batches the
// uninterrupted run would have, sequences can be drawn in parallel, and the validation stream (its own
// seed) never overlaps the training stream. A sequence has T + 1 tokens (inputs [0, T), targets [1, T]).
//
// Bigram-Backcopy (Guo et al. 2024, "Active-Dormant Attention Heads", the BB task): tokens 0..N−1 with
// a bigram transition matrix P and k "trigger" tokens (the k most frequent under P's stationary law).
//   x₀ = [BOS] (id N);  x₁ ~ stationary law without the triggers;
//   x_{t+1} = x_{t−1}          if x_t is a trigger   (copy the token *before* the trigger: needs attention)
//   x_{t+1} ~ P(· | x_t)       otherwise             (a bigram: needs no attention — the head goes dormant
//                                                      and dumps its attention on [BOS]: a sink)
// Guo et al. take P from character bigrams of a text corpus; here P's rows are Dirichlet(α) draws from
// the task seed (α = 0.2 gives peaked, text-like rows). Without BOS the sequence starts at x₁.
//
// [BOS] + Zipf-unigram: x₀ = [BOS], x₁…x_T i.i.d. with p(i) ∝ (i + 1)^(−s): the best predictor ignores the
// context, so every head is free to become a sink.
//
// TextCorpus: a flat file of little-endian uint16 token ids (written by tools/train's --prepare-text or
// any tokenizer), read window by window with pread-style seeks (never loaded whole). Split: the file is
// cut into blocks of 8 Ki tokens and block b belongs to validation iff splitmix64(b ⊕ salt) mod 20 = 0
// (about 5 %, the same for every run seed; no window straddles two blocks, so none mixes the splits). A window is drawn uniformly among the windows that fit in one block of the right split.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/train/random.hpp"

namespace sinkscope::train {

class DataSource {
public:
    virtual ~DataSource() = default;
    // Sequence `index` of the training stream (validation = false) or of the validation stream: T + 1 tokens.
    virtual std::vector<std::int32_t> sequence(std::uint64_t index, bool validation = false) const = 0;
    virtual std::int64_t vocab_size() const = 0;   // model vocabulary needed (BOS included)
    virtual std::int64_t seq_len() const = 0;      // T (inputs per sequence)
    virtual std::string describe() const = 0;
};

class BigramBackcopy : public DataSource {
public:
    // n_tokens: ordinary tokens N (the vocabulary is N + 1 with BOS = N); T inputs per sequence.
    BigramBackcopy(std::int64_t n_tokens, std::int64_t T, std::int64_t n_triggers, std::uint64_t seed,
                   bool bos = true, double dirichlet_alpha = 0.2)
        : N_(n_tokens), T_(T), k_(n_triggers), seed_(seed), bos_(bos), alpha_(dirichlet_alpha) {
        require(N_ >= 2, "bigram-backcopy: need at least 2 ordinary tokens, got " + std::to_string(N_));
        require(k_ >= 1 && k_ < N_, "bigram-backcopy: the number of triggers must lie in [1, N), got " + std::to_string(k_));
        require(T_ >= 2, "bigram-backcopy: sequences need T >= 2");
        require(alpha_ > 0, "bigram-backcopy: the Dirichlet concentration must be > 0");
        Rng rng(stream_seed(seed_, 0xB16B00B5ULL));
        P_.resize(N_);
        cdf_.resize(N_);
        for (std::int64_t i = 0; i < N_; ++i) { P_[i] = rng.dirichlet(std::size_t(N_), alpha_); cdf_[i] = cumulative(P_[i]); }
        // Stationary law π = πP by power iteration from uniform (rows are dense, so the chain mixes).
        std::vector<double> pi(N_, 1.0 / double(N_)), next(N_);
        for (int it = 0; it < 500; ++it) {
            std::fill(next.begin(), next.end(), 0.0);
            for (std::int64_t i = 0; i < N_; ++i) for (std::int64_t j = 0; j < N_; ++j) next[j] += pi[i] * P_[i][j];
            pi.swap(next);
        }
        stationary_ = pi;
        std::vector<std::int64_t> order(N_);
        for (std::int64_t i = 0; i < N_; ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) { return pi[a] > pi[b]; });
        is_trigger_.assign(N_, false);
        for (std::int64_t i = 0; i < k_; ++i) { triggers_.push_back(std::int32_t(order[i])); is_trigger_[order[i]] = true; }
        start_ = pi;
        for (auto t : triggers_) start_[t] = 0.0;
        start_cdf_ = cumulative(start_);
        for (auto& p : start_) p /= start_cdf_.back();
    }

    std::vector<std::int32_t> sequence(std::uint64_t index, bool validation = false) const override {
        Rng rng(stream_seed(validation ? ~seed_ : seed_, index));
        std::vector<std::int32_t> s;
        s.reserve(T_ + 1);
        if (bos_) s.push_back(bos());
        s.push_back(std::int32_t(rng.categorical(start_cdf_)));
        while (std::int64_t(s.size()) < T_ + 1) {
            const std::int32_t x = s.back();
            if (is_trigger_[x] && s.size() >= 2) s.push_back(s[s.size() - 2]);
            else s.push_back(std::int32_t(rng.categorical(cdf_[x])));
        }
        return s;
    }
    std::int64_t vocab_size() const override { return N_ + 1; }
    std::int64_t seq_len() const override { return T_; }
    std::string describe() const override {
        return "bigram-backcopy(N=" + std::to_string(N_) + ", T=" + std::to_string(T_) + ", triggers=" +
               std::to_string(k_) + ", dirichlet=" + std::to_string(alpha_) + (bos_ ? ", bos" : ", no bos") + ")";
    }

    std::int32_t bos() const { return std::int32_t(N_); }
    bool is_trigger(std::int32_t x) const { return x >= 0 && x < N_ && is_trigger_[x]; }
    const std::vector<std::int32_t>& triggers() const { return triggers_; }
    const std::vector<double>& stationary() const { return stationary_; }
    const std::vector<std::vector<double>>& transition() const { return P_; }

    // The Bayes-optimal loss of predicting s[t + 1] from s[0..t] (nats): 0 after a trigger (the copy is
    // certain), −log P(s[t+1] | s[t]) after an ordinary token, −log start(s[1]) after [BOS].
    double bayes_loss(const std::vector<std::int32_t>& s, std::size_t t) const {
        const std::int32_t x = s[t], y = s[t + 1];
        if (x == bos()) return -std::log(start_[y]);
        if (is_trigger(x) && t >= 1) return 0.0;
        return -std::log(P_[x][y]);
    }

private:
    std::int64_t N_, T_, k_;
    std::uint64_t seed_;
    bool bos_;
    double alpha_;
    std::vector<std::vector<double>> P_, cdf_;
    std::vector<double> stationary_, start_, start_cdf_;
    std::vector<std::int32_t> triggers_;
    std::vector<bool> is_trigger_;
};

class ZipfUnigram : public DataSource {
public:
    ZipfUnigram(std::int64_t n_tokens, std::int64_t T, std::uint64_t seed, double exponent = 1.0, bool bos = true)
        : N_(n_tokens), T_(T), seed_(seed), s_(exponent), bos_(bos) {
        require(N_ >= 2, "zipf: need at least 2 ordinary tokens");
        require(T_ >= 1, "zipf: sequences need T >= 1");
        require(s_ >= 0, "zipf: the exponent must be >= 0");
        std::vector<double> w(N_);
        for (std::int64_t i = 0; i < N_; ++i) w[i] = std::pow(double(i + 1), -s_);
        cdf_ = cumulative(w);
        p_.resize(N_);
        for (std::int64_t i = 0; i < N_; ++i) p_[i] = w[i] / cdf_.back();
    }
    std::vector<std::int32_t> sequence(std::uint64_t index, bool validation = false) const override {
        Rng rng(stream_seed(validation ? ~seed_ : seed_, index));
        std::vector<std::int32_t> s;
        s.reserve(T_ + 1);
        if (bos_) s.push_back(std::int32_t(N_));
        while (std::int64_t(s.size()) < T_ + 1) s.push_back(std::int32_t(rng.categorical(cdf_)));
        return s;
    }
    std::int64_t vocab_size() const override { return N_ + 1; }
    std::int64_t seq_len() const override { return T_; }
    std::string describe() const override {
        return "zipf(N=" + std::to_string(N_) + ", T=" + std::to_string(T_) + ", s=" + std::to_string(s_) + (bos_ ? ", bos" : ", no bos") + ")";
    }
    const std::vector<double>& probabilities() const { return p_; }
    // Entropy of the unigram law in nats: the best achievable loss on the non-BOS targets.
    double entropy() const {
        double h = 0;
        for (double p : p_) if (p > 0) h -= p * std::log(p);
        return h;
    }

private:
    std::int64_t N_, T_;
    std::uint64_t seed_;
    double s_;
    bool bos_;
    std::vector<double> cdf_, p_;
};

class TextCorpus : public DataSource {
public:
    static constexpr std::int64_t kBlock = 8192;

    // path: uint16 little-endian token ids; vocab: the tokenizer's vocabulary (BOS included if used);
    // bos >= 0: every window is preceded by this token (then a window holds T real tokens).
    // heldout: a second token file of documents kept out of `path` (scripts/make_english_corpus.sh); when
    // given, every block of `path` trains and the validation windows come from `heldout` alone; when
    // empty, one block in twenty of `path` validates (is_validation_block).
    TextCorpus(std::string path, std::int64_t vocab, std::int64_t T, std::uint64_t seed, std::int32_t bos = -1,
               std::string heldout = "")
        : path_(std::move(path)), heldout_(std::move(heldout)), vocab_(vocab), T_(T), seed_(seed), bos_(bos) {
        const std::int64_t need = T_ + 1 - (bos_ >= 0 ? 1 : 0);
        auto blocks_of = [&](const std::string& file, const std::function<bool(std::int64_t)>& validation) {
            std::ifstream f(file, std::ios::binary | std::ios::ate);
            require(bool(f), "text corpus: cannot open the token file", {file, "", {}});
            const std::int64_t bytes = std::int64_t(f.tellg());
            require(bytes % 2 == 0, "text corpus: the token file has an odd number of bytes (not uint16 tokens)", {file, "", {}});
            const std::int64_t n = bytes / 2, n_blocks = (n + kBlock - 1) / kBlock;
            for (std::int64_t b = 0; b < n_blocks; ++b) {
                const std::int64_t len = std::min(kBlock, n - b * kBlock);
                if (len < need) continue;
                (validation(b) ? val_ : train_).push_back({b * kBlock, len - need + 1});
            }
            return n;
        };
        if (heldout_.empty()) {
            n_tokens_ = blocks_of(path_, is_validation_block);
        } else {
            n_tokens_ = blocks_of(path_, [](std::int64_t) { return false; });
            n_heldout_ = blocks_of(heldout_, [](std::int64_t) { return true; });
            require(!val_.empty(), "text corpus: no held-out block holds a window of " + std::to_string(need) + " tokens",
                    {heldout_, "", {}});
        }
        require(!train_.empty(), "text corpus: no training block holds a window of " + std::to_string(need) + " tokens",
                {path_, "", {}});
        if (val_.empty()) val_ = train_;  // tiny corpora: validate on training text (said in describe())
        shared_val_ = heldout_.empty() && val_.size() == train_.size() && val_.front().start == train_.front().start;
        for (const auto* list : {&train_, &val_}) {
            auto& cum = list == &train_ ? train_cum_ : val_cum_;
            double s = 0;
            for (const auto& b : *list) { s += double(b.windows); cum.push_back(s); }
        }
    }

    std::vector<std::int32_t> sequence(std::uint64_t index, bool validation = false) const override {
        Rng rng(stream_seed(validation ? ~seed_ : seed_, index));
        const auto& blocks = validation ? val_ : train_;
        const auto& cum = validation ? val_cum_ : train_cum_;
        const std::size_t bi = rng.categorical(cum);
        const std::int64_t start = blocks[bi].start + std::int64_t(rng.below(std::uint64_t(blocks[bi].windows)));
        const std::int64_t need = T_ + 1 - (bos_ >= 0 ? 1 : 0);
        const std::string& file = validation && !heldout_.empty() ? heldout_ : path_;
        std::vector<unsigned char> raw(std::size_t(need) * 2);
        std::ifstream f(file, std::ios::binary);
        f.seekg(start * 2);
        f.read(reinterpret_cast<char*>(raw.data()), need * 2);
        require(bool(f), "text corpus: short read at token " + std::to_string(start), {file, "", std::uint64_t(start * 2)});
        std::vector<std::int32_t> s;
        s.reserve(T_ + 1);
        if (bos_ >= 0) s.push_back(bos_);
        for (std::int64_t i = 0; i < need; ++i) {
            const std::int32_t tok = std::int32_t(raw[2 * i]) | std::int32_t(raw[2 * i + 1]) << 8;  // little-endian
            require(tok < vocab_, "text corpus: token id " + std::to_string(tok) + " is outside the vocabulary " +
                                      std::to_string(vocab_), {file, "", std::uint64_t((start + i) * 2)});
            s.push_back(tok);
        }
        return s;
    }
    std::int64_t vocab_size() const override { return vocab_; }
    std::int64_t seq_len() const override { return T_; }
    std::string describe() const override {
        if (!heldout_.empty())
            return "text(" + path_ + ", " + std::to_string(n_tokens_) + " tokens in " + std::to_string(train_.size()) +
                   " train blocks; held out: " + heldout_ + ", " + std::to_string(n_heldout_) + " tokens in " +
                   std::to_string(val_.size()) + " blocks of " + std::to_string(kBlock) + ")";
        return "text(" + path_ + ", " + std::to_string(n_tokens_) + " tokens, " + std::to_string(train_.size()) + " train / " +
               (shared_val_ ? std::string("no separate validation") : std::to_string(val_.size()) + " validation") +
               " blocks of " + std::to_string(kBlock) + ")";
    }
    std::int64_t n_tokens() const { return n_tokens_; }
    // The split is a property of the file, not of the run: the same blocks validate for every seed.
    static bool is_validation_block(std::int64_t b) { return splitmix64(std::uint64_t(b) ^ 0x5eed5a1175ULL) % 20 == 0; }

private:
    struct Block { std::int64_t start, windows; };
    std::string path_, heldout_;
    std::int64_t vocab_, T_;
    std::uint64_t seed_;
    std::int32_t bos_;
    std::int64_t n_tokens_ = 0, n_heldout_ = 0;
    std::vector<Block> train_, val_;
    std::vector<double> train_cum_, val_cum_;
    bool shared_val_ = false;
};

}  // namespace sinkscope::train
