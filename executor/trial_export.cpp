#include "executor/trial_export.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "common/npy.h"

namespace kb {

Status export_trial(const std::string& dir, const ProblemInstance& problem, GeneratorKey key,
                    const std::vector<float>& reference, const std::vector<float>& custom) {
  namespace fs = std::filesystem;
  const fs::path out = fs::path(dir) / problem.spec().id / ("trial" + std::to_string(key.trial));
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) return Status::io_error(out.string() + ": " + ec.message());
  const TensorSet tensors = generate_tensors(problem, key);
  for (const auto& [name, tensor] : tensors.all()) {
    KB_TRY(write_npy((out / (name + ".npy")).string(), tensor));
  }
  for (const auto& [name, values] :
       {std::pair{"reference", &reference}, std::pair{"custom", &custom}}) {
    HostTensor<float> t(problem.output_shape());
    t.data = *values;
    KB_TRY(write_npy((out / (std::string(name) + ".npy")).string(), t));
  }
  nlohmann::json meta = {{"problem", problem.spec().id},
                         {"dims", problem.dims()},
                         {"seed", key.seed},
                         {"trial", key.trial},
                         {"atol", problem.spec().tolerance.atol},
                         {"rtol", problem.spec().tolerance.rtol}};
  std::ofstream(out / "meta.json") << meta.dump(2) << "\n";
  return Status::ok();
}

}  // namespace kb
