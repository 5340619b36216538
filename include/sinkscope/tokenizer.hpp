// The tokenizer module: byte-level BPE and SentencePiece, from GGUF metadata or tokenizer.json; Tokenizer
// (tokenizer/tokenizer.hpp) picks the kind the file describes.
#pragma once
#include "sinkscope/tokenizer/byte_level.hpp"
#include "sinkscope/tokenizer/pretokenizer.hpp"
#include "sinkscope/tokenizer/bpe.hpp"
#include "sinkscope/tokenizer/sentencepiece.hpp"
#include "sinkscope/tokenizer/tokenizer.hpp"
#include "sinkscope/tokenizer/bos.hpp"
