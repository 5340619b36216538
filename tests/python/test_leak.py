"""No leak: the resident set size after 1,000 more forwards on the tiny model (capture + logits + a Python
hook each, 64 tokens) is within 8 MiB of what it was after a warm-up of 100. Each forward hands NumPy
about 160 KiB (logits 64 x 512 float32 = 128 KiB, two cached activations), so leaking any of it would
grow the RSS by more than 150 MiB."""
import numpy as np

import sinkscope


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_rss_flat_over_1000_forwards(tiny):
    ids = np.random.default_rng(0).integers(0, 512, 64).astype(np.int32)
    names = ["blocks.2.hook_resid_post", "blocks.4.attn.hook_pattern"]

    def hook(x, name):
        x[:, 0] += 0.0

    def step():
        logits, cache = tiny.run_with_cache(ids, names=names, fwd_hooks=[("blocks.1.hook_mlp_out", hook)])
        assert logits.shape == (64, 512) and len(cache) == 2

    for _ in range(100):
        step()
    before = rss_bytes()
    for _ in range(1000):
        step()
    growth = rss_bytes() - before
    assert growth <= 8 * 2**20, f"RSS grew by {growth / 2**20:.1f} MiB over 1,000 forwards"


def test_no_leak_when_hooks_raise(tiny):
    ids = np.arange(1, 65, dtype=np.int32)

    def boom(x, name):
        raise KeyError(name)

    def step():
        try:
            tiny.run_with_hooks(ids, fwd_hooks=[("blocks.3.hook_resid_post", boom)])
        except KeyError:
            pass
        try:
            tiny(np.array([1, 999], dtype=np.int32))
        except sinkscope.Error:
            pass

    for _ in range(100):
        step()
    before = rss_bytes()
    for _ in range(1000):
        step()
    assert rss_bytes() - before <= 8 * 2**20
