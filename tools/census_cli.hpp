// `sinkscope census`: the per-layer statistics of many checkpoints into one folder, one record each
// (analysis/census.hpp), and `census --merge DIR`, the table of a finished census.
//
//   sinkscope census CKPT… [--list FILE] --out DIR (--tokens-file F | --text-file F | --text T) [--shard I/N] [--plan]
//                    [--rules none|smoke|full] [--experiments PATH] [--seed S]
//   sinkscope census --merge DIR
//
// DIR/checkpoints/<name>.json   one record per checkpoint, written to a temporary file and renamed, so
//                               a killed task leaves finished records or none; a rerun skips them
// DIR/rules/<name>/<experiment>/  each claim experiment's output on the checkpoint (meta.json, figures),
//                               and <experiment>.log beside it (its stderr); the verdicts are in the record
// DIR/failed.json               checkpoints that failed and their errors (failed.I-of-N.json for --shard I/N)
// DIR/table.json                the merged table (--merge); scripts/census_figures.py draws it
// Exit status: 0, 1 when a checkpoint failed (the others are done), 2 for bad input (nothing done).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace sinkscope::cli {

struct CensusOptions {
    std::vector<std::string> checkpoints;  // positional
    std::string list_file;                 // one checkpoint per line ('#' starts a comment)
    std::string out;                       // the census folder
    std::string merge_dir;                 // --merge DIR: merge instead of running
    std::string shard;                     // I/N over the checkpoints (round robin: the k-th goes to task k mod N)
    bool plan = false;                     // print each checkpoint's size and memory, run nothing
    std::string text_file, text, tokens_file;
    std::int64_t seq_len = 64, max_samples = 0, batch = 8;
    double eps = 0.3;
    bool bos = false;
    std::string weights = "auto", compute = "exact";
    std::string rules = "full";  // the claim experiments on each checkpoint: none, smoke (test sizes) or full (their defaults)
    std::string experiments;     // the sinkscope-experiments executable ("": beside this one, or in ../experiments/)
    unsigned seed = 0;           // the experiments' --seed
};

// Registers the subcommand and its options (bound to `o`).
CLI::App* add_census_subcommand(CLI::App& app, CensusOptions& o);

// Runs it; bad input is a sinkscope::Error (the caller prints it and exits 2).
int run_census(const CensusOptions& o);

}  // namespace sinkscope::cli
