// The shapes of `kb bench --sweep N` (and of the GPU tests' sweep cases): N random valid dims per
// problem, drawn the way a user's own shapes differ from the presets, to show whether a custom
// kernel is fast at every shape or at the preset only (issue 15's shape robustness).
//
// Rules, from the spec's dims and its full preset (names as the specs write them):
//   - the first dim is the batch: 1 to the full preset's value;
//   - a dim named C... is a channel count: not a multiple of 8 while the spec's constraints allow
//     it (groups, heads and tied shapes are the spec's own: a draw the spec rejects is redrawn),
//     up to max(full, 16), so that a preset of 3 channels also meets 5 or 13;
//   - a dim whose full value is at most 8 and is not a channel count (ShuffleNet's G) is kept;
//   - every other dim (spatial, matrix) is odd, from 3 to the full value.
// SweepRegime::kAlternate (the default) alternates between "any" (log-uniform over the whole
// range, mostly small shapes) and "large" (every dim in the top half of its range, usually >= 25%
// of the preset's FLOPs, where a custom is expected to beat the reference clearly).
// SweepRegime::kMixed draws each dim "any" or "large" by a coin, at least one of each: skinny
// shapes, small in one dim and large in the others (a GEMM of 17 rows and a large B, an image of
// one channel and many pixels), which neither regime above draws often and which tiles sized for
// the preset handle worst. A draw is kept only when ProblemInstance::create accepts it and its
// FLOPs and bytes do not exceed the full preset's.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/problem_spec.h"

namespace kb {

enum class SweepRegime { kAlternate, kMixed };
// "alternate" / "mixed"; parse_sweep_regime fails naming the accepted words.
std::string to_string(SweepRegime regime);
Result<SweepRegime> parse_sweep_regime(const std::string& text);

struct SweepShape {
  Dims dims;
  double flop_share = 0;  // FLOPs / the swept preset's FLOPs
  bool large = false;     // drawn in the "large" regime (every dim in its top half)
};

// `count` shapes of `spec` under `preset` (the "full preset" above: `full` on a GPU, `small` on
// the CPU device), deterministic for (`spec.id`, `seed`). Fewer when the spec admits fewer
// distinct draws (a fixed-size problem); fails when the spec has no such preset.
Result<std::vector<SweepShape>> draw_sweep_shapes(std::shared_ptr<const ProblemSpec> spec,
                                                  const std::string& preset, int count,
                                                  uint64_t seed,
                                                  SweepRegime regime = SweepRegime::kAlternate);

// "N=3,C_in=5,...", in the spec's dim order: kb-executor's --dims.
std::string dims_argument(const ProblemSpec& spec, const Dims& dims);

}  // namespace kb
