"""Bad input raises (sinkscope.Error with the C++ message, or the hook's own exception), never crashes,
and the model stays usable afterwards."""
import json

import numpy as np
import pytest

import sinkscope
from conftest import REPO, TINY


class Boom(Exception):
    pass


def test_error_is_a_runtime_error():
    assert issubclass(sinkscope.Error, RuntimeError)


def test_hook_exception_stops_the_forward_and_propagates(tiny):
    ids = np.array([1, 2, 3, 4], dtype=np.int32)
    later = []

    def boom(x, name):
        raise Boom("stop at " + name)

    with pytest.raises(Boom, match="stop at blocks.1.hook_resid_post"):
        tiny.run_with_hooks(ids, fwd_hooks=[("blocks.1.hook_resid_post", boom),
                                            ("blocks.3.hook_resid_post", lambda x, n: later.append(n))])
    assert later == []  # the forward stopped at the raising hook
    assert tiny(ids).shape == (4, 512)  # and the model still runs


@pytest.mark.parametrize("ids, message", [
    (np.array([1, 512], dtype=np.int32), "token id 512 at position 1 is outside the vocabulary"),
    (np.array([1, -3], dtype=np.int64), "token id -3 at position 1"),
    (np.array([], dtype=np.int32), "empty token ids"),
    (np.array([1.0, 2.0]), "must be integers"),
    (np.zeros((1, 2, 3), dtype=np.int32), "1-D .* or 2-D"),
    (np.array([1, 2**40]), "does not fit in int32"),
    (np.zeros((2, 0), dtype=np.int32), "empty token ids"),
])
def test_bad_ids(tiny, ids, message):
    with pytest.raises(sinkscope.Error, match=message):
        tiny(ids)


def test_bad_batch_lengths(tiny):
    ids = np.ones((2, 4), dtype=np.int32)
    with pytest.raises(sinkscope.Error, match="length 5 of sequence 1"):
        tiny(ids, lengths=[4, 5])
    with pytest.raises(sinkscope.Error, match="3 lengths for 2 sequences"):
        tiny(ids, lengths=[1, 2, 3])
    with pytest.raises(sinkscope.Error, match="sequence 1: forward: token id 600"):
        tiny(np.array([[1, 2], [1, 600]], dtype=np.int32))


def test_too_many_tokens(tiny):
    with pytest.raises(sinkscope.Error, match="exceed the context length 512"):
        tiny(np.ones(513, dtype=np.int32))


def test_unknown_hook_names(tiny):
    ids = np.array([1, 2], dtype=np.int32)
    with pytest.raises(sinkscope.Error, match="unknown hook 'blocks.9.hook_resid_post'"):
        tiny.run_with_cache(ids, names=["blocks.9.hook_resid_post"])
    with pytest.raises(sinkscope.Error, match="unknown hook 'nonsense'"):
        tiny.run_with_hooks(ids, fwd_hooks=[("nonsense", lambda x, n: None)])
    with pytest.raises(sinkscope.Error, match="unknown hook"):
        tiny.run_with_hooks(ids, fwd_hooks=[sinkscope.zero_ablate_channels("blocks.7.hook_resid_post", [0])])


def test_bad_hook_results(tiny):
    ids = np.array([1, 2], dtype=np.int32)
    with pytest.raises(sinkscope.Error, match="returned shape"):
        tiny.run_with_hooks(ids, fwd_hooks=[("blocks.0.hook_resid_post", lambda x, n: np.zeros(3))])
    with pytest.raises(sinkscope.Error, match="channel 64 out of range"):
        tiny.run_with_hooks(ids, fwd_hooks=[sinkscope.zero_ablate_channels("blocks.0.hook_resid_post", [64])])


def test_bad_files(tmp_path):
    with pytest.raises(sinkscope.Error, match="missing.gguf"):
        sinkscope.load(str(tmp_path / "missing.gguf"))
    v1 = tmp_path / "v1.gguf"
    v1.write_bytes(b"GGUF\x01\x00\x00\x00")
    with pytest.raises(sinkscope.Error, match=r"v1.gguf"):
        sinkscope.load(str(v1))
    # A truncated copy of the tiny model: the message names the file (and, where known, tensor and offset).
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(TINY.read_bytes()[:200000])
    with pytest.raises(sinkscope.Error, match=r"\[file .*cut.gguf\]"):
        sinkscope.load(str(cut))
    with pytest.raises(sinkscope.Error, match="weights must be"):
        sinkscope.load(str(TINY), weights="float16")
    with pytest.raises(sinkscope.Error, match="compute must be"):
        sinkscope.load(str(TINY), compute="fp8")


def test_sentencepiece_tokenizer(tiny):
    # stories260K's GGUF has a SentencePiece ('llama') tokenizer: the ids `sentencepiece` gives
    # (tests/fixtures/tokenizer/sp_reference.json, from scripts/make_sentencepiece_fixtures.py), BOS first.
    ref = json.loads((REPO / "tests" / "fixtures" / "tokenizer" / "sp_reference.json").read_text(encoding="utf-8"))
    text, ids = ref["stories260K"]["cli_text"], ref["stories260K"]["cli_ids"]
    assert tiny.to_tokens(text, bos=True).tolist() == ids
    # Its pieces past the bytes are placeholders: "▁" falls back to bytes and decodes as "▁" (sentencepiece too).
    assert tiny.to_string(ids[1:]) == ref["stories260K"]["cli_decoded"] == "▁" + text.replace(" ", "▁")
    # A byte-fallback piece alone (<0xDD>, id 224) is half a UTF-8 character: U+FFFD, not a UnicodeDecodeError.
    assert tiny.to_string([224]) == "\ufffd"


def test_tokenizer_errors():
    # A checkpoint without tokenizer.json takes token ids only.
    m = sinkscope.load(str(REPO / "tests" / "fixtures" / "model" / "random_gemma2"))
    with pytest.raises(sinkscope.Error, match="no tokenizer.json"):
        m.to_tokens("hello")


def test_theory_errors():
    g = np.ones((4, 3))
    with pytest.raises(sinkscope.Error, match="W_down"):
        sinkscope.channel_frobenius_norms(g, g, np.ones((4, 4)))
    with pytest.raises(sinkscope.Error, match="alpha must lie in"):
        sinkscope.cone_expected_norm_sq(2.0, 0.5)
    with pytest.raises(sinkscope.Error, match="zero vector"):
        sinkscope.fit_cone(np.zeros((3, 4)))
