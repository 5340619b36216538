"""Model.parameter_names / Model.parameter against the checkpoint file itself, read here with NumPy alone
(a safetensors file is an 8-byte header length, a JSON header and the raw little-endian tensors)."""
import json
import struct

import numpy as np
import pytest

import sinkscope
from conftest import FIXTURES, SMOLLM2


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    dtypes = {"F32": np.float32, "F16": np.float16}
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        begin, end = t["data_offsets"]
        if t["dtype"] == "BF16":  # the upper 16 bits of a float32
            raw = np.frombuffer(data[begin:end], dtype=np.uint16).astype(np.uint32) << 16
            a = raw.view(np.float32)
        else:
            a = np.frombuffer(data[begin:end], dtype=dtypes[t["dtype"]]).astype(np.float32)
        out[name] = a.reshape(t["shape"])
    return out


def test_llama_parameters_are_the_files_tensors():
    d = FIXTURES / "random_llama"
    m = sinkscope.load(str(d), weights="float32")
    ref = read_safetensors(d / "model.safetensors")
    names = m.parameter_names()
    assert names[0] == "tok_embed" and "blocks.0.attn.W_Q" in names and "ln_final.weight" in names
    # Hugging Face's Llama names for the same tensors: (out, in) maps, as torch.nn.Linear stores them.
    hf = {"tok_embed": "model.embed_tokens.weight", "ln_final.weight": "model.norm.weight"}
    for l in range(m.config["n_layers"]):
        p, q = f"blocks.{l}.", f"model.layers.{l}."
        hf.update({p + "attn.W_Q": q + "self_attn.q_proj.weight", p + "attn.W_K": q + "self_attn.k_proj.weight",
                   p + "attn.W_V": q + "self_attn.v_proj.weight", p + "attn.W_O": q + "self_attn.o_proj.weight",
                   p + "mlp.W_gate": q + "mlp.gate_proj.weight", p + "mlp.W_in": q + "mlp.up_proj.weight",
                   p + "mlp.W_out": q + "mlp.down_proj.weight", p + "ln1.weight": q + "input_layernorm.weight",
                   p + "ln2.weight": q + "post_attention_layernorm.weight"})
    if "lm_head.weight" in ref:
        hf["unembed"] = "lm_head.weight"
    assert sorted(names) == sorted(hf)
    for ours, theirs in hf.items():
        got = m.parameter(ours)
        assert got.dtype == np.float32 and got.shape == ref[theirs].shape, ours
        assert np.array_equal(got, ref[theirs]), ours
    assert m.parameter("blocks.0.mlp.W_gate").tolist() == m.ffn_weights(0)[0].tolist()


def test_parameter_errors_name_the_way_out():
    m = sinkscope.load(str(FIXTURES / "random_llama"), weights="float32")
    with pytest.raises(sinkscope.Error, match="no parameter 'blocks.0.attn.W_X'.*parameter_names"):
        m.parameter("blocks.0.attn.W_X")
    if not SMOLLM2.exists():
        pytest.skip(f"{SMOLLM2} is absent (scripts/fetch_model.sh)")
    views = sinkscope.load(str(SMOLLM2), weights="file")  # Q4_1 maps stay in their blocks
    with pytest.raises(sinkscope.Error, match="weights='float32'"):
        views.parameter_names()
