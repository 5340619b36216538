"""sinkscope from Python: TransformerLens's run_with_cache and run_with_hooks over sinkscope's C++ forward.

    import sinkscope
    m = sinkscope.load("models/SmolLM2-135M-Instruct.Q4_1.gguf")      # .gguf, HF directory, checkpoint
    ids = m.to_tokens("The quick brown fox.", bos=False)              # numpy int32, (pos,)
    logits, cache = m.run_with_cache(ids, names=["blocks.11.hook_resid_post"])
    cache["blocks.11.hook_resid_post"]                                # numpy float32, (pos, d_model)
    def clamp(x, hook): x[:, 507] = 0.0                               # in place, or return a new array
    logits = m.run_with_hooks(ids, fwd_hooks=[("blocks.10.hook_resid_post", clamp)])
    logits = m.run_with_hooks(ids, fwd_hooks=[sinkscope.self_only_attention(0, queries=[3])])   # C++ interventions
    lens = m.logit_lens(ids, target=" dog")                           # top tokens per layer, the target's rank
    parts = m.dla(ids, target=" dog", contrast=" cat")                # each head's part of a logit difference

A hook is called as TransformerLens calls it, fn(activation, hook): `hook` is a HookPoint, a str (the hook's
name, so hooks written as fn(x, name) work unchanged) with .name and .layer() as TransformerLens's HookPoint.

Shapes are the C++ hook table's (`m.hook_names()`; docs/hooks-and-interventions.md, "Hook points"): 1-D ids run one sequence
(model::forward) and give [pos, ...]; 2-D ids (batch, pos) run model::forward_batch and give [batch, pos, ...]
(patterns [batch, head, query_pos, key_pos]), rows padded on the right to the longest of `lengths`.

Views and copies:
  * logits and cache entries: the C++ buffers themselves, handed to NumPy without a copy (a capsule owns
    them; they live as long as the array). The cache's buffers are the copies the capture hook makes of
    each activation during the forward, as in C++ (model::ActivationCache).
  * the array a hook receives: a view of the live activation inside the forward pass, valid only during
    that call. Edit it in place to change what the forward continues with; do not keep it (copy it).
    A hook that returns an array instead has it copied into the activation.
  * to_tokens: the C++ vector, no copy. ffn_weights and the theory functions' inputs: copies
    (float64 C-order inputs are used as they are).
Errors: sinkscope.Error (a RuntimeError) carries the C++ message, with file, tensor and byte offset
where known. A hook that raises stops the forward; its exception propagates unchanged.
"""
from __future__ import annotations

import json
import os
from typing import Callable, Iterable, Optional, Sequence, Union

import numpy as np

from . import _sinkscope as _C
from ._sinkscope import Error, cone_expected_norm_sq  # noqa: F401  (re-exported)

__version__ = _C.__version__
__all__ = ["Error", "HookPoint", "Model", "load", "zero_ablate_channels", "scale_channels", "scale_heads", "force_pattern",
           "self_only_attention", "attend_only_to", "PatchSite", "patch_site_names", "patch_sites",
           "channel_frobenius_norms", "channel_spectrum", "fit_cone", "cone_expected_norm_sq", "planted"]

NamesFilter = Union[None, str, Sequence[str], Callable[[str], bool]]
Hook = Callable[[np.ndarray, "HookPoint"], Optional[np.ndarray]]


class HookPoint(str):
    """What a hook receives as its second argument: the hook's full name, as a str (so it compares equal to
    "blocks.3.hook_resid_post" and hooks written as fn(x, name) keep working), with TransformerLens's
    HookPoint attributes: .name (the name) and .layer() (the block index, None outside the blocks)."""

    __slots__ = ()

    @property
    def name(self) -> str:
        return str.__str__(self)

    def layer(self) -> Optional[int]:
        parts = self.split(".")
        return int(parts[1]) if len(parts) > 2 and parts[0] == "blocks" else None

    def __repr__(self):
        return f"HookPoint({str.__repr__(self)})"


def _ints(xs) -> list:
    return [] if xs is None else [int(x) for x in np.asarray(xs).ravel()]


class _Intervention:
    """A C++ intervention for `fwd_hooks`: run_with_hooks / run_with_cache register it on the forward's
    C++ hooks, where it runs before every Python hook (at its name, in the order given)."""

    def _register(self, native):
        raise NotImplementedError


class zero_ablate_channels(_Intervention):
    """The C++ intervention model::zero_ablate_channels, for `fwd_hooks`: x[t, c] = 0 for the channels at the
    positions (all positions if None) of a [pos, d] hook. With 2-D ids it indexes the first dimension, as
    the C++ does (use a Python hook for batches). It runs before the Python hooks at the same name."""

    def __init__(self, name: str, channels: Iterable[int], positions: Optional[Iterable[int]] = None):
        self.name = name
        self.channels = _ints(channels)
        self.positions = _ints(positions)

    def _register(self, native):
        native.zero_ablate_channels(self.name, self.channels, self.positions)


class scale_channels(_Intervention):
    """model::scale_channels, a dose: x[t, c] *= factor for the channels at the positions (all if None) of a
    [pos, d] hook (`name`, e.g. "blocks.3.mlp.hook_post"). factor 0 is zero-ablation, 1 the identity. With
    `centres` (one per channel) the distance from them is scaled instead, x[t, c] = mu_c + factor (x[t, c] - mu_c):
    factor 0 is mean-ablation. With 2-D ids the positions apply in every sequence."""

    def __init__(self, name: str, channels: Iterable[int], factor: float, positions: Optional[Iterable[int]] = None,
                 centres: Optional[Iterable[float]] = None):
        self.name, self.channels, self.factor, self.positions = name, _ints(channels), float(factor), _ints(positions)
        self.centres = [] if centres is None else [float(c) for c in centres]

    def _register(self, native):
        native.scale_channels(self.name, self.channels, self.factor, self.positions, self.centres)


class scale_heads(_Intervention):
    """model::scale_heads, a dose on heads: blocks.{layer}.attn.hook_z[t, h, :] *= factor at the positions (all
    if None). factor 0 removes the heads' share of hook_attn_out, 1 is the identity."""

    def __init__(self, layer: int, heads: Iterable[int], factor: float, positions: Optional[Iterable[int]] = None):
        self.layer, self.heads, self.factor, self.positions = int(layer), _ints(heads), float(factor), _ints(positions)

    def _register(self, native):
        native.scale_heads(self.layer, self.heads, self.factor, self.positions)


class force_pattern(_Intervention):
    """model::force_pattern: rows of blocks.{layer}.attn.hook_pattern replaced before they multiply V.
    `pattern` is one row (key_pos,) of non-negative weights for every chosen (head, query), or an array of
    the layer's pattern shape ([head, query_pos, key_pos]; e.g. another run's cached pattern), whose rows
    are taken at the chosen heads and queries (None: all). Each row is renormalised over the keys the query
    can see (0..t) to sum to 1, or, with keep_mass, to what the model's row summed to (a sink slot keeps
    its share). The forward then computes z = pattern @ V from the new rows."""

    def __init__(self, layer: int, pattern, heads: Optional[Iterable[int]] = None,
                 queries: Optional[Iterable[int]] = None, keep_mass: bool = False):
        self.layer, self.heads, self.queries, self.keep_mass = int(layer), _ints(heads), _ints(queries), bool(keep_mass)
        self.pattern = np.ascontiguousarray(pattern, dtype=np.float32)
        if self.pattern.ndim not in (1, 3, 4):
            raise Error(f"sinkscope: force_pattern takes a row (key_pos,) or a pattern [head, query, key], "
                        f"not a {self.pattern.ndim}-D array")

    def _register(self, native):
        native.force_pattern(self.layer, self.pattern, self.heads, self.queries, self.keep_mass)


class self_only_attention(_Intervention):
    """model::self_only_attention: each chosen query t (None: all) of the chosen heads (None: all) of block
    `layer` attends only to itself, so hook_z[t, h] = hook_v[t, h's kv head] (what position 0 does anyway)."""

    def __init__(self, layer: int, heads: Optional[Iterable[int]] = None, queries: Optional[Iterable[int]] = None):
        self.layer, self.heads, self.queries = int(layer), _ints(heads), _ints(queries)

    def _register(self, native):
        native.self_only_attention(self.layer, self.heads, self.queries)


class attend_only_to(_Intervention):
    """model::attend_only_to: each chosen query t >= key attends only to position `key`, so
    hook_z[t, h] = hook_v[key, h's kv head]; queries before the key keep their rows."""

    def __init__(self, layer: int, key: int, heads: Optional[Iterable[int]] = None, queries: Optional[Iterable[int]] = None):
        self.layer, self.key, self.heads, self.queries = int(layer), int(key), _ints(heads), _ints(queries)

    def _register(self, native):
        native.attend_only_to(self.layer, self.key, self.heads, self.queries)


class PatchSite:
    """One site of patch_sites (model::PatchSite): the entries of `hook` (a full name, or a short name such as
    "resid_post", "z", "pattern" with `layer`) at positions x heads x channels (None: all). [pos, d] hooks
    take positions and channels; [pos, head, d_head] hooks (q, k, v, z) positions, heads and channels of
    d_head; the pattern and scores query positions and heads."""

    def __init__(self, hook: str, layer: Optional[int] = None, positions=None, heads=None, channels=None):
        s = _C._PatchSite()
        s.hook, s.layer = str(hook), -1 if layer is None else int(layer)
        s.positions, s.heads, s.channels = _ints(positions), _ints(heads), _ints(channels)
        self._site = s
        self.name = s.name()   # the full hook name

    def __repr__(self):
        s = self._site
        return f"PatchSite({self.name!r}, positions={s.positions}, heads={s.heads}, channels={s.channels})"


def patch_site_names(sites: Sequence[PatchSite]) -> list:
    """The hook names a source run must capture for `sites` (run_with_cache(..., names=patch_site_names(sites)))."""
    names = []
    for s in sites:
        if s.name not in names:
            names.append(s.name)
    return names


class patch_sites(_Intervention):
    """model::patch_sites: every site patched from `source` (a run_with_cache cache of a sequence of the same
    length holding patch_site_names(sites)) in one forward; the other entries are left as they are."""

    def __init__(self, sites: Sequence[PatchSite], source: dict):
        self.sites = list(sites)
        names = patch_site_names(self.sites)
        missing = [n for n in names if n not in source]
        if missing:
            raise Error(f"sinkscope: patch_sites: the source has no {missing} (capture patch_site_names(sites))")
        self.source_names = names
        self.source = [np.ascontiguousarray(source[n], dtype=np.float32) for n in names]

    def _register(self, native):
        native.patch_sites([s._site for s in self.sites], self.source_names, self.source)


def _wrap_hook(fn: Hook):
    # A hook may edit x in place or return a new array; a returned array is copied into the activation.
    def call(x, name):
        r = fn(x, HookPoint(name))
        if r is not None and r is not x:
            r = np.asarray(r, dtype=np.float32)
            if r.shape != x.shape:
                raise Error(f"sinkscope: hook at {name} returned shape {r.shape}, the activation is {x.shape}")
            x[...] = r
    return call


class Model:
    """A loaded checkpoint (sinkscope.load). Thread safety: one forward at a time per Model."""

    def __init__(self, path: str, weights: str = "auto", compute: str = "exact"):
        self._m = _C._Model(str(path), weights, compute)
        self._config = json.loads(self._m.config_json())
        self._names = list(self._m.hook_names())

    def __repr__(self):
        c = self._config
        return (f"sinkscope.Model({self._m.path!r}, {c['architecture']}, L={c['n_layers']} d={c['d_model']} "
                f"H={c['n_heads']} vocab={c['vocab_size']})")

    @property
    def config(self) -> dict:
        """The model's Config as a dict (train::config_to_json; a fresh copy each time)."""
        return json.loads(json.dumps(self._config))

    @property
    def path(self) -> str:
        return self._m.path

    def hook_names(self) -> list:
        """Every hook name of this model, in the order the forward pass reaches them."""
        return list(self._names)

    def bos(self, mode="auto") -> dict:
        """Whether BOS goes first, as the CLI's --bos: mode "auto" (the checkpoint's add_bos_token; an absent key
        means no BOS), "on" (an Error when the checkpoint has no BOS id) or "off"; True and False mean "on" and
        "off". Returns {"mode", "use", "id", "source", "id_source"}: the decision, the id and where both came from."""
        return json.loads(self._m.resolve_bos(_bos_mode(mode)))

    def to_tokens(self, text: str, bos="auto") -> np.ndarray:
        """The model's tokenizer on `text`: int32 ids, shape (pos,). bos: "auto" (or None: the checkpoint's own
        setting), "on"/True or "off"/False, as Model.bos."""
        return self._m.to_tokens(text, self.bos(bos)["use"])

    def to_string(self, ids) -> str:
        """The tokenizer's decoding of `ids`; bytes that are not UTF-8 (a byte-fallback piece alone is part of a
        character) become U+FFFD."""
        return self._m.to_string([int(i) for i in np.asarray(ids).ravel()]).decode("utf-8", errors="replace")

    def ffn_weights(self, layer: int):
        """(W_gate (d_ff, d), W_up (d_ff, d), W_down (d, d_ff)) of a SwiGLU block: float32 copies."""
        return self._m.ffn_weights(int(layer))

    def parameter_names(self) -> list:
        """The canonical names of the model's parameters ("tok_embed", "blocks.0.attn.W_Q", …, "unembed"; one row
        each of the C++ parameter table), in the order training and checkpoints use. Needs weights="float32"."""
        return list(self._m.parameter_names())

    def parameter(self, name: str):
        """A float32 copy of the parameter `name` (parameter_names() lists them): (out, in) for a linear map, as
        torch.nn.Linear stores it; (n,) for a gain or a bias. Needs weights="float32"."""
        return self._m.parameter(str(name))

    def _token(self, token, what: str) -> int:
        """A token id, or a text the tokenizer encodes (without BOS) as exactly one token."""
        if isinstance(token, str):
            ids = self.to_tokens(token, bos=False)
            if ids.size != 1:
                raise Error(f"sinkscope: {what} {token!r} is {ids.size} tokens, not one (give a token id, or a text "
                            "that is one token)")
            return int(ids[0])
        return int(token)

    # ---- the logit lens and direct logit attribution (analysis/logit_lens.hpp, logit_attribution.hpp) ----
    def logit_lens(self, ids, target=None, top_k: int = 5) -> dict:
        """The logit lens of one sequence: every resid_pre and the last resid_post through the final norm and
        the unembedding (the lens at the last point is the model's own logits). Returns a dict of NumPy
        arrays: points (R = n_layers + 1 hook names), top_tokens (R, pos, top_k) int32 and top_probs (R, pos,
        top_k) float32, most probable first; with a target (a token id, or a text that is one token)
        target_rank (R, pos) int64 (0: the top token), target_prob and target_logit (R, pos) float32; and
        logits (pos, vocab), the forward's own."""
        a2, batched, _ = self._ids(ids, None)
        if batched:
            raise Error("sinkscope: logit_lens runs one sequence (1-D ids)")
        t = -1 if target is None else self._token(target, "target")
        return self._m.logit_lens([int(i) for i in a2[0]], int(top_k), t)

    def dla(self, ids, target, contrast=None, position: int = -1) -> dict:
        """Direct logit attribution of logit(target) (minus logit(contrast)) at `position` (-1: the last), with
        every norm on the path frozen at its scale in this forward. Returns a dict, float64: embed, pos_embed,
        heads (n_layers, n_heads), mlp (n_layers), experts (n_layers, n_experts) or None, attn_bias and
        mlp_bias (n_layers), final_bias, bias (their sum), by_source (n_layers, n_heads, sources): each
        head's part split by the key position it read (the sink token first where there is one, the KV sink
        slot last), logit (before any soft cap; embed + pos_embed + heads + mlp + bias sum to it, also as
        total) and model_logit (the forward's own, soft-capped where the model caps)."""
        a2, batched, _ = self._ids(ids, None)
        if batched:
            raise Error("sinkscope: dla runs one sequence (1-D ids)")
        c = -1 if contrast is None else self._token(contrast, "contrast")
        return self._m.dla([int(i) for i in a2[0]], self._token(target, "target"), c, int(position))

    _GRAD_HOOKS = ("hook_resid_pre", "hook_attn_out", "attn.hook_z", "hook_mlp_out")

    def grad(self, ids, metric, params: bool = False, names: NamesFilter = None) -> dict:
        """Gradients of a scalar metric of the logits. metric(logits) gets the forward's (pos, vocab) logits
        and returns (value, dvalue/dlogits) with the gradient shaped like the logits (for a logit
        difference, +1 and -1 at two entries). Returns a dict: 'value', and the gradient at each hook that
        `names` selects (as in run_with_cache: a list of names, one name, or a function of the name),
        shaped like the activation, float32, with a sink token's row first: any block's hook_resid_pre,
        hook_attn_out, hook_mlp_out (pos, d_model) and attn.hook_z (pos, n_heads, d_head); by default every
        block's hook_resid_pre. A name outside those is an error naming it. With params=True also 'params',
        every parameter's gradient by its parameter_names() name. Needs float32 weights."""
        a, batched, _ = self._ids(ids, None)
        if batched:
            raise Error("sinkscope: grad runs one sequence (1-D ids)")
        if names is None:
            wanted = [n for n in self._names if n.endswith(".hook_resid_pre")]
        else:
            wanted = self._names_list(names)
            for n in wanted:
                if not any(n.startswith("blocks.") and n.endswith("." + h) for h in self._GRAD_HOOKS):
                    raise Error(f"sinkscope: grad has no gradient at '{n}' (it gives every block's "
                                + ", ".join(self._GRAD_HOOKS) + ")")
        value, dlogits = metric(self(a[0]))
        got = self._m.grad([int(i) for i in a[0]], np.ascontiguousarray(dlogits, dtype=np.float64), bool(params))
        missing = [n for n in wanted if n not in got]
        if missing:
            raise Error(f"sinkscope: this model has no '{missing[0]}' (hook_names() lists its hooks)")
        d = {n: got[n] for n in wanted}
        if params:
            d["params"] = got["params"]
        d["value"] = float(value)
        return d

    def attribution_patch(self, clean, corrupted, target=None, contrast=None, position: int = -1, exact: int = 0,
                          seed: int = 1, sites=("resid_pre",), channels=None, metric: str = "logit") -> dict:
        """Attribution patching: for every site, the first-order estimate of what patching it from the corrupted
        run into the clean one does to a metric, from one backward of the clean run. metric="logit":
        logit(target) (minus logit(contrast)) at `position`; "logprob": the same of log-probabilities; "loss":
        the clean sequence's mean next-token cross-entropy (no target, contrast or position). `clean` and
        `corrupted` are 1-D token ids of the same length. `sites` names the hooks scored: "resid_pre"
        (blocks.{l}.hook_resid_pre per position), "attn_out" and "mlp_out" (per position), "z" (attn.hook_z
        per position and head); `channels` adds channel groups of hook_resid_pre, scored per
        position: a list of channels (the group "channels") or a dict {name: channels}. With exact=K, the K
        sites of largest |estimate| and K random others (seed), over every kind, are also patched for real.
        Returns a dict named as `sinkscope atp` names its files: estimate and exact (n_layers, positions) for
        resid_pre, estimate_attn_out / exact_attn_out and estimate_mlp_out / exact_mlp_out (n_layers,
        positions), estimate_z / exact_z (n_layers, positions, n_heads), estimate_group_NAME / exact_group_NAME
        (n_layers, positions), all float64 (exact NaN where not patched); clean_metric, corrupted_metric,
        spearman_top and spearman_random (Spearman's rho between estimate and exact over each set, NaN
        without exact). Needs float32 weights (weights="float32" or "auto" where they fit)."""
        a, batched, _ = self._ids(clean, None)
        b, batched_b, _ = self._ids(corrupted, None)
        if batched or batched_b:
            raise Error("sinkscope: attribution_patch runs one sequence pair (1-D ids)")
        if isinstance(sites, str):
            sites = (sites,)
        if channels is None:
            groups = {}
        elif isinstance(channels, dict):
            groups = {str(k): [int(c) for c in v] for k, v in channels.items()}
        else:
            groups = {"channels": [int(c) for c in channels]}
        if metric == "loss":
            if target is not None or contrast is not None or position != -1:
                raise Error("sinkscope: attribution_patch metric='loss' takes no target, contrast or position")
            t, c = 0, -1
        else:
            if target is None:
                raise Error("sinkscope: attribution_patch needs a target (unless metric='loss')")
            t, c = self._token(target, "target"), (-1 if contrast is None else self._token(contrast, "contrast"))
        return self._m.attribution_patch([int(i) for i in a[0]], [int(i) for i in b[0]], t, c,
                                         int(position), int(exact), int(seed), [str(s) for s in sites], list(groups.keys()),
                                         list(groups.values()), str(metric))

    def head_view(self, ids, top_channels: int = 4, html=None) -> dict:
        """What `sinkscope view` shows, for one sequence: every head's pattern (n_layers, n_heads, pos, pos)
        float32; alpha0 (n_layers, n_heads) float64, the attention position 0 receives averaged over the
        queries; resid_norm (n_layers + 1, pos) float32, the residual stream's norm at each logit-lens read-out
        point (points: their hook names); top_channel (int32) and top_value (float32), (n_layers + 1, pos,
        top_channels), the largest |x| channels; sink_slots (1 where position 0 is a sink token's slot). With
        html (a path), also writes the self-contained page there."""
        a2, batched, _ = self._ids(ids, None)
        if batched:
            raise Error("sinkscope: head_view runs one sequence (1-D ids)")
        return self._m.head_view([int(i) for i in a2[0]], int(top_channels), "" if html is None else os.fspath(html))

    # ---- the forward pass ----
    def _ids(self, ids, lengths):
        a = np.asarray(ids)
        if a.dtype.kind not in "iu":
            raise Error(f"sinkscope: token ids must be integers, not {a.dtype}")
        if a.ndim not in (1, 2):
            raise Error(f"sinkscope: token ids must be 1-D (pos,) or 2-D (batch, pos), not {a.ndim}-D")
        if a.size == 0:
            raise Error("sinkscope: empty token ids")
        if a.min() < np.iinfo(np.int32).min or a.max() > np.iinfo(np.int32).max:
            raise Error("sinkscope: a token id does not fit in int32")
        batched = a.ndim == 2
        if not batched and lengths is not None:
            raise Error("sinkscope: lengths apply to 2-D (batch, pos) ids")
        a2 = np.ascontiguousarray(a.reshape(1, -1) if not batched else a, dtype=np.int32)
        lens = [] if lengths is None else [int(n) for n in np.asarray(lengths).ravel()]
        return a2, batched, lens

    def _names_list(self, names: NamesFilter) -> list:
        if names is None:
            return list(self._names)
        if isinstance(names, str):
            return [names]
        if callable(names):
            return [n for n in self._names if names(n)]
        return [str(n) for n in names]

    def _run(self, ids, lengths, capture, fwd_hooks, return_logits):
        a2, batched, lens = self._ids(ids, lengths)
        py_hooks, native = [], _C._NativeHooks()
        for h in fwd_hooks:
            if isinstance(h, _Intervention):
                h._register(native)
                continue
            name, fn = h
            if not callable(fn):
                raise Error(f"sinkscope: the hook for {name} is not callable")
            py_hooks.append((str(name), _wrap_hook(fn)))
        return self._m.run(a2, batched, lens, capture, py_hooks, native, bool(return_logits))

    def __call__(self, ids, lengths=None) -> np.ndarray:
        """The logits: (pos, vocab) for 1-D ids, (batch, pos, vocab) for 2-D ids. No copy."""
        return self._run(ids, lengths, [], [], True)[0]

    def run_with_cache(self, ids, names: NamesFilter = None, lengths=None, fwd_hooks=(), return_logits: bool = True):
        """(logits, cache): cache maps each hook name that `names` selects (a list of names, one name, a
        callable name -> bool, or None for every hook) to its activation, float32, no copy beyond the
        capture's own. 2-D ids: a batch, sequence b = ids[b, :lengths[b]] (all of each row if lengths is
        None); padded entries are to be ignored. fwd_hooks run too (they see the activation before it is
        captured, when registered at the same name)."""
        return self._run(ids, lengths, self._names_list(names), list(fwd_hooks), return_logits)

    def run_with_hooks(self, ids, fwd_hooks=(), lengths=None, return_logits: bool = True):
        """The logits with hooks: fwd_hooks is a list of (name, fn) with fn(x, hook) (hook: a HookPoint, the
        name as a str with .name), x a view of the live activation (valid only during the call) to edit in
        place, or fn returns a new array of x's shape; and of C++ interventions (zero_ablate_channels,
        scale_channels, scale_heads, force_pattern, self_only_attention, attend_only_to, patch_sites), which
        run before the Python hooks. Hooks run in order; a hook that raises stops the forward and its
        exception propagates."""
        return self._run(ids, lengths, [], list(fwd_hooks), return_logits)[0]

    def stats(self, texts=None, *, seq_len: int = 64, eps: float = 0.3, bos="auto", samples: int = 0,
              batch: int = 8, text_file: Optional[str] = None, tokens_file: Optional[str] = None,
              shard: Optional[str] = None) -> dict:
        """`sinkscope stats`: per-layer top |x| (channel, position), median |x|, position-0 and other-position
        norms, Gu et al.'s sink rate Sink^eps per layer and overall, Sun et al.'s massive flag. Returns the
        dict the CLI's --json writes for the same input: texts (a str, as --text; a list of str is joined
        with newlines first), text_file (--text-file) or tokens_file (--tokens-file), cut into samples of
        seq_len tokens. `samples` caps their number, `shard` is "I/N". bos: as Model.bos, for text (a token file's
        ids are used as given); settings["bos_setting"] says what was used and why, as the CLI's."""
        given = [x is not None for x in (texts, text_file, tokens_file)]
        if sum(given) != 1:
            raise Error("sinkscope: stats needs exactly one of texts, text_file, tokens_file")
        r = _C._StatsRequest()
        r.model = self.path
        if texts is not None:
            r.text = texts if isinstance(texts, str) else "\n".join(texts)
        if text_file is not None:
            r.text_file = str(text_file)
        if tokens_file is not None:
            r.tokens_file = str(tokens_file)
        # The values are checked in C++ (analysis::check_request), as for the CLI.
        mode = _bos_mode(bos)
        if tokens_file is None:
            setting = self.bos(mode)
        else:
            setting = {"mode": mode, "use": False, "id": None, "source": "--tokens-file: the ids as given", "id_source": ""}
        use = setting["use"] or (tokens_file is not None and mode == "on")  # "on" with a token file: C++ refuses it
        r.seq_len, r.eps, r.bos, r.max_samples, r.batch = int(seq_len), float(eps), bool(use), int(samples), int(batch)
        if shard is not None:
            r.set_shard(str(shard))
        out = json.loads(self._m.stats(r))
        out["settings"]["bos_setting"] = setting  # as the CLI writes it
        return out


def _bos_mode(bos) -> str:
    """The --bos word for a Python value: None -> "auto", True -> "on", False -> "off", or the word itself."""
    if bos is None:
        return "auto"
    if isinstance(bos, bool):
        return "on" if bos else "off"
    if bos in ("auto", "on", "off"):
        return bos
    raise Error(f"sinkscope: bos must be 'auto', 'on', 'off', True, False or None, not {bos!r}")


def load(path, weights: str = "auto", compute: str = "exact") -> Model:
    """Loads a .gguf file, a Hugging Face directory or a sinkscope checkpoint. weights="auto" (the default)
    converts every tensor to float32 when that fits in memory and otherwise keeps the linear maps in their
    file types, saying so on stderr; weights="float32" forces float32 (an error naming weights="file" when it
    does not fit). weights="file" keeps the
    linear maps of a GGUF (block types, F16, BF16) or a Hugging Face directory (F16, BF16) in their file
    types, memory-mapped (the CLI's --weights file); compute="int8" quantizes activations for block-typed
    maps (--compute int8); compute="bf16" runs the products of dense float32 maps, BF16 maps and
    block-typed maps (dequantized to bf16 tiles) with bf16 inputs and float32 accumulation (--compute bf16;
    needs oneDNN); weights="bf16" rounds the linear
    maps to BF16 once at load (--weights bf16: with compute="bf16" the same products in half the memory,
    without converting weights on every forward). Activations and captures stay float32."""
    return Model(path, weights, compute)


def planted(construction: str, out, *, twin: bool = False, dose: float = 1.0, seed: int = 1, layout: str = "llama") -> dict:
    """Writes a model whose weights are set so that a claim holds by construction (nothing is trained) to
    `out` (.safetensors) and returns its plan (channels, magnitudes, the probe's values) as a dict; load it
    with sinkscope.load(out). construction: "massive" (a massive activation with step-up and step-down,
    theory/planted_massive.md), "sink-keys" (sink heads whose keys read the spike, theory/planted_sink_keys.md)
    or "p0-circuit" (a position-0 circuit in blocks 0-1 whose heads each carry it, theory/planted_p0_circuit.md).
    twin=True writes the construction's mechanism-off twin; dose scales the planted magnitude (1: the smallest
    that meets Sun et al.'s criterion with margin 2); layout "llama" or "layernorm-gelu" (not for "massive").
    The same models as `sinkscope planted CONSTRUCTION --out OUT [--twin] [--dose] [--seed] [--layout]`."""
    return json.loads(_C._write_planted(construction, os.fspath(out), bool(twin), float(dose), int(seed), layout))


def _f64(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


def channel_frobenius_norms(W_gate, W_up, W_down) -> np.ndarray:
    """||U_k||_F for every output channel k of a SwiGLU FFN, U_k = W_gate^T diag(W_down[k, :]) W_up
    (theory::channel_frobenius_norms; PyTorch layout: W_gate, W_up (d_ff, d), W_down (d, d_ff)). float64."""
    return _C._channel_frobenius_norms(_f64(W_gate), _f64(W_up), _f64(W_down))


def channel_spectrum(W_gate, W_up, W_down, k: int, nev: int = 1, rule: str = "largest_magnitude") -> dict:
    """The top `nev` eigenpairs of S_k = (U_k + U_k^T)/2 (theory::channel_spectrum, Lanczos): a dict with
    eigenvalues (nev,), eigenvectors (d, nev), residuals, dense_fallback. rule: largest_magnitude,
    largest_algebraic or smallest_algebraic."""
    return _C._channel_spectrum(_f64(W_gate), _f64(W_up), _f64(W_down), int(k), int(nev), rule)


def fit_cone(values) -> dict:
    """The cone model fitted to value vectors (rows of an (n, d_h) array; theory::fit_cone): alpha (mean
    cosine to the axis), alpha_debiased, axis, mean_norm_sq and the isotropy measures."""
    return _C._fit_cone(_f64(values))
