// The GPU graph reference's memory, as eager's caching allocator would hold it: a chain of
// same-sized ops ping-pongs between two blocks, an op's temporaries are blocks of the same pool,
// and a graph that only reshapes its input still writes the output. (Its numbers against the
// golden model are reference_test.cu's.)
#include <gtest/gtest.h>

#include <vector>

#include "common/spec_loader.h"
#include "kernels/eager/graph_reference.h"
#include "tests/gpu/problem_cases.h"
#include "tests/support/assert_ok.h"
#include "tests/support/probe_specs.h"

namespace kb::gpu_test {
namespace {

int64_t pool_bytes_at(const std::string& id, const std::string& preset) {
  const ProblemInstance p = ProblemInstance::create(catalog().problems.at(id), preset).value();
  graph::GraphReference reference;
  const Status s = reference.setup(p, nullptr);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return reference.pool_bytes();
}

int64_t bytes_of(const std::string& id, const std::string& preset, const std::string& tensor) {
  const ProblemInstance p = ProblemInstance::create(catalog().problems.at(id), preset).value();
  return element_count(p.shape_of(tensor)) * static_cast<int64_t>(sizeof(float));
}

// conv_transpose -> add -> min -> gelu -> multiply -> out: each input dies after its op.
TEST(GraphReferenceMemory, AChainOfSameSizedOpsHoldsTwoBlocks) {
  EXPECT_EQ(pool_bytes_at("L2_093", "small"), 2 * bytes_of("L2_093", "small", "y"));
}

// log -> kl_div: the log's output, kl_div's three (N, D) terms and its one-element sum.
TEST(GraphReferenceMemory, AnOpsTemporariesComeFromThePool) {
  const int64_t rows = bytes_of("L1_098", "small", "log_predictions");
  EXPECT_EQ(pool_bytes_at("L1_098", "small"), 4 * rows + static_cast<int64_t>(sizeof(float)));
}

// Frees after last use keep L3_031 at full size to the attention's own temporaries (the two
// (N*heads, L, L) score tensors and the head-averaged weights) plus small blocks.
TEST(GraphReferenceMemory, FullSizeAttentionHoldsLittleBeyondItsScores) {
  const int64_t scores = int64_t{2} * 4 * 16384 * 16384 * 4;  // N*heads*L*L floats, 8.6 GB
  const int64_t averaged = int64_t{2} * 16384 * 16384 * 4;
  const int64_t pool = pool_bytes_at("L3_031", "full");
  EXPECT_GE(pool, 2 * scores + averaged);
  EXPECT_LT(pool, 2 * scores + averaged + (int64_t{1} << 30));
}

TEST(GraphReference, AGraphThatOnlyReshapesItsInputCopiesItToTheOutput) {
  const ProblemInstance p = testing::probe_instance(testing::kViewOnlySpec);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  std::vector<float> got(15);
  {
    CaseTensors tensors(p, GeneratorKey{1, 0}, stream);
    const DeviceTensor out = tensors.output(p.output_shape(), stream);
    graph::GraphReference reference;
    KB_ASSERT_OK(reference.setup(p, stream));
    const Status s = reference.run(tensors.args(out), stream);
    ASSERT_TRUE(s.is_ok()) << s.message();
    ASSERT_EQ(cudaMemcpyAsync(got.data(), out.data, got.size() * sizeof(float),
                              cudaMemcpyDeviceToHost, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  }
  KB_CUDA_WARN(cudaStreamDestroy(stream));
  const HostTensor<float> x = generate_tensors(p, GeneratorKey{1, 0}).get("x");
  EXPECT_EQ(got, x.data);
}

}  // namespace
}  // namespace kb::gpu_test
