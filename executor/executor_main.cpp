// kb-executor: runs one job in its own process and writes its JobResult as JSON. The worker and
// `kb bench` spawn one per job, so that a crash, an illegal address or a hang in a kernel ends
// this process only; they turn that into a `crashed` or `timeout` result and go on.
//
// Two packs (docs/design.md#kernel-packs): --reference-pack, the trusted reference
// pack (default: the installation's libkbref.so), checked against its pin (--reference-sha256, else
// the PATH.sha256 written at build time), and --pack, the candidate pack whose custom variants are
// judged (checked against --pack-sha256 when given: the worker names cached packs by hash). Each
// is re-hashed from the bytes that are then loaded (executor/kernel_pack.h).
//
// --output-fd N writes the result to an inherited descriptor (the worker's unlinked mkstemp file),
// so that a sandboxed executor needs no writable path outside its private /tmp.
//
// `kb-executor --describe --device cuda --gpu N` (or `--device cpu`) prints the device's identity
// (executor/device_identity.h) instead of running a job: kb-worker asks this process, so that the
// worker itself never loads CUDA and survives a broken driver.
//
// `kb-executor --lint --problem ID --preset full --seeds K --device cuda` runs the problem lint on
// the reference pack alone (executor/reference_lint.h) and writes {"lint": report, "environment":
// the device's} instead of a JobResult; exit status 1 with the reason on stderr when it cannot.
// `kb problems lint --device cuda` asks this process, so that `kb` never links CUDA.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

#include "common/files.h"
#include "common/install_paths.h"
#include "common/job_result.h"
#include "common/spec_loader.h"
#include "executor/device_identity.h"
#include "executor/executor.h"
#include "executor/kernel_pack.h"
#include "executor/reference_lint.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

struct Options {
  std::string pack, pack_sha256, reference_pack, reference_sha256, problem, preset, dims,
      device = "cuda", output, problems_dir;
  uint64_t seed = 0;
  int gpu = 0, output_fd = -1, seeds = 3;
  bool describe = false, lint = false;
  kb::ExecutorConfig config;
};

kb::JobResult failed(const Options& o, kb::JobStatus status, const std::string& message) {
  return kb::JobResult::failure(o.problem, o.preset, o.device, status, message);
}

// The reference pack, only with the hash it is pinned to.
kb::Result<kb::KernelPack> open_reference_pack(const Options& o) {
  const std::string path =
      o.reference_pack.empty() ? kb::default_reference_pack_path() : o.reference_pack;
  if (path.empty()) return kb::Status::not_found("no libkbref.so found; pass --reference-pack");
  std::string pin = o.reference_sha256;
  if (pin.empty()) {
    KB_ASSIGN_OR_RETURN(pin, kb::read_pack_pin(path));
  }
  return kb::KernelPack::open(path, pin);
}

// The device of --device: the reference slot runs `reference`, the custom slot `candidate`.
kb::Result<std::unique_ptr<kb::ExecutionDevice>> make_device(const Options& o,
                                                             const kb::KernelPack& reference,
                                                             const kb::KernelPack& candidate) {
  if (o.device == "cpu") return kb::make_cpu_device(reference, candidate);
  return kb::make_cuda_device(reference, candidate, o.gpu);
}

kb::JobResult run(const Options& o) {
  Clock::time_point start = Clock::now();
  auto catalog = kb::load_problem_catalog(o.problems_dir);
  if (!catalog.is_ok()) return failed(o, kb::JobStatus::kRuntimeError, catalog.status().message());
  auto it = catalog->problems.find(o.problem);
  if (it == catalog->problems.end())
    return failed(o, kb::JobStatus::kUnsupported, "no problem " + o.problem);
  Clock::time_point pack_start = Clock::now();
  auto reference = open_reference_pack(o);
  if (!reference.is_ok())
    return failed(o, kb::JobStatus::kRuntimeError,
                  "reference pack: " + reference.status().message());
  auto pack = kb::KernelPack::open(o.pack, o.pack_sha256);
  if (!pack.is_ok()) return failed(o, kb::JobStatus::kRuntimeError, pack.status().message());
  const double pack_ms = ms_since(pack_start);
  Clock::time_point init_start = Clock::now();
  auto made = make_device(o, reference.value(), pack.value());
  if (!made.is_ok()) {
    // The device, not the kernel: the worker reports an infrastructure failure (job_runner.h).
    kb::JobResult r = failed(o, kb::JobStatus::kRuntimeError, made.status().message());
    r.stop_reason = "device_init_failed";
    return r;
  }
  std::unique_ptr<kb::ExecutionDevice> device = std::move(made).value();
  const double init_ms = ms_since(init_start);
  auto dims = kb::parse_dims(o.dims);
  if (!dims.is_ok()) return failed(o, kb::JobStatus::kUnsupported, dims.status().message());
  auto spec_yaml = kb::read_file(it->second->file);
  if (!spec_yaml.is_ok())
    return failed(o, kb::JobStatus::kRuntimeError, spec_yaml.status().message());
  kb::JobRequest request{it->second,
                         std::move(spec_yaml).value(),
                         o.dims.empty() ? o.preset : "",
                         dims.value(),
                         o.seed,
                         o.config,
                         std::nullopt};  // the timing secret: drawn for this job
  Clock::time_point job_start = Clock::now();
  kb::JobResult result = kb::execute_job(*device, request);
  result.overhead_ms["load_specs"] =
      std::chrono::duration<double, std::milli>(pack_start - start).count();
  result.overhead_ms["pack_load"] = pack_ms;
  result.overhead_ms["device_init"] = init_ms;
  result.overhead_ms["job"] = ms_since(job_start);
  Clock::time_point teardown_start = Clock::now();
  device.reset();
  result.overhead_ms["teardown"] = ms_since(teardown_start);
  return result;
}

// --lint: the reference pack in both slots (no candidate is involved), the lint's report as JSON.
kb::Result<nlohmann::json> lint(const Options& o) {
  KB_ASSIGN_OR_RETURN(kb::ProblemCatalog catalog, kb::load_problem_catalog(o.problems_dir));
  auto it = catalog.problems.find(o.problem);
  if (it == catalog.problems.end()) return kb::Status::not_found("no problem " + o.problem);
  KB_ASSIGN_OR_RETURN(kb::Dims dims, kb::parse_dims(o.dims));
  kb::Result<kb::ProblemInstance> problem = o.dims.empty()
                                                ? kb::ProblemInstance::create(it->second, o.preset)
                                                : kb::ProblemInstance::create(it->second, dims);
  if (!problem.is_ok()) return problem.status();
  KB_ASSIGN_OR_RETURN(std::string spec_yaml, kb::read_file(it->second->file));
  KB_ASSIGN_OR_RETURN(kb::KernelPack reference, open_reference_pack(o));
  KB_ASSIGN_OR_RETURN(std::unique_ptr<kb::ExecutionDevice> device,
                      make_device(o, reference, reference));
  KB_ASSIGN_OR_RETURN(kb::LintReport report,
                      kb::lint_reference(*device, problem.value(), spec_yaml, o.seeds));
  return nlohmann::json{{"lint", kb::to_json(report)}, {"environment", device->environment()}};
}

void write_output(const Options& o, const std::string& json) {
  if (o.output_fd >= 0) {
    size_t done = 0;
    while (done < json.size()) {
      const ssize_t n = write(o.output_fd, json.data() + done, json.size() - done);
      if (n <= 0) break;  // the worker then sees a short result and reports it
      done += static_cast<size_t>(n);
    }
  } else if (o.output.empty()) {
    std::fputs(json.c_str(), stdout);
  } else {
    std::ofstream(o.output) << json;
  }
}

// Exit status 0 with the identity, 1 (and the reason on stderr) when the device cannot be read.
int describe(const Options& o) {
  nlohmann::json identity;
  if (o.device == "cpu") {
    identity = kb::describe_cpu_device();
  } else {
    auto cuda = kb::describe_cuda_device(o.gpu);
    if (!cuda.is_ok()) {
      std::fprintf(stderr, "kb-executor: %s\n", cuda.status().message().c_str());
      return 1;
    }
    identity = std::move(cuda).value();
  }
  identity["software"]["kbfleet"] = KB_VERSION;
  write_output(o, identity.dump() + "\n");
  return 0;
}

int run_lint(const Options& o) {
  kb::Result<nlohmann::json> report = kb::Status::internal("not run");
  try {
    report = lint(o);
  } catch (const std::exception& e) {  // out of host memory at a large preset, for one
    report = kb::Status::internal(e.what());
  }
  if (!report.is_ok()) {
    std::fprintf(stderr, "kb-executor: lint of %s: %s\n", o.problem.c_str(),
                 report.status().message().c_str());
    return 1;
  }
  write_output(o, report->dump() + "\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  o.problems_dir = kb::default_problems_dir();
  CLI::App app{"kb-executor: run one kbfleet job and write its result as JSON"};
  app.add_flag("--describe", o.describe, "Print the device's identity (JSON) and exit");
  app.add_flag("--lint", o.lint,
               "Run the problem lint on the reference pack (--problem, --preset or --dims, "
               "--seeds) and print its report (JSON) instead of running a job");
  app.add_option("--seeds", o.seeds, "--lint: seeds to run the reference at (at least 2)")
      ->capture_default_str();
  auto* pack = app.add_option("--pack", o.pack, "Candidate kernel pack (.so): the custom variants");
  app.add_option("--pack-sha256", o.pack_sha256,
                 "Load --pack only when its bytes have this sha256");
  app.add_option(
      "--reference-pack", o.reference_pack,
      "Trusted reference pack (default: $KB_REFERENCE_PACK or the installation's libkbref.so)");
  app.add_option("--reference-sha256", o.reference_sha256,
                 "The reference pack's pin (default: the hash recorded in REFERENCE_PACK.sha256)");
  auto* problem = app.add_option("--problem", o.problem, "Problem id");
  app.add_option("--preset", o.preset, "Size preset")->default_val("full");
  app.add_option("--dims", o.dims, "Dims NAME=INT,... instead of a preset");
  auto* seed = app.add_option("--seed", o.seed, "Run seed (inputs of every trial derive from it)");
  app.add_option("--device", o.device, "cuda or cpu")->check(CLI::IsMember({"cuda", "cpu"}));
  app.add_option("--gpu", o.gpu, "GPU ordinal");
  app.add_option("--trials", o.config.correctness_trials, "Correctness trials")
      ->capture_default_str();
  app.add_option("--time-cap", o.config.stopping.time_cap_s, "Timing cap, seconds")
      ->capture_default_str();
  app.add_option("--min-rounds", o.config.stopping.min_rounds, "Minimum timing rounds")
      ->capture_default_str();
  app.add_option("--target-ci", o.config.stopping.target_relative_half_width,
                 "Stop at this CI half-width")
      ->capture_default_str();
  app.add_flag("--aa", o.config.aa, "Time the reference against itself (A/A)");
  app.add_flag(
      "--no-launch-trace", o.config.no_launch_trace,
      "Skip the launch trace (own-kernel and side-stream checks) so that a profiler such as "
      "ncu can hold CUPTI; recorded in the result");
  app.add_option(
         "--trace-fraction", o.config.trace_fraction,
         "Share of timing rounds run under the launch trace: 1 traces every round and keeps its "
         "samples; in [0.25, 1) a seeded random choice of rounds is traced and their samples "
         "discarded")
      ->check(CLI::Range(kb::kMinTraceFraction, 1.0))
      ->capture_default_str();
  app.add_option("--export", o.config.export_dir,
                 "Write each correctness trial's inputs and outputs (.npy) here");
  app.add_option("--output", o.output, "Write the JSON here instead of stdout");
  app.add_option("--output-fd", o.output_fd, "Write the JSON to this inherited file descriptor");
  app.add_option("--problems-dir", o.problems_dir, "Directory of problem specs");
  CLI11_PARSE(app, argc, argv);
  if (o.describe) return describe(o);
  if (o.lint) {
    if (problem->count() == 0) {
      std::fprintf(stderr, "kb-executor: --lint needs --problem\n");
      return 2;
    }
    return run_lint(o);
  }
  for (const CLI::Option* required : {pack, problem, seed}) {
    if (required->count() == 0) {
      std::fprintf(stderr, "kb-executor: %s is required\n", required->get_name().c_str());
      return 2;
    }
  }
  kb::JobResult result;
  try {
    result = run(o);
  } catch (const std::exception& e) {
    result = failed(o, kb::JobStatus::kRuntimeError, e.what());
  }
  write_output(o, kb::to_json(result).dump() + "\n");
  return 0;
}
