"""Paths the Python tests read: the shared tiny model, the SmolLM2 download, the committed Hugging Face
fixtures, and the C++ CLI (SINKSCOPE_CLI, an independent path to the same forward: `capture` writes .npy)."""
import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import sinkscope

REPO = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "model"
TINY = REPO.parent / "shared" / "models" / "stories260K.gguf"
SMOLLM2 = REPO / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def cli_path():
    p = os.environ.get("SINKSCOPE_CLI", "")
    if not p:
        pytest.skip("SINKSCOPE_CLI is not set (the path of the C++ CLI, e.g. build/tools/sinkscope)")
    path = pathlib.Path(p)
    if not path.is_absolute():
        path = REPO / path
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.skip(f"SINKSCOPE_CLI={p}: no executable there")
    return str(path)


def cli_capture(model, ids, hooks, out_dir):
    """Runs `sinkscope capture MODEL --tokens ... --hooks ... --out DIR` and reads the .npy files back."""
    out = pathlib.Path(out_dir) / "cap"
    cmd = [cli_path(), "capture", str(model), "--tokens", ",".join(str(int(i)) for i in ids), "--hooks", ",".join(hooks),
           "--out", str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    return {h: np.load(out / f"{h}.npy") for h in hooks}


@pytest.fixture(scope="session")
def tiny():
    assert TINY.is_file(), f"{TINY} is missing (the shared test checkpoints belong beside the repository)"
    return sinkscope.load(str(TINY))


@pytest.fixture(scope="session")
def smollm2():
    if not SMOLLM2.is_file():
        pytest.skip(f"{SMOLLM2} absent (scripts/fetch_model.sh fetches it)")
    return sinkscope.load(str(SMOLLM2))
