// The tokenizer module: byte-level BPE that gives Hugging Face's token ids (GGUF metadata or tokenizer.json).
#pragma once
#include "sinkscope/tokenizer/byte_level.hpp"
#include "sinkscope/tokenizer/pretokenizer.hpp"
#include "sinkscope/tokenizer/bpe.hpp"
#include "sinkscope/tokenizer/bos.hpp"
