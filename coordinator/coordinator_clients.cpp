// The clients' side of the coordinator: SUBMIT, QUERY and CANCEL, each answered with REPLY or
// ERROR carrying the request's request_id (schemas/protocol.md).
#include <random>

#include "common/job_result.h"
#include "common/log.h"
#include "common/protocol_messages.h"
#include "common/sha256.h"
#include "common/zmq_messaging.h"
#include "coordinator/coordinator.h"

namespace kb::coord {
namespace {

struct SubmitRequest {
  NewRun run;
  std::string payload;  // pack bytes, when the client sent them
  bool sim = false;
};

// What the database thread found: a run, or a client error (unknown pack, bad payload).
struct SubmitOutcome {
  std::string error_code, error_message;
  int64_t run_id = 0;
  std::vector<JobRecord> jobs;
};

// One job per sleep time and GPU model; sim jobs go only to sim workers (wire::submit_rules).
void add_sim_jobs(const wire::SubmitMessage& submit, uint64_t seed, int max_attempts, NewRun& run) {
  run.preset = submit.preset.empty() ? "sim" : submit.preset;
  run.problems = {"sim"};
  if (run.gpu_models.empty()) run.gpu_models = {"sim"};
  for (double sleep_ms : *submit.sim_jobs) {
    for (const std::string& model : run.gpu_models) {
      run.jobs.push_back(
          {"sim", run.preset, model, seed, sleep_ms, {{"sleep_ms", sleep_ms}}, max_attempts});
    }
  }
}

// One job per problem and GPU model (no model: any worker); every problem must have the preset.
Status add_problem_jobs(const wire::SubmitMessage& submit, const ProblemCatalog& catalog,
                        uint64_t seed, int max_attempts, NewRun& run) {
  run.suite = submit.suite;
  const std::string what = run.suite.empty() ? submit.problems : run.suite;
  KB_ASSIGN_OR_RETURN(std::vector<std::string> ids, catalog.resolve(what));
  if (ids.empty()) return Status::invalid_argument("no problems named");
  if (!run.suite.empty() && !catalog.suites.count(run.suite)) run.suite.clear();
  if (run.suite.empty() && catalog.suites.count(what)) run.suite = what;
  run.preset = submit.preset.empty() ? "full" : submit.preset;
  std::vector<std::optional<std::string>> models(run.gpu_models.begin(), run.gpu_models.end());
  if (models.empty()) models.push_back(std::nullopt);
  for (const std::string& id : ids) {
    if (!catalog.find(id)->find_preset(run.preset)) {
      return Status::invalid_argument("problem " + id + " has no preset '" + run.preset + "'");
    }
    run.problems.push_back(id);
    for (const auto& model : models) {
      run.jobs.push_back({id, run.preset, model, seed, 0, nlohmann::json::object(), max_attempts});
    }
  }
  return Status::ok();
}

// Builds the run from a SUBMIT; a Status with the client's mistake otherwise (its rules, then
// problems and presets the catalog lacks).
Result<SubmitRequest> plan_run(const wire::SubmitMessage& submit, const ProblemCatalog* catalog,
                               const std::string& catalog_error) {
  KB_TRY(wire::submit_rules(submit));
  SubmitRequest req;
  NewRun& run = req.run;
  run.commit_sha = submit.commit_sha;
  run.branch = submit.branch;
  if (!submit.commit_time.empty()) run.commit_time = submit.commit_time;
  run.pack_hash = submit.pack;
  run.gpu_models = submit.gpu_models;
  const uint64_t seed = submit.seed
                            ? *submit.seed
                            : (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
  const int max_attempts = submit.max_attempts.value_or(wire::kDefaultMaxAttempts);
  run.config = {{"seed", seed}, {"time_cap_s", submit.time_cap_s}};
  if (submit.trials) run.config["trials"] = *submit.trials;  // docs/verification.md
  if (submit.job_timeout_s) run.config["job_timeout_s"] = *submit.job_timeout_s;
  if (submit.sim_jobs) {
    req.sim = true;
    add_sim_jobs(submit, seed, max_attempts, run);
    return req;
  }
  if (!catalog)
    return Status::failed_precondition("the problem catalog is unavailable: " + catalog_error);
  KB_TRY(add_problem_jobs(submit, *catalog, seed, max_attempts, run));
  return req;
}

// On the database thread: the pack, the predictions, the run.
Status create_submitted_run(JobStore& store, SubmitRequest& req, SubmitOutcome& out) {
  out = SubmitOutcome();
  NewRun& run = req.run;
  if (!req.sim || !run.pack_hash.empty()) {
    if (!req.payload.empty()) {
      if (sha256_hex(req.payload) != run.pack_hash) {
        out.error_code = "bad_request";
        out.error_message = "the payload's sha256 is not the pack hash " + run.pack_hash;
        return Status::ok();
      }
      KB_TRY(store.store_pack({run.pack_hash, static_cast<int64_t>(req.payload.size()),
                               run.commit_sha, nlohmann::json::object()},
                              req.payload));
    } else {
      KB_ASSIGN_OR_RETURN(bool have, store.has_pack(run.pack_hash));
      if (!have) {
        out.error_code = "unknown_pack";
        out.error_message = "the coordinator has no pack " + run.pack_hash + ": send its bytes";
        return Status::ok();
      }
    }
  }
  if (!req.sim) {
    std::map<std::pair<std::string, std::string>, double> predicted;
    for (NewJob& job : run.jobs) {
      const auto key = std::make_pair(job.problem_id, job.gpu_model.value_or(""));
      if (!predicted.count(key)) {
        KB_ASSIGN_OR_RETURN(predicted[key],
                            store.predicted_wall_ms(job.problem_id, job.preset, key.second));
      }
      job.predicted_ms = predicted[key];
    }
  }
  KB_ASSIGN_OR_RETURN(out.jobs, store.create_run(run, &out.run_id));
  return Status::ok();
}

bool is_from_client(wire::MessageType type) {
  using T = wire::MessageType;
  return type == T::kSubmit || type == T::kQuery || type == T::kCancel ||
         type == T::kWorkerControl;
}


}  // namespace

size_t Coordinator::receive_from_clients(size_t max) {
  size_t n = 0;
  for (; n < max; ++n) {
    std::optional<wire::ReceivedMessage> received = wire::receive_message(clients_, true);
    if (!received) break;
    // The ZAP handler admits only submitter and admin keys here; checked again per message.
    const std::optional<Peer> peer = peer_from_user_id(received->user_id);
    const bool admitted = peer && peer->role != Role::kWorker && (!zap_ || peer->authenticated);
    if (!received->decoded.ok) {
      const wire::DecodeResult& bad = received->decoded;
      metrics_.count_dropped(bad.error);
      // A request of the wrong shape is answered, so that its client need not wait for a timeout.
      if (admitted && bad.error == wire::DecodeError::kMissingField &&
          is_from_client(bad.message.type)) {
        reply_error(received->routing_id, bad.message.body, "bad_request", bad.detail);
      }
      continue;
    }
    if (!admitted) {
      metrics_.count_dropped(kDropForbidden);
      continue;
    }
    on_client_message(received->routing_id, *peer, std::move(received->decoded));
  }
  maybe_flush_batch();
  return n;
}

void Coordinator::on_client_message(const std::string& routing_id, const Peer& peer,
                                    wire::DecodeResult request) {
  const nlohmann::json& body = request.message.body;
  const wire::AnyMessage& message = request.body;
  if (const auto* submit = std::get_if<wire::SubmitMessage>(&message)) {
    return on_submit(routing_id, peer, body, *submit, std::move(request.message.payload));
  }
  if (const auto* query = std::get_if<wire::QueryMessage>(&message)) {
    return on_query(routing_id, body, *query);
  }
  if (const auto* cancel = std::get_if<wire::CancelMessage>(&message)) {
    return on_cancel(routing_id, peer, body, *cancel);
  }
  if (const auto* control = std::get_if<wire::WorkerControlMessage>(&message)) {
    return on_worker_control(routing_id, peer, body, *control);
  }
  metrics_.count_dropped(kDropWrongDirection);
}

void Coordinator::answer_client(const std::string& routing_id, const nlohmann::json& request,
                                wire::Message answer) {
  if (auto id = request.find("request_id"); id != request.end()) {
    if (id->is_number() ||
        (id->is_string() && id->get_ref<const std::string&>().size() <= wire::kMaxRequestIdBytes)) {
      answer.body["request_id"] = *id;
    }
  }
  send_to_client(routing_id, answer);
}

void Coordinator::reply_error(const std::string& routing_id, const nlohmann::json& request,
                              const std::string& code, const std::string& message) {
  answer_client(routing_id, request, wire::to_message(wire::ErrorMessage{message, code}));
}

void Coordinator::on_submit(const std::string& routing_id, const Peer& peer,
                            const nlohmann::json& body, const wire::SubmitMessage& submit,
                            std::string payload) {
  if (draining_) return reply_error(routing_id, body, "unavailable", "the coordinator is draining");
  if (const std::string why = refused_job_option(peer, submit); !why.empty()) {
    metrics_.count_dropped(kDropForbidden);
    return reply_error(routing_id, body, "forbidden", why);
  }
  Result<SubmitRequest> parsed = plan_run(submit, catalog_ ? &*catalog_ : nullptr, catalog_error_);
  if (!parsed.is_ok()) {
    const bool ours = parsed.status().code() == StatusCode::kFailedPrecondition;
    return reply_error(routing_id, body, ours ? "unavailable" : "bad_request",
                       parsed.status().message());
  }
  if (!payload.empty()) {
    const std::string why = pack_ledger_.admit(peer.name, peer.role == Role::kAdmin, payload.size(),
                                               std::chrono::steady_clock::now());
    if (!why.empty()) {
      metrics_.count_dropped(kDropForbidden);
      return reply_error(routing_id, body, "forbidden", why);
    }
  }
  auto req = std::make_shared<SubmitRequest>(std::move(parsed.value()));
  // With keys, the key's name: a body's "submitted_by" is ignored. Without keys (loopback, one
  // trusted machine) the CLI's $USER@host is kept as a label.
  const std::string& label = submit.submitted_by;
  req->run.submitted_by = peer.authenticated || label.empty() ? peer.name : label;
  req->payload = std::move(payload);
  auto out = std::make_shared<SubmitOutcome>();
  auto request = std::make_shared<const nlohmann::json>(body);
  db_->submit([req, out](JobStore& store) { return create_submitted_run(store, *req, *out); },
              [this, routing_id, out, request](const Status& status) {
                post_to_loop([this, routing_id, out, request, status] {
                  if (!status.is_ok()) {
                    return reply_error(routing_id, *request, "unavailable", status.message());
                  }
                  if (!out->error_code.empty()) {
                    return reply_error(routing_id, *request, out->error_code, out->error_message);
                  }
                  const size_t n = out->jobs.size();
                  scheduler_.submit(std::move(out->jobs));
                  const wire::SubmitReply answer{out->run_id, static_cast<int64_t>(n)};
                  reply(routing_id, *request, answer);
                  maybe_flush_batch();
                });
              });
}

void Coordinator::on_query(const std::string& routing_id, const nlohmann::json& body,
                           const wire::QueryMessage& query) {
  if (query.what == "health") {
    const SchedulerStats s = scheduler_.stats();
    auto count = [](auto n) { return static_cast<int64_t>(n); };
    return reply(routing_id, body,
                 wire::HealthReply{.workers = count(s.workers_busy + s.workers_idle),
                                   .workers_busy = count(s.workers_busy),
                                   .workers_lost = count(s.workers_lost),
                                   .queued = count(s.queued),
                                   .leased = count(s.leased),
                                   .runs = count(s.runs),
                                   .jobs_completed = count(s.jobs_completed),
                                   .db_up = db_->healthy(),
                                   .draining = draining_});
  }
  if (query.what != "pack") {
    return reply_error(routing_id, body, "bad_request", "QUERY what: pack or health");
  }
  const std::string& hash = query.pack;
  if (hash.empty()) return reply_error(routing_id, body, "bad_request", "QUERY pack: needs pack");
  auto have = std::make_shared<bool>(false);
  auto request = std::make_shared<const nlohmann::json>(body);
  db_->submit(
      [hash, have](JobStore& store) -> Status {
        KB_ASSIGN_OR_RETURN(*have, store.has_pack(hash));
        return Status::ok();
      },
      [this, routing_id, have, request](const Status& status) {
        post_to_loop([this, routing_id, have, request, status] {
          if (!status.is_ok()) return reply_error(routing_id, *request, "unavailable", status.message());
          reply(routing_id, *request, wire::PackQueryReply{*have});
        });
      });
}

// Two steps: the run's submitter (may this peer cancel it?), then, on the loop, the scheduler
// forgets the run's jobs before the store cancels them, so that nothing is dispatched meanwhile.
void Coordinator::on_cancel(const std::string& routing_id, const Peer& peer,
                            const nlohmann::json& body, const wire::CancelMessage& cancel) {
  if (cancel.run_id <= 0) {
    return reply_error(routing_id, body, "bad_request", "CANCEL run_id: expected a positive integer");
  }
  const int64_t run_id = cancel.run_id;
  auto owner = std::make_shared<std::string>();
  auto request = std::make_shared<const nlohmann::json>(body);
  db_->submit(
      [run_id, owner](JobStore& store) -> Status {
        KB_ASSIGN_OR_RETURN(*owner, store.run_submitter(run_id));
        return Status::ok();
      },
      [this, routing_id, run_id, owner, request, peer](const Status& status) {
        post_to_loop([this, routing_id, run_id, owner, request, peer, status] {
          if (status.code() == StatusCode::kNotFound) {
            return reply_error(routing_id, *request, "bad_request", "no run " + std::to_string(run_id));
          }
          if (!status.is_ok()) return reply_error(routing_id, *request, "unavailable", status.message());
          if (!may_cancel(peer, *owner)) {
            metrics_.count_dropped(kDropForbidden);
            return reply_error(routing_id, *request, "forbidden",
                               "run " + std::to_string(run_id) + " was submitted by '" + *owner +
                                   "': only they or an admin may cancel it (you are " +
                                   to_string(peer.role) + " '" + peer.name + "')");
          }
          cancel_run(routing_id, run_id, request);
        });
      });
}

void Coordinator::cancel_run(const std::string& routing_id, int64_t run_id,
                             std::shared_ptr<const nlohmann::json> request) {
  scheduler_.cancel(run_id);  // first, so that nothing of the run is dispatched meanwhile
  auto cancelled = std::make_shared<size_t>(0);
  db_->submit(
      [run_id, cancelled](JobStore& store) -> Status {
        KB_ASSIGN_OR_RETURN(const std::vector<int64_t> job_ids, store.cancel_run(run_id));
        *cancelled = job_ids.size();
        return Status::ok();
      },
      [this, routing_id, run_id, cancelled, request](const Status& status) {
        post_to_loop([this, routing_id, run_id, cancelled, request, status] {
          if (status.code() == StatusCode::kNotFound) {
            return reply_error(routing_id, *request, "bad_request", "no run " + std::to_string(run_id));
          }
          if (!status.is_ok()) return reply_error(routing_id, *request, "unavailable", status.message());
          reply(routing_id, *request, wire::CancelReply{run_id, static_cast<int64_t>(*cancelled)});
        });
      });
}

}  // namespace kb::coord

namespace kb::coord {

// `kb workers --drain/--resume/--release NAME` (an admin's: see docs/security.md for the roles).
void Coordinator::on_worker_control(const std::string& routing_id, const Peer& peer,
                                    const nlohmann::json& body,
                                    const wire::WorkerControlMessage& control) {
  if (peer.role != Role::kAdmin) {
    metrics_.count_dropped(kDropForbidden);
    return reply_error(routing_id, body, "forbidden",
                       std::string("kb workers --drain/--resume/--release is for admins (you are ") +
                           to_string(peer.role) + " '" + peer.name + "')");
  }
  const std::string& action = control.action;
  const std::string& worker = control.worker;
  if (worker.empty() || worker.size() > 200) {
    return reply_error(routing_id, body, "bad_request", "WORKER_CONTROL: a worker name is needed");
  }
  const std::string error = scheduler_.control(worker, action);
  if (!error.empty()) return reply_error(routing_id, body, "bad_request", error);
  KB_LOGF_INFO("worker %s: %s", worker.c_str(), action.c_str());
  reply(routing_id, body, wire::WorkerControlReply{worker, action});
}

}  // namespace kb::coord
