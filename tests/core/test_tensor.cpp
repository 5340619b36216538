// core/tensor.hpp: Mat is row-major, the layout in which PyTorch's safetensors and NumPy's C order store a
// linear map (out × in), so a checkpoint's bytes are a Mat without a transpose; Vec is a column, and
// Mat · Vec is W x as torch.nn.functional.linear computes it. The reference values are those the
// `safetensors` Python package read (tests/fixtures/io/safetensors.expected.json, scripts/make_io_fixtures.py).
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include <sinkscope/core/tensor.hpp>
#include <sinkscope/io/safetensors.hpp>

#include "test_paths.hpp"

using namespace sinkscope;

TEST_CASE("tensor: a (2 × 3) float32 tensor's bytes are the Mat, and Mat · Vec is W x", "[tensor][reference]") {
    std::ifstream in(test::fixture("io/safetensors.expected.json"));
    const nlohmann::json expected = nlohmann::json::parse(in)["single"]["tensors"]["a.f32"];
    REQUIRE(expected["shape"] == nlohmann::json::array({2, 3}));
    const io::SafetensorsFile f(test::fixture("io/st_single/model.safetensors"));
    const std::vector<float> flat = f.load<float>("a.f32");
    const Eigen::Map<const Mat<float>> w(flat.data(), 2, 3);
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j) CHECK(w(i, j) == expected["values"][std::size_t(3 * i + j)].get<float>());
    static_assert(Mat<float>::IsRowMajor, "Mat must be row-major");
    static_assert(Vec<float>::ColsAtCompileTime == 1, "Vec must be a column");
    Vec<float> x(3);
    x << 1.0f, 0.0f, 0.0f;  // W e_0 is W's first column
    const Vec<float> y = w * x;
    CHECK(y(0) == expected["values"][0].get<float>());
    CHECK(y(1) == expected["values"][3].get<float>());
}
