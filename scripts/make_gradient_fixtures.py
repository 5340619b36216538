#!/usr/bin/env python3
"""Reference gradients for the backward-pass tests, made by PyTorch autograd (the peer).

For every random-weight family fixture in tests/fixtures/model/random_<kind>/ (written by
make_model_fixtures.py), loads the saved model with transformers in float64 (eager attention) and takes
the gradient of one scalar, the mean next-token cross-entropy over the first T positions of the
fixture's tokens:

    L = (1/T) Σ_{t<T} −log softmax(logits_t)[tokens[t + 1]]

(logits after the model's own soft cap, as transformers returns them). Writes into
random_<kind>/grad/:
  tokens.npy             int32 (T + 1): the input is tokens[:T], the targets tokens[1:]
  loss.npy               float64 (1)
  dresid_pre_L{l}.npy    float64 (T × d): ∂L/∂(the input of block l), l < n_layers; block 0's input is
                         the embedding (scaled, for Gemma) plus learned positions (GPT-2)
  dembed.npy             float32 (vocab × d): ∂L/∂(the token embedding matrix), the tied output head
                         included where the model ties it
  dparams.json           ∂L/∂(every parameter), sampled: per parameter (transformers' in-memory name) its
                         shape, max |gradient| and the entries at 8 seeded flat indices and at the argmax,
                         as [flat index, value] in row-major order
  meta.json              versions, T

Regenerate (needs torch, transformers, safetensors, numpy: scripts/pyenv.sh makes .venv):
    .venv/bin/python scripts/make_gradient_fixtures.py [--params-only] [KIND …]
--params-only writes dparams.json alone and leaves the other files as they are.
"""
import json
import pathlib
import sys

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "model"
KINDS = ["llama", "mistral", "qwen2", "qwen3", "gpt2", "gemma2", "gemma3", "phi3", "olmo2", "gpt_neox", "mixtral",
         "olmoe", "llama31"]
T = 12


def sampled_parameter_gradients(model):
    """{name: {shape, max_abs, entries}} for every parameter with a gradient (see the file comment)."""
    out = {}
    for name, p in model.named_parameters():
        if p.grad is None:
            continue
        g = p.grad.detach().numpy().astype(np.float64).reshape(-1)
        rng = np.random.default_rng(len(out))
        picks = sorted(set(rng.integers(0, g.size, size=min(8, g.size)).tolist()) | {int(np.argmax(np.abs(g)))})
        out[name] = {"shape": list(p.shape), "max_abs": float(np.max(np.abs(g))),
                     "entries": [[int(i), float(g[i])] for i in picks]}
    return out


def gradients(kind, params_only=False):
    src = FIXTURES / f"random_{kind}"
    # eager attention and experts: the grouped expert kernels take no float64
    model = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float64, attn_implementation="eager",
                                                 experts_implementation="eager")
    model.eval()  # no dropout; gradients are still recorded
    tokens = np.load(src / "tokens.npy").astype(np.int64)[: T + 1]
    ids = torch.tensor([tokens[:T]])
    out = model(ids, output_hidden_states=True)
    # hidden_states[l] is the tensor block l reads (l < n_layers); the last entry has the final norm applied.
    hidden = out.hidden_states[: model.config.num_hidden_layers]
    for h in hidden:
        h.retain_grad()
    logits = out.logits[0]
    loss = torch.nn.functional.cross_entropy(logits, torch.tensor(tokens[1:]), reduction="mean")
    loss.backward()
    d = src / "grad"
    d.mkdir(exist_ok=True)
    params = sampled_parameter_gradients(model)
    (d / "dparams.json").write_text(json.dumps({"transformers": transformers.__version__, "torch": torch.__version__,
                                                "parameters": params}, indent=0) + "\n")
    if params_only:
        print(f"random_{kind}: loss {loss.item():.6f}, wrote {d / 'dparams.json'} ({len(params)} parameters)")
        return
    np.save(d / "tokens.npy", tokens.astype(np.int32))
    np.save(d / "loss.npy", np.array([loss.item()], dtype=np.float64))
    for l, h in enumerate(hidden):
        np.save(d / f"dresid_pre_L{l}.npy", h.grad[0].numpy().astype(np.float64))
    np.save(d / "dembed.npy", model.get_input_embeddings().weight.grad.numpy().astype(np.float32))
    (d / "meta.json").write_text(json.dumps({"T": T, "torch": torch.__version__, "transformers": transformers.__version__,
                                             "loss": "mean next-token cross-entropy over tokens[:T]"}, indent=1) + "\n")
    print(f"random_{kind}: loss {loss.item():.6f}, wrote {d}")


def main():
    torch.use_deterministic_algorithms(True)
    args = sys.argv[1:]
    params_only = "--params-only" in args
    kinds = [a for a in args if a != "--params-only"]
    for kind in kinds or KINDS:
        gradients(kind, params_only)


if __name__ == "__main__":
    main()
