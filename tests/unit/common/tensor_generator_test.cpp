// The deterministic generator (common/tensor_generator.h, common/philox_stream.h): determinism,
// distributions, PyTorch's init bounds, softmax rows, checksums, and golden bit patterns that guard
// against generator drift (the fixtures and the device generator depend on these exact bits).
#include "common/tensor_generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/parallel_for.h"
#include "common/spec_loader.h"

namespace kb {
namespace {

// One tensor of every generator and init. ct.weight has a transposed conv's layout
// (C_in, C_out/groups, kH, kW) = (16, 6, 3, 5): PyTorch's fan-in is 6*3*5 = 90.
constexpr char kProbeSpec[] = R"yaml(id: L1_900
name: GeneratorProbe
level: 1
family: activation
dims: [N, C, R, L]
presets:
  full: {N: 100, C: 1000, R: 8, L: 50}
  small: {N: 2, C: 3, R: 2, L: 5}
inputs:
  - {name: u, shape: [N, C], generator: uniform}
  - {name: n, shape: [N, C], generator: normal}
  - {name: s, shape: [R, L], generator: softmax_uniform}
  - {name: ss, shape: [R, L], generator: softmax_scaled_uniform}
parameters:
  - {name: ct.weight, shape: [16, 6, 3, 5], init: kaiming_uniform}
  - {name: ct.bias, shape: [6], init: fan_in_uniform, fan_in_of: ct.weight}
  - {name: attn.in_proj_weight, shape: [48, 16], init: xavier_uniform}
  - {name: norm.weight, shape: [C], init: ones}
  - {name: norm.bias, shape: [C], init: zeros}
  - {name: extra, shape: [C], init: normal}
graph:
  - {name: act, op: relu, in: [u], out: out}
output: out
)yaml";

enum Input : size_t { kU, kN, kS, kSs };
enum Param : size_t { kCtWeight, kCtBias, kInProj, kNormWeight, kNormBias, kExtra };

ProblemInstance probe(const std::string& id = "L1_900", const std::string& preset = "full") {
  std::string text = kProbeSpec;
  text.replace(text.find("L1_900"), 6, id);
  Result<std::shared_ptr<const ProblemSpec>> spec = parse_problem_spec(text, "probe.yaml");
  if (!spec.is_ok()) {
    ADD_FAILURE() << spec.status().message();
    std::abort();
  }
  return ProblemInstance::create(spec.value(), preset).value();
}

uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

std::string hex(uint32_t u) {
  char text[11];
  std::snprintf(text, sizeof text, "0x%08x", u);
  return text;
}

bool same_bits(const HostTensor<float>& a, const HostTensor<float>& b) {
  return a.shape == b.shape &&
         std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0;
}

double mean(const HostTensor<float>& t) {
  double sum = 0;
  for (float v : t.data) sum += v;
  return sum / static_cast<double>(t.data.size());
}

double max_abs(const HostTensor<float>& t) {
  double m = 0;
  for (float v : t.data) m = std::max(m, std::fabs(static_cast<double>(v)));
  return m;
}

const GeneratorKey kKey{42, 0};

// ---- determinism ---------------------------------------------------------------------------

TEST(TensorGenerator, SameKeyGivesIdenticalBits) {
  ProblemInstance a = probe();
  ProblemInstance b = probe();
  for (size_t i = 0; i < a.spec().inputs.size(); ++i) {
    EXPECT_TRUE(same_bits(generate_input(a, i, kKey), generate_input(b, i, kKey))) << "input " << i;
  }
  for (size_t i = 0; i < a.spec().params.size(); ++i) {
    EXPECT_TRUE(same_bits(generate_param(a, i, kKey), generate_param(b, i, kKey))) << "param " << i;
  }
}

// realize() fills chunks on several threads (common/parallel_for.h) and draws one Philox block per
// four uniforms: every element must still be philox_stream.h's formula of (key, i), at any thread
// count. u has 100000 elements: two chunks and a tail that ends inside a block.
TEST(TensorGenerator, EveryThreadCountGivesTheElementFormulasBits) {
  const ProblemInstance inst = probe();
  TensorRecipe shifted = input_recipe(inst, kU, GeneratorKey{42, 0, Distribution::kShift});
  TensorRecipe odd = input_recipe(inst, kN, kKey);
  odd.shape = {100003};
  TensorRecipe symmetric = param_recipe(inst, kCtWeight, kKey);
  symmetric.shape = {65539};
  const std::vector<TensorRecipe> recipes = {input_recipe(inst, kU, kKey), odd, symmetric, shifted};
  for (size_t k = 0; k < recipes.size(); ++k) {
    const TensorRecipe& r = recipes[k];
    set_parallel_threads(1);
    const HostTensor<float> serial = realize(r);
    set_parallel_threads(3);
    const HostTensor<float> parallel = realize(r);
    set_parallel_threads(0);
    EXPECT_TRUE(same_bits(serial, parallel)) << "recipe " << k;
    for (uint64_t i = 0; i < static_cast<uint64_t>(parallel.numel()); ++i) {
      float expected = 0;
      switch (r.kind) {
        case RecipeKind::kUniform:
          expected = philox::uniform(r.key, i);
          break;
        case RecipeKind::kNormal:
          expected = philox::normal(r.key, i);
          break;
        default:
          expected = philox::symmetric_uniform(r.key, i, r.bound);
          break;
      }
      if (r.moved) expected = philox::affine(expected, r.post_scale, r.post_shift);
      if (bits(parallel.data[i]) != bits(expected)) {
        ADD_FAILURE() << "recipe " << k << " element " << i;
        break;
      }
    }
  }
}

TEST(TensorGenerator, EveryPartOfTheKeyChangesTheValues) {
  ProblemInstance inst = probe();
  const HostTensor<float> base = generate_input(inst, kU, kKey);
  EXPECT_FALSE(same_bits(base, generate_input(inst, kU, GeneratorKey{42, 1}))) << "trial";
  EXPECT_FALSE(same_bits(base, generate_input(inst, kU, GeneratorKey{43, 0}))) << "seed, low word";
  EXPECT_FALSE(same_bits(base, generate_input(inst, kU, GeneratorKey{42 + (1ull << 32), 0})))
      << "seed, high word";
  TensorRecipe renamed = input_recipe(inst, kU, kKey);
  renamed.key.stream = tensor_stream_id("L1_900", "v");
  EXPECT_FALSE(same_bits(base, realize(renamed))) << "tensor name";
  EXPECT_FALSE(same_bits(base, generate_input(probe("L1_901"), kU, kKey))) << "problem id";
}

TEST(TensorGenerator, StreamIdIsFnv1aOfProblemSlashTensor) {
  EXPECT_EQ(tensor_stream_id("", ""), 0x2a0c975eu);  // FNV-1a 32 of "/"
  EXPECT_NE(tensor_stream_id("L2_017", "x"), tensor_stream_id("L2_01", "7x"));
  EXPECT_NE(tensor_stream_id("L2_017", "x"), tensor_stream_id("L2_017", "y"));
  ProblemInstance inst = probe();
  const philox::StreamKey key = input_recipe(inst, kU, GeneratorKey{0x1122334455667788ull, 9}).key;
  EXPECT_EQ(key.seed_lo, 0x55667788u);
  EXPECT_EQ(key.seed_hi, 0x11223344u);
  EXPECT_EQ(key.stream, tensor_stream_id("L1_900", "u"));
  EXPECT_EQ(key.trial, 9u);
}

// ---- distributions -------------------------------------------------------------------------

TEST(TensorGenerator, UniformIsIn0To1With24BitValues) {
  HostTensor<float> u = generate_input(probe(), kU, kKey);
  ASSERT_EQ(u.numel(), 100000);
  for (float v : u.data) {
    ASSERT_GE(v, 0.0f);
    ASSERT_LT(v, 1.0f);
    const double scaled = static_cast<double>(v) * 16777216.0;  // 2^24
    ASSERT_EQ(scaled, std::floor(scaled)) << v << " is not a multiple of 2^-24";
  }
  EXPECT_NEAR(mean(u), 0.5, 0.01);
}

TEST(TensorGenerator, NormalHasMeanZeroAndVarianceOne) {
  HostTensor<float> n = generate_input(probe(), kN, kKey);
  ASSERT_EQ(n.numel(), 100000);
  double sum = 0, sum_sq = 0;
  int64_t within_one = 0;
  for (float v : n.data) {
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
    sum_sq += static_cast<double>(v) * v;
    within_one += std::fabs(v) < 1.0f;
  }
  const double m = sum / 1e5;
  EXPECT_NEAR(m, 0.0, 0.02);
  EXPECT_NEAR(sum_sq / 1e5 - m * m, 1.0, 0.03);
  EXPECT_NEAR(static_cast<double>(within_one) / 1e5, 0.6827, 0.01);
}

TEST(TensorGenerator, NormalInitMatchesTheNormalInput) {
  ProblemInstance inst = probe();
  EXPECT_EQ(param_recipe(inst, kExtra, kKey).kind, RecipeKind::kNormal);
  EXPECT_NEAR(mean(generate_param(inst, kExtra, kKey)), 0.0, 0.15);  // 1000 samples
}

// ---- parameter inits -----------------------------------------------------------------------

TEST(TensorGenerator, KaimingBoundUsesPyTorchsTransposedConvFanIn) {
  ProblemInstance inst = probe();
  const TensorRecipe recipe = param_recipe(inst, kCtWeight, kKey);
  EXPECT_EQ(recipe.kind, RecipeKind::kSymmetricUniform);
  const float bound = static_cast<float>(1.0 / std::sqrt(90.0));  // shape[1] * 3 * 5
  EXPECT_EQ(recipe.bound, bound);
  HostTensor<float> w = realize(recipe);
  EXPECT_LE(max_abs(w), bound);
  EXPECT_GT(max_abs(w), 0.98 * bound);  // 1440 draws
  EXPECT_NEAR(mean(w), 0.0, 0.1 * bound);
}

TEST(TensorGenerator, FanInUniformTakesTheBoundOfTheNamedWeight) {
  ProblemInstance inst = probe();
  const TensorRecipe recipe = param_recipe(inst, kCtBias, kKey);
  EXPECT_EQ(recipe.kind, RecipeKind::kSymmetricUniform);
  EXPECT_EQ(recipe.bound, static_cast<float>(1.0 / std::sqrt(90.0)));
  EXPECT_LE(max_abs(realize(recipe)), recipe.bound);
}

TEST(TensorGenerator, XavierBound) {
  ProblemInstance inst = probe();
  const TensorRecipe recipe = param_recipe(inst, kInProj, kKey);
  const float bound = static_cast<float>(std::sqrt(6.0 / (16 + 48)));
  EXPECT_EQ(recipe.bound, bound);
  HostTensor<float> w = realize(recipe);
  EXPECT_LE(max_abs(w), bound);
  EXPECT_GT(max_abs(w), 0.98 * bound);  // 768 draws
}

TEST(TensorGenerator, OnesAndZeros) {
  ProblemInstance inst = probe();
  HostTensor<float> ones = generate_param(inst, kNormWeight, kKey);
  HostTensor<float> zeros = generate_param(inst, kNormBias, kKey);
  ASSERT_EQ(ones.shape, (Shape{1000}));
  for (float v : ones.data) ASSERT_EQ(v, 1.0f);
  for (float v : zeros.data) ASSERT_EQ(bits(v), 0u);  // +0.0, not -0.0
}

// ---- robustness distributions ---------------------------------------------------------------

GeneratorKey moved_key(Distribution d) { return GeneratorKey{42, 0, d}; }

TEST(TensorGenerator, ShiftScaleAndCenteredMoveEveryInputAndNoParameter) {
  ProblemInstance inst = probe();
  const HostTensor<float> u = generate_input(inst, kU, kKey);
  const HostTensor<float> n = generate_input(inst, kN, kKey);
  const struct {
    Distribution d;
    float a, b, lo, hi;
  } kCases[] = {{Distribution::kShift, 1, 100, 100, 101},
                {Distribution::kScale, 1000, 0, 0, 1000},
                {Distribution::kCentered, 1, -0.5f, -0.5f, 0.5f}};
  for (const auto& c : kCases) {
    const HostTensor<float> mu = generate_input(inst, kU, moved_key(c.d));
    const HostTensor<float> mn = generate_input(inst, kN, moved_key(c.d));
    for (size_t i = 0; i < u.data.size(); ++i) {
      ASSERT_EQ(mu.data[i], c.a * u.data[i] + c.b) << to_string(c.d) << " element " << i;
      ASSERT_EQ(mn.data[i], c.a * n.data[i] + c.b) << to_string(c.d) << " element " << i;
      ASSERT_GE(mu.data[i], c.lo);
      ASSERT_LT(mu.data[i], c.hi);
    }
    for (size_t p = 0; p < inst.spec().params.size(); ++p) {
      EXPECT_TRUE(same_bits(generate_param(inst, p, kKey), generate_param(inst, p, moved_key(c.d))))
          << to_string(c.d) << " param " << p;
    }
  }
}

TEST(TensorGenerator, RandomAffineDrawsOnesAndZerosAroundTheirDefaults) {
  ProblemInstance inst = probe();
  const GeneratorKey key = moved_key(Distribution::kRandomAffine);
  const HostTensor<float> gamma = generate_param(inst, kNormWeight, key);
  const HostTensor<float> beta = generate_param(inst, kNormBias, key);
  EXPECT_GE(*std::min_element(gamma.data.begin(), gamma.data.end()), 0.5f);
  EXPECT_LT(*std::max_element(gamma.data.begin(), gamma.data.end()), 1.5f);
  EXPECT_LT(max_abs(beta), 0.5);
  EXPECT_GT(max_abs(beta), 0.49);  // 1000 draws: the whole range, not a constant
  EXPECT_NEAR(mean(gamma), 1.0, 0.03);
  EXPECT_NEAR(mean(beta), 0.0, 0.03);
  for (Param p : {kCtWeight, kCtBias, kInProj, kExtra}) {
    EXPECT_TRUE(same_bits(generate_param(inst, p, kKey), generate_param(inst, p, key))) << "param " << p;
  }
  for (size_t i = 0; i < inst.spec().inputs.size(); ++i) {
    EXPECT_TRUE(same_bits(generate_input(inst, i, kKey), generate_input(inst, i, key))) << "input " << i;
  }
}

TEST(TensorGenerator, TheDefaultDistributionMovesNothing) {
  ProblemInstance inst = probe();
  for (size_t i = 0; i < inst.spec().inputs.size(); ++i) EXPECT_FALSE(input_recipe(inst, i, kKey).moved);
  for (size_t i = 0; i < inst.spec().params.size(); ++i) EXPECT_FALSE(param_recipe(inst, i, kKey).moved);
}

// ---- softmax inputs ------------------------------------------------------------------------

void expect_softmax_rows(const HostTensor<float>& t) {
  ASSERT_EQ(t.rank(), 2);
  const int64_t rows = t.shape[0], len = t.shape[1];
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t j = 0; j < len; ++j) {
      const float v = t.data[static_cast<size_t>(r * len + j)];
      ASSERT_GT(v, 0.0f);
      sum += v;
    }
    EXPECT_NEAR(sum, 1.0, 1e-6) << "row " << r;
  }
}

TEST(TensorGenerator, SoftmaxRowsArePositiveAndSumToOne) {
  ProblemInstance inst = probe();
  expect_softmax_rows(generate_input(inst, kS, kKey));
  expect_softmax_rows(generate_input(inst, kSs, kKey));
}

TEST(TensorGenerator, ScaledSoftmaxDrawsAScaleAndDiffersFromTheUnscaled) {
  ProblemInstance inst = probe();
  EXPECT_EQ(input_recipe(inst, kS, kKey).scale, 1.0f);
  TensorRecipe scaled = input_recipe(inst, kSs, kKey);
  EXPECT_GT(scaled.scale, 0.0f);
  EXPECT_LT(scaled.scale, 1.0f);
  EXPECT_NE(input_recipe(inst, kSs, GeneratorKey{42, 1}).scale, scaled.scale);

  TensorRecipe unscaled = scaled;
  unscaled.scale = 1.0f;
  HostTensor<float> a = realize(scaled);
  HostTensor<float> b = realize(unscaled);
  EXPECT_FALSE(same_bits(a, b));
  // A scale < 1 flattens the rows: the spread of each row shrinks.
  auto spread = [](const HostTensor<float>& t) {
    auto [lo, hi] = std::minmax_element(t.data.begin(), t.data.begin() + t.shape[1]);
    return *hi - *lo;
  };
  EXPECT_LT(spread(a), spread(b));
}

// ---- checksums -----------------------------------------------------------------------------

TEST(TensorGenerator, ChecksumChangesWhenOneValueChanges) {
  HostTensor<float> t = generate_input(probe("L1_900", "small"), kU, kKey);
  const std::string sum = tensor_checksum(t);
  EXPECT_EQ(sum.size(), 16u);
  EXPECT_EQ(sum.find_first_not_of("0123456789abcdef"), std::string::npos) << sum;
  EXPECT_EQ(tensor_checksum(t), sum);
  HostTensor<float> changed = t;
  changed.data[3] = std::nextafter(changed.data[3], 2.0f);
  EXPECT_NE(tensor_checksum(changed), sum);
  HostTensor<float> empty;
  EXPECT_EQ(tensor_checksum(empty), "cbf29ce484222325");  // the FNV-1a 64 offset basis
}

// ---- golden values: these bits must not change -----------------------------------------------

// If one of these fails, the generator changed: every fixture checksum, every stored result and
// the device generator's agreement are affected. Fix the generator, do not update the values.
const philox::StreamKey kGoldenKey{42, 0, tensor_stream_id("L2_017", "x"), 0};

TEST(TensorGeneratorGolden, StreamId) {
  EXPECT_EQ(hex(tensor_stream_id("L2_017", "x")), "0x38dfe2b7");
}

TEST(TensorGeneratorGolden, UniformBits) {
  const char* expected[] = {"0x3e8892a2", "0x3f03a5ad", "0x3ecb7db0", "0x3d20d2d0", "0x3ec546a0"};
  const uint64_t index[] = {0, 1, 2, 3, 1000003};
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_EQ(hex(bits(philox::uniform(kGoldenKey, index[k]))), expected[k])
        << "element " << index[k];
  }
}

TEST(TensorGeneratorGolden, NormalBits) {
  const char* expected[] = {"0xbfcf41fc", "0x3fc0a3cb", "0xbfb8a4ce", "0x3f0bacf4", "0xbf6d61c8"};
  const uint64_t index[] = {0, 1, 2, 3, 1000003};
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_EQ(hex(bits(philox::normal(kGoldenKey, index[k]))), expected[k])
        << "element " << index[k];
  }
}

TEST(TensorGeneratorGolden, SoftmaxAndSymmetricUniformBits) {
  const philox::SoftmaxRowStats st = philox::softmax_row_stats(kGoldenKey, 1, 7, 0.5f);
  EXPECT_EQ(hex(bits(philox::softmax_element(kGoldenKey, 1, 7, 3, 0.5f, st))), "0x3e348371");
  EXPECT_EQ(hex(bits(philox::symmetric_uniform(kGoldenKey, 5, 0.125f))), "0x3de51a3c");
}

TEST(TensorGeneratorGolden, GeneratedTensorChecksum) {
  EXPECT_EQ(tensor_checksum(generate_input(probe("L1_900", "small"), kN, kKey)),
            "c1751db65c2c52d2");
}

}  // namespace
}  // namespace kb
