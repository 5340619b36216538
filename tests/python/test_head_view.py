"""Model.head_view (analysis/head_view.hpp) from Python: the patterns are run_with_cache's, alpha0 is the mean
of their column 0, the norms and largest channels are those of the cached residual stream, and html= writes
the same page `sinkscope view` writes (the data inside it equal to these arrays).
"""
import json
import re

import numpy as np
import pytest

import sinkscope


def test_head_view_equals_the_cache(tiny, tmp_path):
    ids = np.array([1, 50, 60, 70, 80, 90, 100, 110], dtype=np.int32)
    v = tiny.head_view(ids, top_channels=3, html=tmp_path / "view.html")
    L, H, T = tiny.config["n_layers"], tiny.config["n_heads"], len(ids)
    points = [f"blocks.{l}.hook_resid_pre" for l in range(L)] + [f"blocks.{L - 1}.hook_resid_post"]
    assert v["points"] == points and v["sink_slots"] == 0
    assert v["pattern"].shape == (L, H, T, T) and v["alpha0"].shape == (L, H) and v["alpha0"].dtype == np.float64
    _, cache = tiny.run_with_cache(ids, names=lambda n: n.endswith("hook_pattern") or n in points)
    for l in range(L):
        p = cache[f"blocks.{l}.attn.hook_pattern"]
        assert np.array_equal(v["pattern"][l], p)
        assert np.allclose(v["alpha0"][l], p[:, :, 0].astype(np.float64).mean(axis=1), rtol=1e-12, atol=0)
    for r, name in enumerate(points):
        x = cache[name].astype(np.float64)
        assert np.allclose(v["resid_norm"][r], np.linalg.norm(x, axis=1), rtol=1e-6)
        order = np.argsort(-np.abs(x), axis=1, kind="stable")[:, :3]
        assert np.array_equal(v["top_channel"][r], order.astype(np.int32))
        assert np.array_equal(v["top_value"][r], cache[name][np.arange(T)[:, None], order])
    page = (tmp_path / "view.html").read_text(encoding="utf-8")
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S).group(1))
    assert data["layers"] == L and data["heads"] == H and data["positions"] == T
    assert np.allclose(data["alpha0"], v["alpha0"].ravel(), rtol=1e-15, atol=0)


def test_head_view_refuses_a_batch(tiny):
    with pytest.raises(sinkscope.Error, match="one sequence"):
        tiny.head_view(np.array([[1, 2, 3]], dtype=np.int32))
