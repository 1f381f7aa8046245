#include "cli/fleet_commands.h"

#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/cli_app.h"
#include "cli/fleet_options.h"
#include "cli/fleet_report.h"
#include "cli/results_summary.h"
#include "cli/submit_command.h"
#include "cli/watch_command.h"
#include "common/curve_keys.h"
#include "common/protocol_messages.h"

namespace kb::cli {
namespace {

struct RunCommandOptions {
  FleetOptions fleet;
  int64_t run_id = 0;
  int last = 20;
};

template <typename T>
T value_or_fail(Result<T> result) {
  if (!result.is_ok()) fail(result.status());
  return std::move(result).value();
}

void print_json(const nlohmann::json& json) { std::printf("%s\n", json.dump(1).c_str()); }

void add_runs(CLI::App& app) {
  auto o = std::make_shared<RunCommandOptions>();
  CLI::App* c = app.add_subcommand("runs", "List recent runs");
  c->add_option("--last", o->last, "How many runs, newest first")->check(CLI::Range(1, 1000000))->capture_default_str();
  add_fleet_options(c, o->fleet, Needs::kDatabase);
  c->callback([o] {
    auto reader = open_db_or_fail(resolve_or_fail(o->fleet, Needs::kDatabase));
    const auto runs = value_or_fail(reader->runs(o->last));
    if (!o->fleet.json) {
      std::printf("%s", format_runs_table(runs).c_str());
      return;
    }
    nlohmann::json json = nlohmann::json::array();
    for (const RunRow& r : runs) json.push_back(to_json(r));
    print_json(json);
  });
}

void add_status(CLI::App& app) {
  auto o = std::make_shared<RunCommandOptions>();
  CLI::App* c = app.add_subcommand("status", "One run's state: jobs by state, progress, ETA");
  add_run_argument(c, o->run_id);
  add_fleet_options(c, o->fleet, Needs::kDatabase);
  c->callback([o] {
    auto reader = open_db_or_fail(resolve_or_fail(o->fleet, Needs::kDatabase));
    const RunStatus status = value_or_fail(reader->run_status(o->run_id));
    if (o->fleet.json) {
      print_json(to_json(status));
    } else {
      std::printf("%s", format_run_status(status).c_str());
    }
  });
}

void add_results(CLI::App& app) {
  auto o = std::make_shared<RunCommandOptions>();
  CLI::App* c = app.add_subcommand("results", "A run's results table with fast_p and geomean per GPU model");
  add_run_argument(c, o->run_id);
  add_fleet_options(c, o->fleet, Needs::kDatabase);
  c->callback([o] {
    auto reader = open_db_or_fail(resolve_or_fail(o->fleet, Needs::kDatabase));
    const auto rows = value_or_fail(reader->results(o->run_id));
    const ResultsSummary summary = summarize_results(rows);
    if (o->fleet.json) {
      print_json(to_json(rows, summary));
    } else {
      std::printf("%s", format_results_table(rows, summary).c_str());
    }
  });
}

// `kb workers` lists the pool from the database; --drain/--resume/--release NAME (an admin's) ask
// the coordinator to drain a worker (no new jobs; its prefetched job goes back to the queue, the
// running one finishes), to resume it, or to release it from quarantine.
void add_workers(CLI::App& app) {
  auto o = std::make_shared<RunCommandOptions>();
  auto control = std::make_shared<std::pair<std::string, std::string>>();  // action, worker
  CLI::App* c = app.add_subcommand("workers", "The worker pool: state, GPU model, last seen, jobs done");
  for (const char* action : {"drain", "resume", "release"}) {
    c->add_option_function<std::string>(
        std::string("--") + action,
        [control, action](const std::string& name) { *control = {action, name}; },
        std::string("Admin: ") +
            (std::string(action) == "drain"     ? "drain worker NAME (no new jobs; the prefetched one is requeued)"
             : std::string(action) == "resume" ? "let a drained worker NAME take jobs again"
                                                : "release worker NAME from quarantine"));
  }
  add_fleet_options(c, o->fleet, Needs::kBoth);
  c->callback([o, control] {
    if (!control->first.empty()) {
      auto client = connect_or_fail(resolve_or_fail(o->fleet, Needs::kCoordinator));
      const wire::WorkerControlMessage m{.action = control->first, .worker = control->second};
      const wire::WorkerControlReply reply = value_or_fail(
          client->ask<wire::WorkerControlReply>(wire::to_message(m), request_timeout(o->fleet)));
      if (o->fleet.json) {
        print_json(reply.to_body());
      } else {
        std::printf("worker %s: %s\n", reply.worker.c_str(), reply.action.c_str());
      }
      return;
    }
    auto reader = open_db_or_fail(resolve_or_fail(o->fleet, Needs::kDatabase));
    const auto workers = value_or_fail(reader->workers());
    if (!o->fleet.json) {
      std::printf("%s", format_workers_table(workers).c_str());
      return;
    }
    nlohmann::json json = nlohmann::json::array();
    for (const WorkerRow& w : workers) json.push_back(to_json(w));
    print_json(json);
  });
}

void add_cancel(CLI::App& app) {
  auto o = std::make_shared<RunCommandOptions>();
  CLI::App* c = app.add_subcommand("cancel", "Cancel a run: its queued and running jobs end as cancelled");
  add_run_argument(c, o->run_id);
  add_fleet_options(c, o->fleet, Needs::kCoordinator);
  c->callback([o] {
    auto client = connect_or_fail(resolve_or_fail(o->fleet, Needs::kCoordinator));
    const wire::CancelMessage cancel{o->run_id};
    const wire::CancelReply reply = value_or_fail(
        client->ask<wire::CancelReply>(wire::to_message(cancel), request_timeout(o->fleet)));
    if (o->fleet.json) {
      print_json(reply.to_body());
    } else {
      std::printf("run %lld: %lld open job(s) cancelled\n", static_cast<long long>(reply.run_id),
                  static_cast<long long>(reply.cancelled));
    }
  });
}

void run_keygen(const std::string& prefix, bool force, bool json) {
  const std::string key_file = prefix + ".key", public_file = prefix + ".pub";
  std::error_code ec;
  for (const std::string& f : {key_file, public_file}) {
    if (!force && std::filesystem::exists(f, ec)) fail(kExitUsage, f + " exists: pass --force to replace it");
  }
  auto keys = curve::generate_key_pair();
  if (!keys.is_ok()) fail(kExitFailure, keys.status().message());
  // Created with O_EXCL and mode 0600 (curve_keys.h): never readable by others, even briefly.
  if (Status s = curve::write_key_file(key_file, keys.value(), force); !s.is_ok()) fail(kExitFailure, s.message());
  if (Status s = curve::write_public_key_file(public_file, keys.value(), force); !s.is_ok()) {
    fail(kExitFailure, s.message());
  }
  if (json) {
    print_json({{"public_key", keys->public_key}, {"key_file", key_file}, {"public_file", public_file}});
    return;
  }
  std::printf("wrote %s (key pair, mode 0600: keep it secret) and %s (public key)\n"
              "public key: %s\n"
              "coordinator: --curve-secret-key its .key; this public key goes, with a name, into the\n"
              "allow-list of its role (--allow-dir DIR: workers.txt, submitters.txt or admins.txt);\n"
              "workers and clients: --curve-key their .key and --coordinator-key the coordinator's .pub\n",
              key_file.c_str(), public_file.c_str(), keys->public_key.c_str());
}

void add_keygen(CLI::App& app) {
  struct Options {
    std::string prefix;
    bool force = false, json = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand("keygen", "Make a CURVE key pair: OUT_PREFIX.key (0600) and OUT_PREFIX.pub");
  c->add_option("out_prefix", o->prefix, "Path prefix of the two files")->required();
  c->add_flag("--force", o->force, "Replace existing files");
  c->add_flag("--json", o->json, "Print the public key and file names as JSON");
  c->callback([o] { run_keygen(o->prefix, o->force, o->json); });
}

}  // namespace

void add_fleet_commands(CLI::App& app) {
  add_submit_command(app);
  add_watch_command(app);
  add_runs(app);
  add_status(app);
  add_results(app);
  add_workers(app);
  add_cancel(app);
  add_keygen(app);
}

}  // namespace kb::cli
