#include "cli/problems_command.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "cli/bench_command.h"
#include "cli/problem_lint_report.h"
#include "common/files.h"
#include "common/install_paths.h"
#include "common/npy.h"
#include "common/spec_loader.h"
#include "common/tensor_generator.h"
#include "kernels/cpu_model.h"
#include "worker/executor_child.h"

namespace kb::cli {
namespace {

namespace fs = std::filesystem;

struct ProblemsOptions {
  std::string problems_dir;
  std::string id;
  std::string suite;
  std::string preset;
  std::string dims;
  std::vector<std::string> files;
  uint64_t seed = 42;
  uint32_t trial = 0;
  std::string out_dir;
  bool json = false;
  std::vector<std::string> ids;  // lint: empty = every problem (or --suite's)
  int seeds = 3;
  std::string markdown;
  std::string device = "cpu";  // lint: cpu (the golden model, here), cuda (kb-executor) or auto
  std::string executor, reference_pack;
  int gpu = 0;
  double timeout = 1800;  // lint on cuda: per problem
};

[[noreturn]] void fail(const std::string& message, int code = 1) {
  std::fprintf(stderr, "kb: %s\n", message.c_str());
  throw CLI::RuntimeError(code);
}

ProblemCatalog load_catalog(const ProblemsOptions& o) {
  Result<ProblemCatalog> catalog = load_problem_catalog(o.problems_dir);
  if (!catalog.is_ok()) fail(catalog.status().message());
  return std::move(catalog).value();
}

std::shared_ptr<const ProblemSpec> find_spec(const ProblemCatalog& catalog, const std::string& id) {
  auto it = catalog.problems.find(id);
  if (it == catalog.problems.end()) fail("no problem '" + id + "' (see `kb problems list`)");
  return it->second;
}

// "N=2,C_in=3" -> dims, starting from the preset's when one is named.
Dims parse_dims(const ProblemSpec& spec, const std::string& preset, const std::string& text) {
  Dims dims;
  if (!preset.empty()) {
    const Preset* p = spec.find_preset(preset);
    if (!p) fail(spec.id + " has no preset '" + preset + "'");
    dims = p->dims;
  }
  Result<Dims> given = kb::parse_dims(text);
  if (!given.is_ok()) fail("--" + given.status().message());
  for (const auto& [name, value] : given.value()) dims[name] = value;
  return dims;
}

ProblemInstance instantiate(const ProblemsOptions& o, const ProblemCatalog& catalog) {
  auto spec = find_spec(catalog, o.id);
  std::string preset = o.preset.empty() ? "small" : o.preset;
  Result<ProblemInstance> inst = ProblemInstance::create(spec, parse_dims(*spec, preset, o.dims));
  if (!inst.is_ok()) fail(inst.status().message());
  return std::move(inst).value();
}

std::string dims_text(const Dims& dims) {
  std::string s;
  for (const auto& [k, v] : dims) s += (s.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return s;
}

void run_list(const ProblemsOptions& o) {
  ProblemCatalog catalog = load_catalog(o);
  std::vector<std::string> ids;
  if (o.suite.empty()) {
    for (const auto& [id, spec] : catalog.problems) ids.push_back(id);
  } else {
    Result<std::vector<std::string>> r = catalog.resolve(o.suite);
    if (!r.is_ok()) fail(r.status().message());
    ids = r.value();
  }
  std::printf("%-7s %-15s %9s %9s  %s\n", "id", "family", "GFLOP", "MB", "name");
  for (const std::string& id : ids) {
    auto inst = ProblemInstance::create(catalog.problems.at(id), "full");
    std::printf("%-7s %-15s %9.2f %9.1f  %s\n", id.c_str(), catalog.problems.at(id)->family.c_str(),
                inst->cost().flops / 1e9, inst->cost().min_bytes / 1e6,
                catalog.problems.at(id)->name.c_str());
  }
  if (o.suite.empty() && !catalog.suites.empty()) {
    std::printf("\nsuites:");
    for (const auto& [name, list] : catalog.suites) std::printf(" %s (%zu)", name.c_str(), list.size());
    std::printf("\n");
  }
}

void print_instance(const ProblemInstance& inst, const std::string& label) {
  std::printf("\n[%s] %s\n", label.c_str(), dims_text(inst.dims()).c_str());
  for (size_t i = 0; i < inst.spec().inputs.size(); ++i) {
    std::printf("  input  %-24s %s\n", inst.spec().inputs[i].name.c_str(),
                shape_to_string(inst.input_shapes()[i]).c_str());
  }
  for (size_t i = 0; i < inst.spec().params.size(); ++i) {
    std::printf("  param  %-24s %s\n", inst.spec().params[i].name.c_str(),
                shape_to_string(inst.param_shapes()[i]).c_str());
  }
  for (const GraphNode& n : inst.spec().graph) {
    std::printf("  %-6s %-24s %s = %s\n", n.op == "conv" || n.op == "conv_transpose" ? "layer" : "op",
                n.name.c_str(), n.output.c_str(), shape_to_string(inst.shape_of(n.output)).c_str());
  }
  std::printf("  output %s   %.3f GFLOP   %.1f MB min\n", shape_to_string(inst.output_shape()).c_str(),
              inst.cost().flops / 1e9, inst.cost().min_bytes / 1e6);
}

void run_show(const ProblemsOptions& o) {
  ProblemCatalog catalog = load_catalog(o);
  auto spec = find_spec(catalog, o.id);
  std::printf("%s  %s  (level %d, %s)\n%s\n", spec->id.c_str(), spec->name.c_str(), spec->level,
              spec->family.c_str(), spec->file.c_str());
  std::printf("tolerance: atol %g, rtol %g\n", spec->tolerance.atol, spec->tolerance.rtol);
  if (!spec->notes.empty()) std::printf("notes:\n%s", spec->notes.c_str());
  for (const Preset& p : spec->presets) {
    if (!o.preset.empty() && p.name != o.preset) continue;
    print_instance(ProblemInstance::create(spec, p.dims).value(), p.name);
  }
}

void run_validate(const ProblemsOptions& o) {
  if (o.files.empty()) {
    ProblemCatalog catalog = load_catalog(o);
    std::printf("%zu problems and %zu suites in %s are valid\n", catalog.problems.size(),
                catalog.suites.size(), o.problems_dir.c_str());
    return;
  }
  int bad = 0;
  for (const std::string& file : o.files) {
    const Result<std::string> text = read_file(file);
    if (!text.is_ok()) {
      std::fprintf(stderr, "%s: cannot open\n", file.c_str());
      ++bad;
      continue;
    }
    std::vector<SpecError> errors = validate_problem_spec(text.value(), file);
    for (const SpecError& e : errors) std::fprintf(stderr, "%s\n", e.to_string().c_str());
    if (errors.empty()) std::printf("%s: valid\n", file.c_str());
    bad += errors.empty() ? 0 : 1;
  }
  if (bad) fail(std::to_string(bad) + " of " + std::to_string(o.files.size()) + " files are invalid");
}

nlohmann::json write_tensor(const fs::path& dir, const std::string& name, const HostTensor<float>& t) {
  const std::string file = name + ".npy";
  if (Status s = write_npy((dir / file).string(), t); !s.is_ok()) fail(s.message());
  return {{"name", name}, {"shape", t.shape}, {"file", file}, {"checksum", tensor_checksum(t)}};
}

void run_generate(const ProblemsOptions& o) {
  ProblemCatalog catalog = load_catalog(o);
  ProblemInstance inst = instantiate(o, catalog);
  fs::create_directories(o.out_dir);
  const GeneratorKey key{o.seed, o.trial};
  nlohmann::json meta = {{"id", inst.spec().id}, {"dims", inst.dims()}, {"seed", o.seed},
                         {"trial", o.trial}, {"output_shape", inst.output_shape()}};
  meta["inputs"] = nlohmann::json::array();
  meta["params"] = nlohmann::json::array();
  for (size_t i = 0; i < inst.spec().inputs.size(); ++i) {
    meta["inputs"].push_back(write_tensor(o.out_dir, inst.spec().inputs[i].name, generate_input(inst, i, key)));
  }
  for (size_t i = 0; i < inst.spec().params.size(); ++i) {
    meta["params"].push_back(write_tensor(o.out_dir, inst.spec().params[i].name, generate_param(inst, i, key)));
  }
  std::ofstream(fs::path(o.out_dir) / "meta.json") << meta.dump(2) << "\n";
  std::printf("wrote %zu tensors of %s [%s] to %s\n", meta["inputs"].size() + meta["params"].size(),
              inst.spec().id.c_str(), dims_text(inst.dims()).c_str(), o.out_dir.c_str());
}

void run_golden(const ProblemsOptions& o) {
  ProblemCatalog catalog = load_catalog(o);
  ProblemInstance inst = instantiate(o, catalog);
  const CpuModel* model = find_cpu_model(inst.spec().id);
  if (!model) fail("no golden model is registered for " + inst.spec().id);
  TensorSet tensors = generate_tensors(inst, GeneratorKey{o.seed, o.trial});
  auto start = std::chrono::steady_clock::now();
  HostTensor<double> out = model->golden(inst, tensors);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  double sum = 0, abs_max = 0;
  for (double v : out.data) {
    sum += v;
    abs_max = std::max(abs_max, std::fabs(v));
  }
  std::printf("%s [%s] golden: output %s, sum %.10g, max|y| %.6g, %.1f ms\n", inst.spec().id.c_str(),
              dims_text(inst.dims()).c_str(), shape_to_string(out.shape).c_str(), sum, abs_max, ms);
  if (!o.out_dir.empty()) {
    if (Status s = write_npy(o.out_dir, out); !s.is_ok()) fail(s.message());
  }
}

// The ids named, or --suite's, or every problem.
std::vector<std::string> selected_ids(const ProblemsOptions& o, const ProblemCatalog& catalog) {
  if (!o.ids.empty()) return o.ids;
  if (!o.suite.empty()) {
    Result<std::vector<std::string>> r = catalog.resolve(o.suite);
    if (!r.is_ok()) fail(r.status().message());
    return r.value();
  }
  std::vector<std::string> ids;
  for (const auto& [id, spec] : catalog.problems) ids.push_back(id);
  return ids;
}

// The golden model, in this process.
LintReport lint_on_cpu(const ProblemCatalog& catalog, const std::string& id,
                       const std::string& preset, int seeds) {
  auto spec = find_spec(catalog, id);
  Result<ProblemInstance> inst = ProblemInstance::create(spec, parse_dims(*spec, preset, ""));
  if (!inst.is_ok()) fail(inst.status().message());
  const CpuModel* model = find_cpu_model(id);
  if (!model) fail("no golden model is registered for " + id);
  return lint_problem(inst.value(), model->golden, seeds);
}

// The reference pack on the GPU, in a kb-executor child (`kb` links no CUDA): its report and
// the device's environment.
Result<nlohmann::json> lint_in_executor(const ProblemsOptions& o, const std::string& id,
                                        const std::string& preset) {
  ExecutorLaunch launch;
  launch.executable = o.executor;
  launch.args = {"--lint",
                 "--problem",
                 id,
                 "--preset",
                 preset,
                 "--seeds",
                 std::to_string(o.seeds),
                 "--device",
                 o.device,
                 "--gpu",
                 std::to_string(o.gpu),
                 "--reference-pack",
                 o.reference_pack,
                 "--problems-dir",
                 o.problems_dir};
  launch.timeout_s = o.timeout;
  KB_ASSIGN_OR_RETURN(std::string text, run_for_output(launch));
  try {
    return nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    return Status::internal(std::string("unreadable lint report: ") + e.what());
  }
}

// What ran, for the Markdown's first lines: "the reference pack on an NVIDIA H200".
std::string reference_description(const ProblemsOptions& o, const nlohmann::json& environment) {
  if (o.device == "cpu") return "the golden model on the CPU";
  const std::string gpu = environment.value("/gpu/name"_json_pointer, std::string("a GPU"));
  return "the reference pack (libkbref.so) on " + gpu;
}

void resolve_lint_device(ProblemsOptions& o) {
  if (o.device == "auto") o.device = gpu_present() ? "cuda" : "cpu";
  if (o.preset.empty()) o.preset = o.device == "cuda" ? "full" : "small";
  if (o.device == "cpu") return;
  if (o.executor.empty()) o.executor = default_executor_path();
  if (o.reference_pack.empty()) o.reference_pack = default_reference_pack_path();
  if (o.reference_pack.empty()) {
    fail("no reference pack (libkbref.so) found: pass --reference-pack or set KB_REFERENCE_PACK",
         2);
  }
}

void run_lint(ProblemsOptions o) {
  ProblemCatalog catalog = load_catalog(o);
  if (o.seeds < 2) fail("--seeds must be at least 2 (a constant output is judged across seeds)");
  resolve_lint_device(o);
  std::vector<LintReport> reports;
  std::vector<std::string> failed;
  nlohmann::json environment;
  for (const std::string& id : selected_ids(o, catalog)) {
    if (o.device == "cpu") {
      reports.push_back(lint_on_cpu(catalog, id, o.preset, o.seeds));
    } else {
      find_spec(catalog, id);
      Result<nlohmann::json> out = lint_in_executor(o, id, o.preset);
      Result<LintReport> report = out.is_ok()
                                      ? lint_report_from_json(out->value("lint", nlohmann::json()))
                                      : Result<LintReport>(out.status());
      if (!report.is_ok()) {
        // One problem the executor could not lint is reported, and the others go on.
        std::fprintf(stderr, "kb: %s not linted: %s\n", id.c_str(),
                     report.status().message().c_str());
        failed.push_back(id);
        continue;
      }
      environment = out->value("environment", nlohmann::json::object());
      reports.push_back(std::move(report).value());
    }
    std::printf("%s", lint_text(reports.back()).c_str());
    std::fflush(stdout);
  }
  if (!o.markdown.empty()) {
    std::string command = "kb problems lint" + (o.device == "cpu" ? "" : " --device " + o.device) +
                          " --preset " + o.preset + " --seeds " + std::to_string(o.seeds);
    for (const std::string& id : o.ids) command += " " + id;
    std::ofstream(o.markdown) << lint_markdown(reports, o.preset, command,
                                               reference_description(o, environment));
    std::printf("wrote %s\n", o.markdown.c_str());
  }
  if (!failed.empty()) fail(std::to_string(failed.size()) + " problems not linted (see above)");
}

void add_instance_options(CLI::App* cmd, ProblemsOptions& o) {
  cmd->add_option("id", o.id, "Problem id, e.g. L2_017")->required();
  cmd->add_option("--preset", o.preset, "Size preset (default: small)");
  cmd->add_option("--dims", o.dims, "Dims as NAME=INT,... (on top of --preset when given)");
  cmd->add_option("--seed", o.seed, "Generator seed")->capture_default_str();
  cmd->add_option("--trial", o.trial, "Generator trial")->capture_default_str();
}

}  // namespace

void add_problems_command(CLI::App& app) {
  auto o = std::make_shared<ProblemsOptions>();
  o->problems_dir = default_problems_dir();
  CLI::App* problems = app.add_subcommand("problems", "The suite's problem specs");
  problems->add_option("--problems-dir", o->problems_dir, "Directory of problem specs")
      ->capture_default_str();
  problems->require_subcommand(1);

  CLI::App* list = problems->add_subcommand("list", "List problems (GFLOP and MB at the full preset)");
  list->add_option("--suite", o->suite, "Only this suite's problems");
  list->callback([o] { run_list(*o); });

  CLI::App* show = problems->add_subcommand("show", "Show a spec with shapes and cost per preset");
  show->add_option("id", o->id, "Problem id")->required();
  show->add_option("--preset", o->preset, "Only this preset");
  show->callback([o] { run_show(*o); });

  CLI::App* validate = problems->add_subcommand("validate", "Validate spec files (default: the directory)");
  validate->add_option("files", o->files, "Spec files");
  validate->callback([o] { run_validate(*o); });

  CLI::App* generate = problems->add_subcommand("generate", "Write a problem's inputs and parameters as .npy");
  add_instance_options(generate, *o);
  generate->add_option("--out", o->out_dir, "Output directory")->required();
  generate->callback([o] { run_generate(*o); });

  CLI::App* golden = problems->add_subcommand("run-golden", "Run a problem's golden model");
  add_instance_options(golden, *o);
  golden->add_option("--out", o->out_dir, "Write the output as .npy (float64) to this file");
  golden->callback([o] { run_golden(*o); });

  CLI::App* lint = problems->add_subcommand(
      "lint", "How strong each problem's check is: zero share, range, std, sensitivity, cheats");
  lint->add_option("ids", o->ids, "Problem ids (default: --suite's, or every problem)");
  lint->add_option("--suite", o->suite, "Only this suite's problems");
  lint->add_option(
          "--device", o->device,
          "cpu: the golden model here; cuda: the reference pack on the GPU, one kb-executor "
          "per problem; auto: cuda when a GPU is present")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}))
      ->capture_default_str();
  lint->add_option("--preset", o->preset, "Size preset (default: full on cuda, small on cpu)");
  lint->add_option("--seeds", o->seeds, "Seeds to run the reference at")->capture_default_str();
  lint->add_option("--markdown", o->markdown, "Write the suite's table to this file");
  lint->add_option("--gpu", o->gpu, "cuda: GPU ordinal")->capture_default_str();
  lint->add_option("--executor", o->executor, "cuda: kb-executor binary (default: beside kb)");
  lint->add_option(
      "--reference-pack", o->reference_pack,
      "cuda: the reference pack (default: $KB_REFERENCE_PACK or the build's libkbref.so)");
  lint->add_option("--timeout", o->timeout, "cuda: deadline per problem, seconds")
      ->capture_default_str();
  lint->callback([o] { run_lint(*o); });
}

}  // namespace kb::cli
