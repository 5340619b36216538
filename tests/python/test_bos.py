"""Model.bos and the bos= argument of to_tokens and stats: the CLI's --bos auto|on|off, resolved against the
checkpoint (SmolLM2's GGUF: tokenizer.ggml.add_bos_token = false, BOS id 1; stories260K: BOS id 1, no
add_bos_token key in an SPM vocabulary, so BOS first as llama.cpp reads it)."""
import pytest

import sinkscope


def test_smollm2_auto_is_no_bos(smollm2):
    b = smollm2.bos()
    assert b["mode"] == "auto" and b["use"] is False and b["id"] == 1
    assert b["source"].startswith("tokenizer.ggml.add_bos_token = false in ")
    text = "The quick brown fox"
    plain = smollm2.to_tokens(text)
    assert plain[0] != 1
    assert list(smollm2.to_tokens(text, bos=None)) == list(plain)
    assert list(smollm2.to_tokens(text, bos="off")) == list(plain)
    assert list(smollm2.to_tokens(text, bos="on")) == [1] + list(plain)
    assert list(smollm2.to_tokens(text, bos=True)) == [1] + list(plain)


def test_tiny_auto_reads_the_absent_key(tiny):
    b = tiny.bos("auto")
    assert b["use"] is True and b["id"] == 1  # an SPM vocabulary without the key: llama.cpp's default
    assert b["source"].startswith("absent: no tokenizer.ggml.add_bos_token key in ")
    assert "llama.cpp's default" in b["source"]
    assert tiny.bos(True)["use"] is True and tiny.bos(True)["source"] == "--bos on"


def test_bad_bos_mode(tiny):
    with pytest.raises(sinkscope.Error, match="bos must be"):
        tiny.bos("yes")
