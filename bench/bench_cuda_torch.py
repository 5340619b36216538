#!/usr/bin/env python3
"""PyTorch peer of bench/bench_cuda.cu on the same GPU, float32, TF32 off (PyTorch's default for matmul).

  forward  Hugging Face LlamaForCausalLM with the SmolLM2-135M Config (random weights: the timing does not
           depend on them), eager attention, output_hidden_states=True (every layer's residual stream, as
           bench_cuda's capture run), T tokens, batch 1. tokens/s of the median call.
  train    the training issue's benchmark model of bench/bench_train_torch.py (d 256, 4 layers, 4 heads,
           SwiGLU 688, T 256, batch 8, vocab 512; RMSNorm pre-norm, RoPE half-split, tied head; bench/torch_llama.py) with AdamW
           (decay on matrices), clipping; attention either F.scaled_dot_product_attention ("sdpa") or
           written out ("eager": scores, mask, softmax, matmul). tokens/s of the median step.
Prints one JSON line per measurement.
    usage: bench_cuda_torch.py CONFIG.json [tokens=512] [repeats=10] [what=all|forward|train]
"""
import json, sys, time

import torch

from torch_llama import B, T, V, model_and_optimizer, train_step

cfg_path = sys.argv[1]
T_fwd = int(sys.argv[2]) if len(sys.argv) > 2 else 512
repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 10
what = sys.argv[4] if len(sys.argv) > 4 else "all"
if not torch.cuda.is_available():
    print(json.dumps({"bench": "skipped", "impl": "pytorch", "reason": "torch.cuda.is_available() is False"}))
    sys.exit(0)
dev = torch.device("cuda")
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def median_time(fn, n):
    ts = []
    for r in range(n + 2):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        if r >= 2:
            ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2]


def forward_bench():
    from transformers import LlamaConfig, LlamaForCausalLM
    c = json.load(open(cfg_path))
    hf = LlamaConfig(vocab_size=c["vocab_size"], hidden_size=c["d_model"], intermediate_size=c["d_ff"],
                     num_hidden_layers=c["n_layers"], num_attention_heads=c["n_heads"],
                     num_key_value_heads=c["n_kv_heads"], head_dim=c["head_dim"], rms_norm_eps=c["norm_eps"],
                     rope_theta=c["rope_base"], max_position_embeddings=c["context_length"],
                     tie_word_embeddings=c["tied_embeddings"], attn_implementation="eager")
    torch.manual_seed(0)
    model = LlamaForCausalLM(hf).to(dev, torch.float32).eval()
    ids = (torch.arange(T_fwd, device=dev) * 2654435761 + 1) % c["vocab_size"]
    x = ids[None, :]
    with torch.no_grad():
        plain = median_time(lambda: model(x), repeats)
        host_logits = median_time(lambda: model(x).logits.cpu(), repeats)  # logits to the host, as cuda::forward returns them
        def capture():
            out = model(x, output_hidden_states=True)
            return [h.cpu() for h in out.hidden_states[1:]]  # to the host, as bench_cuda's capture hooks
        cap = median_time(capture, repeats)
    print(json.dumps({"bench": "forward", "impl": "pytorch-transformers", "torch": torch.__version__,
                      "gpu": torch.cuda.get_device_name(), "tokens": T_fwd, "s_plain": plain,
                      "tokens_per_s_plain": T_fwd / plain, "s_host_logits": host_logits,
                      "tokens_per_s_host_logits": T_fwd / host_logits, "s_capture_resid_post": cap,
                      "tokens_per_s_capture": T_fwd / cap}))


def train_bench(attn):
    torch.manual_seed(0)
    model, opt = model_and_optimizer(attn, dev)
    gen = torch.Generator(device=dev).manual_seed(1)
    state = {}

    def step():
        batch = torch.randint(0, V, (B, T + 1), generator=gen, device=dev)
        state["loss"] = train_step(model, opt, batch)

    s = median_time(step, repeats)
    print(json.dumps({"bench": "train", "impl": "pytorch-" + attn, "torch": torch.__version__,
                      "gpu": torch.cuda.get_device_name(), "tokens_per_step": T * B, "step_s": s,
                      "tokens_per_s": T * B / s, "last_loss": state["loss"].item()}))


if what in ("all", "forward"):
    forward_bench()
if what in ("all", "train"):
    train_bench("sdpa")
    train_bench("eager")
