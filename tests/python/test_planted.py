"""sinkscope.planted writes the models the verdict rules are calibrated on (train/planted_export.hpp), the
same files as the CLI's `sinkscope planted …` (another process and another build of the same headers, when
SINKSCOPE_CLI is set), and they behave as their construction says: the planted position-0 circuit
(theory/planted_p0_circuit.md) carries its spike at position 0 only, every single head of block 0 keeps it,
and in the twin head 0's knockout removes it."""
import json
import subprocess

import numpy as np
import pytest

import sinkscope
from conftest import cli_path


def spike_after_block2(m, plan, ids, hooks=()):
    _, cache = m.run_with_cache(ids, names="blocks.2.hook_resid_post", fwd_hooks=list(hooks))
    return cache["blocks.2.hook_resid_post"][:, plan["channel"]]


def zero_head(h):
    def fn(z, name):
        z[:, h, :] = 0.0
    return ("blocks.0.attn.hook_z", fn)


@pytest.mark.parametrize("layout", ["llama", "layernorm-gelu"])
def test_p0_circuit_and_its_twin(tmp_path, layout):
    plan = sinkscope.planted("p0-circuit", tmp_path / "p.safetensors", layout=layout)
    twin = sinkscope.planted("p0-circuit", tmp_path / "t.safetensors", twin=True, layout=layout)
    assert plan["construction"] == "planted_p0_circuit" and plan["twin"] is False and twin["twin"] is True
    assert plan["magnitude"] == twin["magnitude"]  # every number solved with the redundant copies
    m, mt = sinkscope.load(str(tmp_path / "p.safetensors")), sinkscope.load(str(tmp_path / "t.safetensors"))
    ids = np.random.default_rng(3).integers(0, m.config["vocab_size"], 48)
    x = spike_after_block2(m, plan, ids)
    M = plan["magnitude"]
    assert 0.9 * M < x[0] < 1.1 * M and np.abs(x[1:]).max() < 0.01 * M
    heads = m.config["n_heads"]
    kept = [spike_after_block2(m, plan, ids, [zero_head(h)])[0] / x[0] for h in range(heads)]
    assert min(kept) > 0.5, kept
    xt = spike_after_block2(mt, twin, ids)
    assert 0.9 * M < xt[0] < 1.1 * M
    assert abs(spike_after_block2(mt, twin, ids, [zero_head(0)])[0]) < 0.01 * M


def test_same_file_as_the_cli(tmp_path):
    cli = cli_path()
    plan = sinkscope.planted("sink-keys", tmp_path / "py.safetensors", dose=0.5, seed=3)
    r = subprocess.run([cli, "planted", "sink-keys", "--out", str(tmp_path / "cli.safetensors"), "--dose", "0.5", "--seed", "3"],
                       capture_output=True, text=True, check=True)
    assert json.loads(r.stdout)["key_read"] == plan["key_read"]
    a, b = sinkscope.load(str(tmp_path / "py.safetensors")), sinkscope.load(str(tmp_path / "cli.safetensors"))
    ids = np.arange(20) % a.config["vocab_size"]
    np.testing.assert_array_equal(a.run_with_hooks(ids), b.run_with_hooks(ids))


def test_bad_requests_name_what_is_wrong(tmp_path):
    with pytest.raises(sinkscope.Error, match="construction 'cone'"):
        sinkscope.planted("cone", tmp_path / "x.safetensors")
    with pytest.raises(sinkscope.Error, match="layernorm-gelu"):
        sinkscope.planted("massive", tmp_path / "x.safetensors", layout="layernorm-gelu")
    with pytest.raises(sinkscope.Error, match=r"\.safetensors"):
        sinkscope.planted("p0-circuit", tmp_path / "x.bin")
