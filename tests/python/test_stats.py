"""Model.stats gives the dict the CLI's `stats --json` writes for the same input (same model path string,
same settings), on the tiny model from a token file and on SmolLM2 from text."""
import json
import subprocess

import numpy as np
import pytest

from conftest import REPO, SMOLLM2, TINY, cli_path


def cli_stats(args, tmp_path):
    out = tmp_path / "cli.json"
    subprocess.run([cli_path(), "stats", *args, "--json", str(out)], check=True, capture_output=True)
    return json.loads(out.read_text())


def test_tiny_stats_equal_cli(tiny, tmp_path):
    tokens = tmp_path / "tokens.txt"
    rng = np.random.default_rng(1)
    tokens.write_text("\n".join(" ".join(str(int(i)) for i in [1] + list(rng.integers(0, 512, 11))) for _ in range(10)))
    ref = cli_stats([str(TINY), "--tokens-file", str(tokens), "--seq-len", "8"], tmp_path)
    got = tiny.stats(tokens_file=str(tokens), seq_len=8)
    assert got == ref
    assert got["samples"] == 10 and len(got["layers"]) == 5
    shard = tiny.stats(tokens_file=str(tokens), seq_len=8, shard="1/3")
    assert shard == cli_stats([str(TINY), "--tokens-file", str(tokens), "--seq-len", "8", "--shard", "1/3"], tmp_path)


def test_smollm2_stats_equal_cli(smollm2, tmp_path):
    text = (REPO / "data" / "sample.txt").read_text()
    ref = cli_stats([str(SMOLLM2), "--text", text, "--seq-len", "32", "--samples", "6"], tmp_path)
    got = smollm2.stats(text, seq_len=32, samples=6)
    assert got == ref
    assert got["samples"] == 6 and len(got["layers"]) == 30
    with_bos = smollm2.stats(text, seq_len=32, samples=6, bos=True)
    assert with_bos == cli_stats([str(SMOLLM2), "--text", text, "--seq-len", "32", "--samples", "6", "--bos"], tmp_path)


def test_stats_bad_input(tiny, tmp_path):
    import sinkscope
    with pytest.raises(sinkscope.Error, match="exactly one of"):
        tiny.stats()
    with pytest.raises(sinkscope.Error, match="--shard '3/2'"):
        tiny.stats(tokens_file=str(tmp_path / "x"), shard="3/2")
    # The request's values are checked once, in C++ (analysis::check_request), for the CLI and Python alike.
    with pytest.raises(sinkscope.Error, match="BOS applies to text"):
        tiny.stats(tokens_file=str(tmp_path / "x"), bos=True)
    with pytest.raises(sinkscope.Error, match=r"sample length must lie in \[2, 2\^20\], not 1"):
        tiny.stats("some text", seq_len=1)
    with pytest.raises(sinkscope.Error, match="eps must lie in"):
        tiny.stats("some text", eps=1.5)
    with pytest.raises(sinkscope.Error, match="cannot open text file"):
        tiny.stats(tokens_file=str(tmp_path / "missing.txt"))
