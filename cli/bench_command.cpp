#include "cli/bench_command.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>

#include "cli/pack_file.h"
#include "cli/sweep_report.h"
#include "common/install_paths.h"
#include "common/job_result.h"
#include "common/spec_loader.h"
#include "worker/executor_child.h"

namespace kb::cli {
namespace {

namespace fs = std::filesystem;

struct BenchOptions {
  std::string problems = "kernelbench22";
  std::string device = "auto";
  std::string preset;
  std::string pack;            // the candidate pack: its custom variants are judged
  std::string reference_pack;  // the trusted reference pack (pinned by PATH.sha256)
  std::string executor;
  std::string problems_dir;
  std::string json_path;
  std::string export_dir;
  uint64_t seed = 0;
  int gpu = 0;
  int trials = 5;
  int sweep = 0;  // --sweep N: N random shapes per problem instead of the preset
  std::string sweep_regime = "alternate";  // --sweep-regime (common/shape_sweep.h)
  std::string dims;  // --dims "N=2,C=5,...": the user's own shape instead of the preset
  double trace_fraction = kMinTraceFraction;  // kb-executor --trace-fraction
  bool no_launch_trace = false;
  double time_cap = 0;  // 0: 15 s per job on the GPU, 3 s on the CPU device (correctness runs)
  double timeout = 600;
  bool aa = false;
  bool json = false;
};

// `dims` ("N=3,...") replaces the preset when not empty.
std::vector<std::string> executor_args(const BenchOptions& o, const std::string& id, uint64_t seed,
                                       const std::string& dims = "") {
  std::vector<std::string> a = {"--pack", o.pack, "--reference-pack", o.reference_pack, "--problem", id, "--preset", o.preset,
                                "--seed", std::to_string(seed), "--device", o.device,
                                "--gpu", std::to_string(o.gpu), "--trials", std::to_string(o.trials),
                                "--time-cap", std::to_string(o.time_cap), "--problems-dir", o.problems_dir};
  if (!dims.empty()) a.insert(a.end(), {"--dims", dims});
  if (o.aa) a.push_back("--aa");
  a.insert(a.end(), {"--trace-fraction", std::to_string(o.trace_fraction)});
  if (o.no_launch_trace) a.push_back("--no-launch-trace");
  if (!o.export_dir.empty()) {
    a.push_back("--export");
    a.push_back(o.export_dir);
  }
  return a;
}

std::string fmt_ms(double ms) {
  char b[32];
  if (ms > 0) {
    std::snprintf(b, sizeof b, "%9.3f", ms);
  } else {
    std::snprintf(b, sizeof b, "%9s", "-");
  }
  return b;
}

// The status column: an unverified result (weaker than the fleet's policy) never reads `ok`.
std::string status_label(const JobResult& r) {
  if (!r.verified && r.status == JobStatus::kOk) return "unverified";
  return to_string(r.status);
}

void print_row(const JobResult& r) {
  char speedup[48] = "        -";
  if (r.speedup.speedup > 0 && r.custom.summary.median > 0) {
    std::snprintf(speedup, sizeof speedup, "%6.3fx [%5.3f, %5.3f]", r.speedup.speedup, r.speedup.ci_low,
                  std::isfinite(r.speedup.ci_high) ? r.speedup.ci_high : 0.0);
  }
  std::printf("%-7s %-16s %9.2e %s %s  %-26s %8.2f %8.1f %7.2f  %s\n", r.problem_id.c_str(),
              status_label(r).c_str(), r.errors.max_abs_error, fmt_ms(r.reference.summary.median).c_str(),
              fmt_ms(r.custom.summary.median).c_str(), speedup, r.custom_tflops, r.custom_gbps,
              r.custom_over_floor, r.stop_reason.c_str());
}

void print_summary(const std::vector<JobResult>& results, const std::string& device) {
  int ok = 0, faster = 0, unverified = 0;
  double log_sum = 0;
  for (const JobResult& r : results) {
    unverified += !r.verified;
    if (r.status != JobStatus::kOk) continue;
    ++ok;
    faster += r.speedup.speedup > 1.0;
    log_sum += std::log(r.speedup.speedup);
  }
  const double n = static_cast<double>(results.size());
  std::printf("\n%d of %zu correct; fast_1 (correct and faster than the reference) = %.3f; "
              "geomean speedup over correct = %s   [device: %s]\n",
              ok, results.size(), n > 0 ? faster / n : 0.0,
              ok ? std::to_string(std::exp(log_sum / ok)).c_str() : "-", device.c_str());
  if (unverified > 0) {
    std::printf("%d results are unverified (fewer than 3 correctness trials, or the launch trace off): the "
                "fleet refuses such jobs.\n", unverified);
  }
  // The timing gate keeps the host's issue time out of the samples (docs/verification.md): say
  // where a custom's run() takes longer on the host than its work on the GPU.
  for (const JobResult& r : results) {
    const nlohmann::json issue = r.environment.value("host_issue_ms", nlohmann::json::object());
    const double host_ms = issue.value("custom", 0.0), gpu_ms = r.custom.summary.median;
    if (device == "cpu" || gpu_ms <= 0 || host_ms <= gpu_ms) continue;
    std::printf(
        "%s: the custom's run() takes %.3f ms on the host to issue %.3f ms of GPU work "
        "(the reference's: %.3f ms): host-bound in a loop\n",
        r.problem_id.c_str(), host_ms, gpu_ms, issue.value("reference", 0.0));
  }
  if (device == "cpu") {
    std::printf(
        "CPU device: reference = golden model in double, custom = the same algorithm in fp32; "
        "times are CPU times, not GPU figures.\n");
  }
}

// One kb-executor process for `id` at the preset (or `dims`); its wall time in overhead_ms.
JobResult run_job(const BenchOptions& o, const std::string& id, const std::string& dims) {
  const auto job_start = std::chrono::steady_clock::now();
  ExecutorLaunch launch;
  launch.executable = o.executor;
  launch.args = executor_args(o, id, o.seed, dims);
  launch.timeout_s = o.timeout;
  launch.problem_id = id;
  launch.preset = dims.empty() ? o.preset : dims;
  launch.device_kind = o.device;
  JobResult r = run_executor_child(launch);
  r.overhead_ms["wall"] =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - job_start)
          .count();
  return r;
}

// --sweep N: N random valid shapes per problem (cli/shape_sweep.h), reference and custom at each.
void run_sweep(const BenchOptions& o, const ProblemCatalog& catalog,
               const std::vector<std::string>& ids) {
  std::vector<std::pair<std::string, SweepShape>> jobs;
  const SweepRegime regime = parse_sweep_regime(o.sweep_regime).value();  // checked by CLI11
  for (const std::string& id : ids) {
    auto shapes = draw_sweep_shapes(catalog.problems.at(id), o.preset, o.sweep, o.seed, regime);
    if (!shapes.is_ok()) {
      std::fprintf(stderr, "kb: %s\n", shapes.status().message().c_str());
      throw CLI::RuntimeError(2);
    }
    for (SweepShape& s : shapes.value()) jobs.emplace_back(id, std::move(s));
  }
  std::vector<SweepRow> rows;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < jobs.size(); ++i) {
    const auto& [id, shape] = jobs[i];
    const std::string dims = dims_argument(*catalog.problems.at(id), shape.dims);
    JobResult r = run_job(o, id, dims);
    std::fprintf(stderr, "[%zu/%zu] %-7s %-44s %-12s %6.3fx %7.1f s\n", i + 1, jobs.size(),
                 id.c_str(), dims.c_str(), status_label(r).c_str(), r.speedup.speedup,
                 r.overhead_ms["wall"].get<double>() / 1e3);
    rows.push_back({id, dims, shape, std::move(r)});
  }
  const double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!o.json_path.empty()) {
    nlohmann::json all = {{"device", o.device},
                          {"sweep", o.sweep},
                          {"regime", to_string(regime)},
                          {"seed", o.seed},
                          {"pack", o.pack},
                          {"wall_s", total},
                          {"rows", sweep_rows_to_json(rows)}};
    std::ofstream(o.json_path) << all.dump(1) << "\n";
  }
  std::printf("%s", sweep_text(rows).c_str());
  std::printf("wall time %.1f s, seed %llu, regime %s\n", total,
              static_cast<unsigned long long>(o.seed), to_string(regime).c_str());
}

void run_bench(BenchOptions o) {
  auto catalog = load_problem_catalog(o.problems_dir);
  if (!catalog.is_ok()) {
    std::fprintf(stderr, "kb: %s\n", catalog.status().message().c_str());
    throw CLI::RuntimeError(1);
  }
  auto ids = catalog->resolve(o.problems);
  if (!ids.is_ok()) {
    std::fprintf(stderr, "kb: %s\n", ids.status().message().c_str());
    throw CLI::RuntimeError(2);
  }
  if (o.device == "auto") o.device = gpu_present() ? "cuda" : "cpu";
  if (o.preset.empty()) o.preset = o.device == "cuda" ? "full" : "small";
  if (o.time_cap <= 0) o.time_cap = o.device == "cuda" ? (o.sweep > 0 ? 3 : 15) : 3;
  if (o.pack.empty()) o.pack = default_pack_path();  // cli/pack_file.h: KB_PACK_PATH, beside kb
  if (o.pack.empty()) o.pack = "libkbpack.so";        // the dynamic loader's search path
  if (o.reference_pack.empty()) o.reference_pack = default_reference_pack_path();
  if (o.reference_pack.empty()) {
    std::fprintf(stderr, "kb: no reference pack (libkbref.so) found: pass --reference-pack or set KB_REFERENCE_PACK\n");
    throw CLI::RuntimeError(2);
  }
  if (o.executor.empty()) o.executor = default_executor_path();
  if (o.seed == 0) o.seed = std::random_device{}() | (uint64_t{std::random_device{}()} << 32);
  std::fprintf(stderr, "kb bench: %zu problems on %s, %s %s, pack %s, reference pack %s\n",
               ids->size(), o.device.c_str(), o.dims.empty() ? "preset" : "dims",
               (o.dims.empty() ? o.preset : o.dims).c_str(), o.pack.c_str(),
               o.reference_pack.c_str());
  if (o.sweep > 0) return run_sweep(o, catalog.value(), ids.value());
  std::vector<JobResult> results;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < ids->size(); ++i) {
    const std::string& id = ids.value()[i];
    JobResult r = run_job(o, id, o.dims);
    std::fprintf(stderr, "[%zu/%zu] %-7s %-16s %7.1f s  %s\n", i + 1, ids->size(), id.c_str(),
                 status_label(r).c_str(), r.overhead_ms["wall"].get<double>() / 1e3,
                 (r.verified ? r.message : r.unverified_reason).substr(0, 100).c_str());
    results.push_back(std::move(r));
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.json || !o.json_path.empty()) {
    nlohmann::json all = {{"device", o.device},
                          {"preset", o.dims.empty() ? o.preset : o.dims},
                          {"seed", o.seed},
                          {"pack", o.pack},
                          {"reference_pack", o.reference_pack},
                          {"wall_s", total},
                          {"results", nlohmann::json::array()}};
    for (const JobResult& r : results) all["results"].push_back(to_json(r));
    if (!o.json_path.empty()) std::ofstream(o.json_path) << all.dump(1) << "\n";
    if (o.json) std::printf("%s\n", all.dump(1).c_str());
    if (o.json) return;
  }
  std::printf("%-7s %-16s %9s %9s %9s  %-26s %8s %8s %7s  %s\n", "problem", "status", "max_err", "ref_ms",
              "cust_ms", "speedup [95% CI]", "TFLOP/s", "GB/s", "x_floor", "stop");
  for (const JobResult& r : results) print_row(r);
  print_summary(results, o.device);
  std::printf("wall time %.1f s\n", total);
}

}  // namespace

bool gpu_present() {
  return fs::exists("/dev/nvidiactl") || fs::exists("/dev/nvidia0");
}

void add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  o->problems_dir = default_problems_dir();
  CLI::App* bench = app.add_subcommand("bench", "Verify and time problems on the local GPU (or CPU)");
  bench->add_option("problems", o->problems, "A suite name or comma-separated problem ids")->capture_default_str();
  bench->add_option("--device", o->device, "cuda, cpu or auto")->check(CLI::IsMember({"auto", "cuda", "cpu"}))
      ->capture_default_str();
  bench->add_option("--preset", o->preset, "Size preset (default: full on cuda, small on cpu)");
  bench->add_option("--pack", o->pack,
                    "Candidate pack with the custom variants (default: $KB_PACK_PATH or the build's libkbpack.so)");
  bench->add_option("--reference-pack", o->reference_pack,
                    "Trusted reference pack (default: $KB_REFERENCE_PACK or the build's libkbref.so; checked "
                    "against PACK.sha256)");
  bench->add_option("--executor", o->executor, "kb-executor binary (default: beside kb)");
  bench->add_option("--problems-dir", o->problems_dir, "Directory of problem specs")->capture_default_str();
  bench->add_option("--seed", o->seed, "Run seed (default: a fresh secret one)");
  bench->add_option("--gpu", o->gpu, "GPU ordinal")->capture_default_str();
  bench->add_option("--trials", o->trials, "Correctness trials")->capture_default_str();
  bench->add_option("--time-cap", o->time_cap, "Timing cap per job, seconds (default: 15 on cuda, 3 on cpu)");
  bench->add_option("--timeout", o->timeout, "Deadline per job process, seconds")->capture_default_str();
  bench
      ->add_option(
          "--sweep", o->sweep,
          "Shape robustness: N random valid shapes per problem under the preset (odd sizes, "
          "batch 1 up, channels no tile divides) instead of the preset itself; prints each shape "
          "and the worst "
          "speedup per problem")
      ->check(CLI::Range(1, 1000));
  bench
      ->add_option("--sweep-regime", o->sweep_regime,
                   "How --sweep draws: alternate (whole range, then every dim in its top half) or "
                   "mixed (skinny: each dim small or large by a coin, at least one of each)")
      ->check(CLI::IsMember({"alternate", "mixed"}))
      ->needs("--sweep")
      ->capture_default_str();
  bench
      ->add_option("--dims", o->dims,
                   "Your own shape instead of the preset, e.g. N=2,C_in=5,H=33,W=17 (every dim "
                   "of the spec; checked by its shape inference)")
      ->excludes("--sweep");
  bench->add_flag("--aa", o->aa, "A/A: time each reference against itself");
  bench->add_option("--trace-fraction", o->trace_fraction,
                    "Share of timing rounds traced (1: all, samples kept; 0.25..1: random rounds, their "
                    "samples discarded)")
      ->check(CLI::Range(0.25, 1.0))->capture_default_str();
  bench->add_flag("--no-launch-trace", o->no_launch_trace,
                  "Skip the launch trace (for a profiler holding CUPTI); results are labelled unverified");
  bench->add_flag("--json", o->json, "Print all results as JSON");
  bench->add_option("--export", o->export_dir,
                    "Write each correctness trial's inputs, parameters and both outputs as .npy here");
  bench->add_option("--json-out", o->json_path, "Also write all results as JSON to this file");
  bench->callback([o] { run_bench(*o); });
}

namespace {

// The rows of a `kb bench --sweep --json-out` file, or exit 2 saying why not.
std::vector<SweepRow> read_sweep_file(const std::string& path) {
  std::ifstream in(path);
  if (!in.is_open()) {
    std::fprintf(stderr, "kb: cannot open %s\n", path.c_str());
    throw CLI::RuntimeError(2);
  }
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("rows")) {
    std::fprintf(stderr, "kb: %s: not the JSON of a `kb bench --sweep --json-out` run\n",
                 path.c_str());
    throw CLI::RuntimeError(2);
  }
  Result<std::vector<SweepRow>> rows = sweep_rows_from_json(j.at("rows"));
  if (!rows.is_ok()) {
    std::fprintf(stderr, "kb: %s: %s\n", path.c_str(), rows.status().message().c_str());
    throw CLI::RuntimeError(2);
  }
  return std::move(rows).value();
}

}  // namespace

void add_sweep_table_command(CLI::App& app) {
  auto files = std::make_shared<std::vector<std::string>>();
  CLI::App* table = app.add_subcommand(
      "sweep-table",
      "The tables of a `kb bench --sweep --json-out` file; with a second file, the worst speedup "
      "per problem and the sweep goal before and after");
  table->add_option("files", *files, "SWEEP_JSON [AFTER_JSON]")->required()->expected(1, 2);
  table->callback([files] {
    const std::vector<SweepRow> first = read_sweep_file(files->front());
    if (files->size() == 1) {
      std::printf("%s", sweep_text(first).c_str());
      return;
    }
    std::printf("%s", sweep_comparison_text(first, read_sweep_file(files->back())).c_str());
  });
}

}  // namespace kb::cli
