// sinkscope-experiments: every experiment of the two papers in one executable (experiments/CMakeLists.txt
// says why). The experiment is the name it is called as — build/experiments/a1_bos_ablation is a symlink
// to this executable — or the first argument: `sinkscope-experiments a1_bos_ablation --smoke`.
#include <cstring>
#include <iostream>
#include <string>
#include <utility>

#include "experiments_table.inc"

namespace {

const char* base_name(const char* path) {
    const char* slash = std::strrchr(path, '/');
    return slash ? slash + 1 : path;
}

ExperimentMain find(const char* name) {
    for (const auto& [n, fn] : kExperiments)
        if (std::strcmp(n, name) == 0) return fn;
    return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
    if (ExperimentMain fn = find(base_name(argv[0]))) return fn(argc, argv);
    if (argc > 1)
        if (ExperimentMain fn = find(argv[1])) return fn(argc - 1, argv + 1);
    std::cerr << "usage: sinkscope-experiments EXPERIMENT [options], or call it by an experiment's name "
                 "(build/experiments/<name>). EXPERIMENT is one of:\n";
    for (const auto& entry : kExperiments) std::cerr << "  " << entry.first << "\n";
    return 2;
}
