// The clients' side of the coordinator: SUBMIT, QUERY and CANCEL, each answered with REPLY or
// ERROR carrying the request's request_id (schemas/protocol.md).
#include <random>

#include "common/job_result.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/zmq_messaging.h"
#include "coordinator/coordinator.h"

namespace kb::coord {
namespace {

constexpr size_t kMaxSimJobs = 1'000'000;

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

std::string get_string(const nlohmann::json& body, const char* key, std::string fallback = "") {
  auto it = body.find(key);
  return it != body.end() && it->is_string() ? it->get<std::string>() : fallback;
}

// Builds the run from SUBMIT's body; a Status with the client's mistake otherwise.
Result<SubmitRequest> parse_submit(const nlohmann::json& body, const ProblemCatalog* catalog,
                                   const std::string& catalog_error) {
  SubmitRequest req;
  NewRun& run = req.run;
  run.commit_sha = get_string(body, "commit_sha");
  // Stored and later matched by `kb compare`: only a SHA, never text that could be read as SQL.
  if (!run.commit_sha.empty() && !is_commit_sha(run.commit_sha)) {
    return Status::invalid_argument("commit_sha: expected 7 to 64 lowercase hex digits");
  }
  run.branch = get_string(body, "branch");
  if (std::string t = get_string(body, "commit_time"); !t.empty()) run.commit_time = t;
  run.pack_hash = get_string(body, "pack");
  if (auto g = body.find("gpu_models"); g != body.end()) {
    if (!g->is_array()) return Status::invalid_argument("gpu_models: expected a list of strings");
    for (const auto& m : *g) {
      if (!m.is_string() || m.get<std::string>().empty()) {
        return Status::invalid_argument("gpu_models: expected non-empty strings");
      }
      run.gpu_models.push_back(m.get<std::string>());
    }
  }
  uint64_t seed = 0;
  if (auto s = body.find("seed"); s != body.end() && s->is_number_integer()) {
    seed = s->get<uint64_t>();
  } else {
    seed = (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
  }
  int max_attempts = 3;
  if (auto m = body.find("max_attempts"); m != body.end()) {
    if (!m->is_number_integer() || m->get<int>() < 1 || m->get<int>() > 10) {
      return Status::invalid_argument("max_attempts: expected 1..10");
    }
    max_attempts = m->get<int>();
  }
  double time_cap_s = 0;
  if (auto t = body.find("time_cap_s"); t != body.end() && t->is_number()) time_cap_s = t->get<double>();
  double job_timeout_s = 0;
  if (auto t = body.find("job_timeout_s"); t != body.end()) {
    if (!t->is_number() || t->get<double>() <= 0) {
      return Status::invalid_argument("job_timeout_s: expected a positive number of seconds");
    }
    job_timeout_s = t->get<double>();
  }
  run.config = {{"seed", seed}, {"time_cap_s", time_cap_s}};
  if (auto t = body.find("trials"); t != body.end()) {  // the verification policy (docs/verification.md)
    if (!t->is_number_integer() || t->get<int64_t>() < kMinVerifiedTrials || t->get<int64_t>() > 1000) {
      return Status::invalid_argument("trials: the fleet runs " + std::to_string(kMinVerifiedTrials) +
                                      "..1000 correctness trials per job");
    }
    run.config["trials"] = t->get<int64_t>();
  }
  if (job_timeout_s > 0) run.config["job_timeout_s"] = job_timeout_s;
  std::vector<std::optional<std::string>> models;
  for (const std::string& m : run.gpu_models) models.push_back(m);
  if (models.empty()) models.push_back(std::nullopt);

  if (auto sim = body.find("sim_jobs"); sim != body.end()) {
    if (!sim->is_array() || sim->empty() || sim->size() > kMaxSimJobs) {
      return Status::invalid_argument("sim_jobs: expected a non-empty list of sleep_ms numbers");
    }
    req.sim = true;
    run.preset = get_string(body, "preset", "sim");
    run.problems = {"sim"};
    // Sim jobs only ever go to sim workers (a real worker would fail them: "no problem sim").
    for (const auto& model : models) {
      if (model && *model != "sim") {
        return Status::invalid_argument("sim_jobs: run only on sim workers (gpu_models [\"sim\"])");
      }
    }
    if (run.gpu_models.empty()) {
      run.gpu_models = {"sim"};
      models = {std::string("sim")};
    }
    for (const auto& sleep : *sim) {
      if (!sleep.is_number() || sleep.get<double>() < 0) {
        return Status::invalid_argument("sim_jobs: expected non-negative numbers");
      }
      for (const auto& model : models) {
        run.jobs.push_back({"sim", run.preset, model, seed, sleep.get<double>(),
                            {{"sleep_ms", sleep.get<double>()}}, max_attempts});
      }
    }
    return req;
  }
  if (!catalog) return Status::failed_precondition("the problem catalog is unavailable: " + catalog_error);
  run.suite = get_string(body, "suite");
  const std::string what = run.suite.empty() ? get_string(body, "problems") : run.suite;
  auto ids = catalog->resolve(what);
  if (!ids.is_ok()) return ids.status();
  if (ids->empty()) return Status::invalid_argument("no problems named");
  if (!run.suite.empty() && !catalog->suites.count(run.suite)) run.suite.clear();
  if (run.suite.empty() && catalog->suites.count(what)) run.suite = what;
  run.preset = get_string(body, "preset", "full");
  for (const std::string& id : ids.value()) {
    if (!catalog->find(id)->find_preset(run.preset)) {
      return Status::invalid_argument("problem " + id + " has no preset '" + run.preset + "'");
    }
    run.problems.push_back(id);
    for (const auto& model : models) {
      run.jobs.push_back({id, run.preset, model, seed, 0, nlohmann::json::object(), max_attempts});
    }
  }
  if (run.pack_hash.empty()) return Status::invalid_argument("pack: the kernel pack's sha256 is required");
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
      Result<bool> have = store.has_pack(run.pack_hash);
      if (!have.is_ok()) return have.status();
      if (!have.value()) {
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
        Result<double> ms = store.predicted_wall_ms(job.problem_id, job.preset, key.second);
        if (!ms.is_ok()) return ms.status();
        predicted[key] = ms.value();
      }
      job.predicted_ms = predicted[key];
    }
  }
  Result<std::vector<JobRecord>> jobs = store.create_run(run, &out.run_id);
  if (!jobs.is_ok()) return jobs.status();
  out.jobs = std::move(jobs.value());
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
    if (!received->decoded.ok) {
      metrics_.count_dropped(received->decoded.error);
      continue;
    }
    // The ZAP handler admits only submitter and admin keys here; checked again per message.
    const std::optional<Peer> peer = peer_from_user_id(received->user_id);
    if (!peer || peer->role == Role::kWorker || (zap_ && !peer->authenticated)) {
      metrics_.count_dropped(kDropForbidden);
      continue;
    }
    on_client_message(received->routing_id, *peer, std::move(received->decoded.message));
  }
  maybe_flush_batch();
  return n;
}

void Coordinator::on_client_message(const std::string& routing_id, const Peer& peer,
                                    wire::Message message) {
  using T = wire::MessageType;
  if (!is_from_client(message.type)) {
    metrics_.count_dropped(kDropWrongDirection);
    return;
  }
  if (message.type == T::kSubmit) return on_submit(routing_id, peer, std::move(message));
  if (message.type == T::kQuery) return on_query(routing_id, message.body);
  if (message.type == T::kWorkerControl) return on_worker_control(routing_id, peer, message.body);
  on_cancel(routing_id, peer, message.body);
}

void Coordinator::reply(const std::string& routing_id, const nlohmann::json& request,
                        nlohmann::json body) {
  if (auto id = request.find("request_id"); id != request.end()) body["request_id"] = *id;
  wire::Message m;
  m.type = wire::MessageType::kReply;
  m.body = std::move(body);
  send_to_client(routing_id, m);
}

void Coordinator::reply_error(const std::string& routing_id, const nlohmann::json& request,
                              const std::string& code, const std::string& message) {
  wire::Message m;
  m.type = wire::MessageType::kError;
  m.body = {{"message", message}, {"code", code}};
  if (auto id = request.find("request_id"); id != request.end()) m.body["request_id"] = *id;
  send_to_client(routing_id, m);
}

void Coordinator::on_submit(const std::string& routing_id, const Peer& peer,
                            wire::Message message) {
  const nlohmann::json& body = message.body;
  if (draining_) return reply_error(routing_id, body, "unavailable", "the coordinator is draining");
  if (const std::string why = refused_job_option(peer, body); !why.empty()) {
    metrics_.count_dropped(kDropForbidden);
    return reply_error(routing_id, body, "forbidden", why);
  }
  Result<SubmitRequest> parsed =
      parse_submit(body, catalog_ ? &*catalog_ : nullptr, catalog_error_);
  if (!parsed.is_ok()) {
    const bool ours = parsed.status().code() == StatusCode::kFailedPrecondition;
    return reply_error(routing_id, body, ours ? "unavailable" : "bad_request",
                       parsed.status().message());
  }
  if (!message.payload.empty()) {
    const std::string why = pack_ledger_.admit(peer.name, peer.role == Role::kAdmin,
                                               message.payload.size(), std::chrono::steady_clock::now());
    if (!why.empty()) {
      metrics_.count_dropped(kDropForbidden);
      return reply_error(routing_id, body, "forbidden", why);
    }
  }
  auto req = std::make_shared<SubmitRequest>(std::move(parsed.value()));
  // With keys, the key's name: a body's "submitted_by" is ignored. Without keys (loopback, one
  // trusted machine) the CLI's $USER@host is kept as a label.
  req->run.submitted_by = peer.authenticated ? peer.name : get_string(body, "submitted_by", peer.name);
  req->payload = std::move(message.payload);
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
                  reply(routing_id, *request, {{"run_id", out->run_id}, {"jobs", n}});
                  maybe_flush_batch();
                });
              });
}

void Coordinator::on_query(const std::string& routing_id, const nlohmann::json& body) {
  const std::string what = body["what"].get<std::string>();
  if (what == "health") {
    const SchedulerStats s = scheduler_.stats();
    return reply(routing_id, body,
                 {{"workers", s.workers_busy + s.workers_idle}, {"workers_busy", s.workers_busy},
                  {"workers_lost", s.workers_lost}, {"queued", s.queued}, {"leased", s.leased},
                  {"runs", s.runs}, {"jobs_completed", s.jobs_completed},
                  {"db_up", db_->healthy()}, {"draining", draining_}});
  }
  if (what != "pack") return reply_error(routing_id, body, "bad_request", "QUERY what: pack or health");
  const std::string hash = get_string(body, "pack");
  if (hash.empty()) return reply_error(routing_id, body, "bad_request", "QUERY pack: needs pack");
  auto have = std::make_shared<bool>(false);
  auto request = std::make_shared<const nlohmann::json>(body);
  db_->submit(
      [hash, have](JobStore& store) -> Status {
        Result<bool> r = store.has_pack(hash);
        if (!r.is_ok()) return r.status();
        *have = r.value();
        return Status::ok();
      },
      [this, routing_id, have, request](const Status& status) {
        post_to_loop([this, routing_id, have, request, status] {
          if (!status.is_ok()) return reply_error(routing_id, *request, "unavailable", status.message());
          reply(routing_id, *request, {{"have", *have}});
        });
      });
}

// Two steps: the run's submitter (may this peer cancel it?), then, on the loop, the scheduler
// forgets the run's jobs before the store cancels them, so that nothing is dispatched meanwhile.
void Coordinator::on_cancel(const std::string& routing_id, const Peer& peer,
                            const nlohmann::json& body) {
  const nlohmann::json& id = body["run_id"];
  if (!id.is_number_integer() || id.get<int64_t>() <= 0) {
    return reply_error(routing_id, body, "bad_request", "CANCEL run_id: expected a positive integer");
  }
  const int64_t run_id = id.get<int64_t>();
  auto owner = std::make_shared<std::string>();
  auto request = std::make_shared<const nlohmann::json>(body);
  db_->submit(
      [run_id, owner](JobStore& store) -> Status {
        Result<std::string> r = store.run_submitter(run_id);
        if (!r.is_ok()) return r.status();
        *owner = r.value();
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
        Result<std::vector<int64_t>> r = store.cancel_run(run_id);
        if (!r.is_ok()) return r.status();
        *cancelled = r->size();
        return Status::ok();
      },
      [this, routing_id, run_id, cancelled, request](const Status& status) {
        post_to_loop([this, routing_id, run_id, cancelled, request, status] {
          if (status.code() == StatusCode::kNotFound) {
            return reply_error(routing_id, *request, "bad_request", "no run " + std::to_string(run_id));
          }
          if (!status.is_ok()) return reply_error(routing_id, *request, "unavailable", status.message());
          reply(routing_id, *request, {{"run_id", run_id}, {"cancelled", *cancelled}});
        });
      });
}

}  // namespace kb::coord

namespace kb::coord {

// `kb workers --drain/--resume/--release NAME` (an admin's: see docs/security.md for the roles).
void Coordinator::on_worker_control(const std::string& routing_id, const Peer& peer,
                                    const nlohmann::json& body) {
  if (peer.role != Role::kAdmin) {
    metrics_.count_dropped(kDropForbidden);
    return reply_error(routing_id, body, "forbidden",
                       std::string("kb workers --drain/--resume/--release is for admins (you are ") +
                           to_string(peer.role) + " '" + peer.name + "')");
  }
  const std::string action = body["action"].get<std::string>();
  const std::string worker = body["worker"].get<std::string>();
  if (worker.empty() || worker.size() > 200) {
    return reply_error(routing_id, body, "bad_request", "WORKER_CONTROL: a worker name is needed");
  }
  const std::string error = scheduler_.control(worker, action);
  if (!error.empty()) return reply_error(routing_id, body, "bad_request", error);
  KB_LOGF_INFO("worker %s: %s", worker.c_str(), action.c_str());
  reply(routing_id, body, {{"worker", worker}, {"action", action}});
}

}  // namespace kb::coord
