// sinkscope io module: reading checkpoints and exchanging arrays with the Python peers.
//   io/mapped_file.hpp  MappedFile: read-only mmap of a whole file, bounds-checked byte access
//   io/ggml_types.hpp   GgmlType: ggml type ids, names, block sizes
//   io/dequantize.hpp   dequantize<T>: F32/F16/BF16/Q8_0/Q4_0/Q4_1/Q5_0/Q5_1/Q4_K/Q5_K/Q6_K -> float/double
//   io/gguf.hpp         GgufFile: GGUF v2/v3 metadata (as JSON), tensor table, dequantized loads
//   io/safetensors.hpp  SafetensorsFile, SafetensorsCheckpoint (single file or sharded index)
//   io/npy.hpp          write_npy (float32) / read_npy<T> (f4, f8, i4, i8)
//   io/memory.hpp       memory a checkpoint's weights need as float32/64, memory available, require_weights_fit
#pragma once
#include "sinkscope/io/mapped_file.hpp"
#include "sinkscope/io/ggml_types.hpp"
#include "sinkscope/io/dequantize.hpp"
#include "sinkscope/io/gguf.hpp"
#include "sinkscope/io/safetensors.hpp"
#include "sinkscope/io/npy.hpp"
#include "sinkscope/io/memory.hpp"
