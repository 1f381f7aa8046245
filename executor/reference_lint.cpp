#include "executor/reference_lint.h"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kb {
namespace {

// The lint calls the reference as a plain function; a device failure in it becomes an exception
// that lint_reference turns back into a status.
struct DeviceFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The output as the device's fp32 values: the lint reads them as doubles without a copy.
HostTensor<float> run_reference(ExecutionDevice& device, const ProblemInstance& problem,
                                const TensorSet& tensors) {
  constexpr int kSet = 0;
  auto check = [](const Status& s, const char* step) {
    if (!s.is_ok()) throw DeviceFailure(std::string(step) + ": " + s.message());
  };
  check(device.upload(kSet, problem, tensors), "upload");
  check(device.run(Slot::kReference, kSet), "reference");
  check(device.synchronize(), "reference");
  Result<std::vector<float>> out = device.read_output(Slot::kReference);
  check(out.status(), "read output");
  HostTensor<float> result;
  result.shape = problem.output_shape();
  result.data = std::move(out).value();
  const auto elements = static_cast<size_t>(element_count(result.shape));
  if (result.data.size() < elements) {
    throw DeviceFailure("read output: " + std::to_string(result.data.size()) + " values for " +
                        std::to_string(elements) + " elements");
  }
  result.data.resize(elements);
  return result;
}

}  // namespace

Result<LintReport> lint_reference(ExecutionDevice& device, const ProblemInstance& problem,
                                  const std::string& spec_yaml, int seeds) {
  if (seeds < 2) return Status::invalid_argument("the lint needs at least 2 seeds");
  const CreateOutcome created =
      device.create(Slot::kReference, device.pack_variant(Slot::kReference), problem, spec_yaml);
  if (created.code != KB_PACK_OK) {
    return Status::failed_precondition("the reference pack cannot run " + problem.spec().id + ": " +
                                       created.message);
  }
  try {
    return lint_problem(
        problem,
        [&device](const ProblemInstance& p, const TensorSet& t) {
          return run_reference(device, p, t);
        },
        seeds);
  } catch (const DeviceFailure& e) {
    return Status::internal(e.what());
  }
}

}  // namespace kb
