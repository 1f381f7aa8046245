// Writes one correctness trial to disk for debugging a mismatch in numpy or PyTorch: every input
// and parameter (regenerated on the host, bit-identical to what the device used), the reference
// and custom outputs, as .npy, plus meta.json (problem, dims, seed, trial, tolerance).
//
// Layout: DIR/<problem id>/trial<N>/{<tensor name>.npy, reference.npy, custom.npy, meta.json}.
// Thread safety: free function; different directories may be written concurrently.
#pragma once

#include <string>
#include <vector>

#include "common/problem_spec.h"
#include "common/status.h"
#include "common/tensor_generator.h"

namespace kb {

Status export_trial(const std::string& dir, const ProblemInstance& problem, GeneratorKey key,
                    const std::vector<float>& reference, const std::vector<float>& custom);

}  // namespace kb
