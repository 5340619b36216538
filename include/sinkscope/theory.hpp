// sinkscope::theory — the analytic claims of papers A and B as functions of weights or captured
// activations (never a model object). Each header's statements, derivations and the tests that check
// them are in theory/<topic>.md.
#pragma once
#include "sinkscope/theory/common.hpp"
#include "sinkscope/theory/cone_model.hpp"              // A3: E||o||^2 = a^2 + (1-a^2) E[sum p^2], ||o||^2 = p^T G p
#include "sinkscope/theory/quadratic_ffn.hpp"           // B2: U_k, ||U_k||_F matrix-free, Lanczos on S_k, SiLU bound
#include "sinkscope/theory/rmsnorm_sparsification.hpp" // B4: RMSNorm bounded / sparse / near-constant
#include "sinkscope/theory/sink_geometry.hpp"           // B5 + Gu et al.: sink mass, sink-key PCA, sink rate
#include "sinkscope/theory/p0_circuit.hpp"              // A2: causal-mask asymmetry, Norm perturbation bound
