#pragma once
// Weights as a checkpoint stores them (views into memory-mapped safetensors
// bytes, never copied) and their dequantization to float32: F32, BF16, F16,
// FP8 E4M3 with block `weight_scale_inv`, and MXFP4 (E2M1 values, E8M0 scales).

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "executor/tensor.h"
#include "model/dtype.h"
#include "model/safetensors.h"

namespace dayzero::executor {

// Scalar decoders.
float bf16_to_float(uint16_t bits);
float f16_to_float(uint16_t bits);  // IEEE 754 binary16
// OCP FP8 E4M3 ("fn": no infinities; S.1111.111 is NaN; bias 7; max 448).
float fp8_e4m3_to_float(uint8_t bits);
// fp8_e4m3_to_float of every code (the same values, without its ldexp per element).
const std::array<float, 256>& fp8_e4m3_table();
// OCP MX E2M1 (bias 1): the 16 codes are 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives (bit 3 = sign).
float e2m1_to_float(uint8_t nibble);
// OCP MX E8M0 scale: 2^(bits - 127); 0xFF is NaN.
float e8m0_to_float(uint8_t bits);

// A weight as stored. `shape` is the logical shape [.., rows, cols] (one matrix
// per leading index, e.g. per expert of a fused tensor).
struct StoredWeight {
  std::string name;
  model::StorageKind kind = model::StorageKind::plain;
  model::DType dtype = model::DType::f32;  // plain: element type
  std::vector<int64_t> shape;
  std::span<const std::byte> data;  // elements; FP8 codes; MXFP4 blocks [.., rows, cols/32, 16]
  std::span<const std::byte>
      scales;  // FP8: F32 scale_inv [.., ceil(rows/br), ceil(cols/bc)]; MXFP4: E8M0 [.., rows, cols/32];
               // INT4 (compressed-tensors pack-quantized): BF16 or F32 [rows, cols/group]
  int64_t block_rows = model::kFp8DefaultBlock;
  int64_t block_cols = model::kFp8DefaultBlock;
  int64_t group = 0;                              // INT4: inputs per scale
  model::DType scale_dtype = model::DType::bf16;  // INT4: BF16, or F32 (compressed-tensors keeps the model's dtype)
  bool input_major = false;                       // matrices are [in, out] (gpt-oss unquantized experts), not [out, in]

  int64_t rows() const { return shape.size() >= 2 ? shape[shape.size() - 2] : 1; }
  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
  int64_t matrices() const;  // product of the leading dims
};

// Finds `name` in a file: a plain or FP8 tensor (with `<name>_scale_inv`), an
// MXFP4 pair `<name>_blocks` + `<name>_scales`, or compressed-tensors' pack-quantized
// INT4 `<name>_packed` (I32 [rows, cols/8]: 8 values per word, lowest nibble first, each
// value + 8) with `<name>_scale` (BF16 [rows, cols/group]): w = (nibble - 8) * scale. Validates sizes; throws
// std::runtime_error naming the file and tensor.
StoredWeight find_weight(const model::SafetensorsFile& file, const std::string& name,
                         int64_t fp8_block_rows = model::kFp8DefaultBlock,
                         int64_t fp8_block_cols = model::kFp8DefaultBlock);

// Dequantizes matrix `index` (of matrices()) to float32 [rows, cols], as stored.
Tensor dequantize_matrix(const StoredWeight& w, int64_t index = 0);
// Dequantizes the whole weight to its logical shape.
Tensor dequantize(const StoredWeight& w);
// One row of matrix `index` into `out` (cols() values).
void dequantize_row(const StoredWeight& w, int64_t index, int64_t row, std::span<float> out);
// Columns [c0, c1) of that row (out has c1 - c0 values): reads only their bytes
// (and scales), so a TP shard of input columns reads only its part of each row.
void dequantize_row_range(const StoredWeight& w, int64_t index, int64_t row, int64_t c0, int64_t c1,
                          std::span<float> out);

}  // namespace dayzero::executor
