#!/usr/bin/env python3
"""Reference fixtures for the training tests, made by PyTorch autograd (the peer).

Regenerate:
    "$(scripts/pyenv.sh)" scripts/make_train_fixtures.py        (any Python with torch, safetensors, numpy)

Writes tests/fixtures/train/baseline_{tied,untied}.safetensors, each a tiny Llama-style model
(RMSNorm pre-norm, SwiGLU, RoPE half-split, GQA 4 heads over 2 KV heads) written independently here in
PyTorch, in float64:
  param.<name>   the initial weights, under sinkscope's canonical names (model::visit_parameters)
  tokens         I32 (steps, batch, T + 1): the batch of every optimizer step (the same batch each step);
                 step 0 is the batch of the loss/gradient check
  grad.<name>    ∂loss/∂param of the step-0 batch at the initial weights (autograd)
  loss           F64 (1): the step-0 loss (mean cross-entropy over the counted positions)
  loss_curve     F64 (steps): the loss of each of 10 AdamW steps (before its update), with the warmup +
                 cosine schedule, global-norm clipping and the decay groups of train/optimizer.hpp
  final.<name>   the weights after the 10 steps
Metadata (safetensors __metadata__, all strings): magic = "sinkscope-train-fixture", version = "1",
config (JSON, sinkscope Config field names), loss_mask (JSON), optimizer (JSON), torch version.
"""
import json, math, pathlib
import torch
from safetensors.torch import save_file

MAGIC, VERSION = "sinkscope-train-fixture", "1"
ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "train"
torch.set_default_dtype(torch.float64)

CFG = dict(architecture="sinkscope", n_layers=2, d_model=16, n_heads=4, n_kv_heads=2, head_dim=4, d_ff=24,
           vocab_size=32, context_length=16, norm="rmsnorm", norm_placement="pre", norm_eps=1e-5, qk_norm=False,
           ffn="swiglu", activation="silu", attention="softmax", gate="none", sliding_window=0,
           positions="rope", rope_layout="half_split", rope_base=10000.0, tied_embeddings=True)
OPT = dict(lr=1e-2, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1, grad_clip=1.0, warmup_steps=3,
           total_steps=10, min_lr_ratio=0.1)
STEPS, BATCH, T = 10, 2, 8


def make_params(cfg, gen):
    d, H, G, dh, ff, V, L = (cfg[k] for k in ("d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff", "vocab_size", "n_layers"))
    r = lambda *shape, s=0.3: (torch.randn(*shape, generator=gen) * s)
    gain = lambda: 1.0 + 0.2 * torch.randn(d, generator=gen)
    p = {"tok_embed": r(V, d, s=0.5)}
    for l in range(L):
        b = f"blocks.{l}."
        p[b + "ln1.weight"] = gain()
        p[b + "attn.W_Q"] = r(H * dh, d); p[b + "attn.W_K"] = r(G * dh, d)
        p[b + "attn.W_V"] = r(G * dh, d); p[b + "attn.W_O"] = r(d, H * dh)
        p[b + "ln2.weight"] = gain()
        p[b + "mlp.W_gate"] = r(ff, d); p[b + "mlp.W_in"] = r(ff, d); p[b + "mlp.W_out"] = r(d, ff)
    p["ln_final.weight"] = gain()
    if not cfg["tied_embeddings"]:
        p["unembed"] = r(V, d)
    return p


def rmsnorm(x, g, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g


def rope(x, base):  # x (B, heads, T, dh), half-split pairs (i, i + dh/2), as Hugging Face's rotate_half
    dh = x.shape[-1]
    inv = base ** (-torch.arange(0, dh, 2, dtype=torch.float64) / dh)
    ang = torch.arange(x.shape[2], dtype=torch.float64)[:, None] * inv[None, :]
    cos, sin = torch.cat([ang.cos(), ang.cos()], -1), torch.cat([ang.sin(), ang.sin()], -1)
    x1, x2 = x[..., : dh // 2], x[..., dh // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


def model_logits(cfg, p, tokens):  # tokens (B, T) → logits (B, T, V)
    d, H, G, dh, eps = cfg["d_model"], cfg["n_heads"], cfg["n_kv_heads"], cfg["head_dim"], cfg["norm_eps"]
    B, n = tokens.shape
    x = p["tok_embed"][tokens]
    mask = torch.full((n, n), float("-inf")).triu(1)
    for l in range(cfg["n_layers"]):
        b = f"blocks.{l}."
        xn = rmsnorm(x, p[b + "ln1.weight"], eps)
        q = (xn @ p[b + "attn.W_Q"].T).view(B, n, H, dh).transpose(1, 2)
        k = (xn @ p[b + "attn.W_K"].T).view(B, n, G, dh).transpose(1, 2)
        v = (xn @ p[b + "attn.W_V"].T).view(B, n, G, dh).transpose(1, 2)
        q, k = rope(q, cfg["rope_base"]), rope(k, cfg["rope_base"])
        k, v = k.repeat_interleave(H // G, dim=1), v.repeat_interleave(H // G, dim=1)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh) + mask, dim=-1)
        z = (att @ v).transpose(1, 2).reshape(B, n, H * dh)
        x = x + z @ p[b + "attn.W_O"].T
        xn = rmsnorm(x, p[b + "ln2.weight"], eps)
        h = torch.nn.functional.silu(xn @ p[b + "mlp.W_gate"].T) * (xn @ p[b + "mlp.W_in"].T)
        x = x + h @ p[b + "mlp.W_out"].T
    xf = rmsnorm(x, p["ln_final.weight"], eps)
    head = p["unembed"] if "unembed" in p else p["tok_embed"]
    return xf @ head.T


def loss_fn(cfg, p, batch, mask):  # batch (B, T + 1); mean over counted rows of every sequence
    logits = model_logits(cfg, p, batch[:, :-1])
    n = logits.shape[1]
    end = n if mask["end"] < 0 else min(mask["end"], n)
    rows = [t for t in range(n) if mask["begin"] <= t < end and not (mask["skip_first"] and t == 0)]
    lg, tg = logits[:, rows, :], batch[:, 1:][:, rows]
    return torch.nn.functional.cross_entropy(lg.reshape(-1, lg.shape[-1]), tg.reshape(-1).long())


def lr_at(s):
    o = OPT
    if s < o["warmup_steps"]:
        return o["lr"] * (s + 1) / o["warmup_steps"]
    lo = o["min_lr_ratio"] * o["lr"]
    prog = min(1.0, (s - o["warmup_steps"]) / max(1, o["total_steps"] - o["warmup_steps"]))
    return lo + 0.5 * (o["lr"] - lo) * (1 + math.cos(math.pi * prog))


def make(name, tied, mask, seed):
    cfg = dict(CFG, tied_embeddings=tied)
    gen = torch.Generator().manual_seed(seed)
    p0 = make_params(cfg, gen)
    # Every step sees the same batch (memorising it makes the loss curve fall), stored once per step.
    tokens = torch.randint(0, cfg["vocab_size"], (1, BATCH, T + 1), generator=gen, dtype=torch.int32).repeat(STEPS, 1, 1)

    p = {k: v.clone().requires_grad_(True) for k, v in p0.items()}
    loss = loss_fn(cfg, p, tokens[0], mask)
    loss.backward()
    grads = {k: v.grad.detach().clone() for k, v in p.items()}

    # 10 AdamW steps: matrices decay, vectors (norm gains) do not; LambdaLR follows lr_at; clip_grad_norm_.
    p = {k: v.clone().requires_grad_(True) for k, v in p0.items()}
    decay = [v for k, v in p.items() if v.dim() >= 2]
    no_decay = [v for k, v in p.items() if v.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": OPT["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=OPT["lr"], betas=(OPT["beta1"], OPT["beta2"]), eps=OPT["eps"], foreach=False)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_at(s) / OPT["lr"])
    curve = []
    for s in range(STEPS):
        opt.zero_grad()
        l = loss_fn(cfg, p, tokens[s], mask)
        l.backward()
        torch.nn.utils.clip_grad_norm_(list(p.values()), OPT["grad_clip"])
        opt.step()
        sched.step()
        curve.append(l.item())

    tensors = {"param." + k: v.contiguous() for k, v in p0.items()}
    tensors.update({"grad." + k: v.contiguous() for k, v in grads.items()})
    tensors.update({"final." + k: v.detach().contiguous() for k, v in p.items()})
    tensors["tokens"] = tokens.contiguous()
    tensors["loss"] = torch.tensor([loss.item()])
    tensors["loss_curve"] = torch.tensor(curve)
    meta = {"magic": MAGIC, "version": VERSION, "config": json.dumps(cfg), "loss_mask": json.dumps(mask),
            "optimizer": json.dumps(OPT), "torch": torch.__version__}
    OUT.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(OUT / f"{name}.safetensors"), metadata=meta)
    print(name, "loss", loss.item(), "curve", [round(c, 4) for c in curve])


if __name__ == "__main__":
    make("baseline_tied", True, {"begin": 0, "end": 7, "skip_first": True}, 1234)
    make("baseline_untied", False, {"begin": 0, "end": -1, "skip_first": False}, 4321)
