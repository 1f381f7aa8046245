#include "common/protocol_messages.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>
#include <utility>

#include "common/job_result.h"
#include "common/json_fields.h"

namespace kb::wire {
namespace {

using json_fields::Object;
using json_fields::optional;
using json_fields::required;
using nlohmann::json;

// A list of lease tokens at body[name] (absent: empty); an error names the entry.
Result<std::vector<LeaseToken>> tokens_at(const json& body, const char* name) {
  KB_ASSIGN_OR_RETURN(json list, optional<json>(body, name, json::array()));
  if (!list.is_array()) {
    return Status::invalid_argument(std::string("field '") + name +
                                    "': expected a list of lease tokens, got " +
                                    std::string(json_fields::kind_of(list)));
  }
  std::vector<LeaseToken> tokens;
  for (size_t i = 0; i < list.size(); ++i) {
    Result<LeaseToken> token = LeaseToken::from_body(list[i]);
    if (!token.is_ok()) {
      return Status::invalid_argument(std::string(name) + "[" + std::to_string(i) +
                                      "]: " + token.status().message());
    }
    tokens.push_back(token.value());
  }
  return tokens;
}

json tokens_body(const std::vector<LeaseToken>& tokens) {
  json list = json::array();
  for (const LeaseToken& t : tokens) list.push_back(t.to_body());
  return list;
}

template <typename M>
Result<AnyMessage> read_as(const json& body) {
  KB_ASSIGN_OR_RETURN(M message, M::from_body(body));
  return AnyMessage(std::move(message));
}

// Each type's name on the wire, in MessageType's order.
constexpr std::array<std::string_view, 18> kTypeNames = {
    "READY",   "HEARTBEAT", "REQUEST", "RESULT",         "PACK_REQUEST", "BYE",
    "WELCOME", "JOB",       "ACK",     "PACK",           "DISCONNECT",   "REVOKE",
    "SUBMIT",  "QUERY",     "CANCEL",  "WORKER_CONTROL", "REPLY",        "ERROR"};
static_assert(kTypeNames.size() == static_cast<size_t>(MessageType::kError) + 1,
              "one name per MessageType");
static_assert(std::variant_size_v<AnyMessage> == kTypeNames.size(), "one struct per MessageType");

}  // namespace

std::string_view to_string(MessageType type) {
  return kTypeNames[static_cast<size_t>(type)];
}

std::optional<MessageType> message_type_named(std::string_view name) {
  for (size_t i = 0; i < kTypeNames.size(); ++i) {
    if (kTypeNames[i] == name) return static_cast<MessageType>(i);
  }
  return std::nullopt;
}

json LeaseToken::to_body() const {
  return {{"job_id", job_id}, {"attempt", attempt}, {"lease_id", lease_id}};
}

Result<LeaseToken> LeaseToken::from_body(const json& body) {
  LeaseToken t;
  KB_ASSIGN_OR_RETURN(t.job_id, required<int64_t>(body, "job_id"));
  KB_ASSIGN_OR_RETURN(t.attempt, required<int>(body, "attempt"));
  KB_ASSIGN_OR_RETURN(t.lease_id, optional<uint64_t>(body, "lease_id", 0));
  return t;
}

json DeviceIdentity::to_body() const {
  json body = described.is_object() ? described : json::object();
  body["kind"] = kind;
  body["model"] = model;
  body["uuid"] = uuid;
  body["memory_bytes"] = memory_bytes;
  body["compute_capability"] = compute_capability;
  return body;
}

Result<DeviceIdentity> DeviceIdentity::from_body(const json& body) {
  DeviceIdentity d;
  // A missing kind is the coordinator's to refuse, with a DISCONNECT that says why.
  KB_ASSIGN_OR_RETURN(d.kind, optional<std::string>(body, "kind", ""));
  KB_ASSIGN_OR_RETURN(d.model, optional<std::string>(body, "model", ""));
  KB_ASSIGN_OR_RETURN(d.uuid, optional<std::string>(body, "uuid", ""));
  KB_ASSIGN_OR_RETURN(d.compute_capability, optional<std::string>(body, "compute_capability", ""));
  KB_ASSIGN_OR_RETURN(d.memory_bytes, optional<int64_t>(body, "memory_bytes", 0));
  d.described = body;
  return d;
}

// --- worker -> coordinator ----------------------------------------------------------------------

json ReadyMessage::to_body() const {
  json body = {{"worker", worker},
               {"device", device.to_body()},
               {"software", software},
               {"host", host},
               {"in_flight", tokens_body(in_flight)}};
  if (protocol) body["protocol"] = *protocol;
  return body;
}

Result<ReadyMessage> ReadyMessage::from_body(const json& body) {
  ReadyMessage m;
  KB_ASSIGN_OR_RETURN(m.worker, required<std::string>(body, "worker"));
  KB_ASSIGN_OR_RETURN(json device, required<Object>(body, "device"));
  Result<DeviceIdentity> identity = DeviceIdentity::from_body(device);
  if (!identity.is_ok()) return Status::invalid_argument("device: " + identity.status().message());
  m.device = std::move(identity).value();
  KB_ASSIGN_OR_RETURN(m.software, required<Object>(body, "software"));
  KB_ASSIGN_OR_RETURN(m.host, optional<std::string>(body, "host", ""));
  KB_ASSIGN_OR_RETURN(m.in_flight, tokens_at(body, "in_flight"));
  if (body.contains("protocol") && !body["protocol"].is_null()) {
    KB_ASSIGN_OR_RETURN(m.protocol, required<int>(body, "protocol"));
  }
  return m;
}

json RequestMessage::to_body() const {
  return {{"credits", credits}};
}

Result<RequestMessage> RequestMessage::from_body(const json& body) {
  RequestMessage m;
  KB_ASSIGN_OR_RETURN(m.credits, required<int64_t>(body, "credits"));
  return m;
}

json ResultMessage::to_body() const {
  json body = {{"job_id", token.job_id},
               {"attempt", token.attempt},
               {"lease_id", token.lease_id},
               {"epoch", epoch},
               {"result", result},
               {"wall_ms", wall_ms},
               {"started_at_ms", started_at_ms},
               {"finished_at_ms", finished_at_ms}};
  if (!infra_failure.empty()) body["infra_failure"] = infra_failure;
  return body;
}

Result<ResultMessage> ResultMessage::from_body(const json& body) {
  ResultMessage m;
  KB_ASSIGN_OR_RETURN(m.token, LeaseToken::from_body(body));
  KB_ASSIGN_OR_RETURN(m.epoch, optional<std::string>(body, "epoch", ""));
  KB_ASSIGN_OR_RETURN(m.result, required<Object>(body, "result"));
  KB_ASSIGN_OR_RETURN(m.wall_ms, optional<double>(body, "wall_ms", 0));
  KB_ASSIGN_OR_RETURN(m.started_at_ms, optional<double>(body, "started_at_ms", 0));
  KB_ASSIGN_OR_RETURN(m.finished_at_ms, optional<double>(body, "finished_at_ms", 0));
  KB_ASSIGN_OR_RETURN(m.infra_failure, optional<std::string>(body, "infra_failure", ""));
  return m;
}

json PackRequestMessage::to_body() const {
  return {{"pack", pack}};
}

Result<PackRequestMessage> PackRequestMessage::from_body(const json& body) {
  PackRequestMessage m;
  KB_ASSIGN_OR_RETURN(m.pack, required<std::string>(body, "pack"));
  return m;
}

json ByeMessage::to_body() const {
  json body = {{"release", tokens_body(release)}};
  if (draining) body["draining"] = true;
  if (final) body["final"] = true;
  return body;
}

Result<ByeMessage> ByeMessage::from_body(const json& body) {
  ByeMessage m;
  KB_ASSIGN_OR_RETURN(m.release, tokens_at(body, "release"));
  KB_ASSIGN_OR_RETURN(m.draining, optional<bool>(body, "draining", false));
  KB_ASSIGN_OR_RETURN(m.final, optional<bool>(body, "final", false));
  return m;
}

// --- coordinator -> worker ----------------------------------------------------------------------

json WelcomeMessage::to_body() const {
  json body = {{"worker_id", worker_id}, {"heartbeat_ms", heartbeat_ms}, {"epoch", epoch}};
  if (liveness) body["liveness"] = *liveness;
  return body;
}

Result<WelcomeMessage> WelcomeMessage::from_body(const json& body) {
  WelcomeMessage m;
  KB_ASSIGN_OR_RETURN(m.worker_id, required<int64_t>(body, "worker_id"));
  KB_ASSIGN_OR_RETURN(m.heartbeat_ms, required<int64_t>(body, "heartbeat_ms"));
  if (body.contains("liveness") && !body["liveness"].is_null()) {
    KB_ASSIGN_OR_RETURN(m.liveness, required<int>(body, "liveness"));
  }
  KB_ASSIGN_OR_RETURN(m.epoch, optional<std::string>(body, "epoch", ""));
  return m;
}

json JobMessage::to_body() const {
  json body = {{"job_id", job_id},
               {"attempt", attempt},
               {"lease_id", lease_id},
               {"seed", seed},
               {"problem", problem},
               {"preset", preset},
               {"pack", pack},
               {"run_id", run_id},
               {"time_cap_s", time_cap_s},
               {"deadline_ms", deadline_ms},
               {"params", params.is_object() ? params : json::object()}};
  if (!spec_hash.empty()) body["spec_hash"] = spec_hash;
  if (trials > 0) body["trials"] = trials;
  return body;
}

Result<JobMessage> JobMessage::from_body(const json& body) {
  JobMessage m;
  KB_ASSIGN_OR_RETURN(m.job_id, required<int64_t>(body, "job_id"));
  KB_ASSIGN_OR_RETURN(m.attempt, required<int>(body, "attempt"));
  KB_ASSIGN_OR_RETURN(m.lease_id, optional<uint64_t>(body, "lease_id", 0));
  KB_ASSIGN_OR_RETURN(m.seed, required<uint64_t>(body, "seed"));
  KB_ASSIGN_OR_RETURN(m.problem, required<std::string>(body, "problem"));
  KB_ASSIGN_OR_RETURN(m.preset, required<std::string>(body, "preset"));
  KB_ASSIGN_OR_RETURN(m.pack, required<std::string>(body, "pack"));
  KB_ASSIGN_OR_RETURN(m.run_id, optional<int64_t>(body, "run_id", 0));
  KB_ASSIGN_OR_RETURN(m.time_cap_s, optional<double>(body, "time_cap_s", 0));
  KB_ASSIGN_OR_RETURN(m.trials, optional<int64_t>(body, "trials", 0));
  if (m.trials != 0 && (m.trials < kMinVerifiedTrials || m.trials > kMaxTrials)) {
    return Status::invalid_argument("trials: expected " + std::to_string(kMinVerifiedTrials) +
                                    ".." + std::to_string(kMaxTrials));
  }
  KB_ASSIGN_OR_RETURN(m.deadline_ms, optional<int64_t>(body, "deadline_ms", 0));
  KB_ASSIGN_OR_RETURN(m.params, optional<Object>(body, "params", json::object()));
  KB_ASSIGN_OR_RETURN(m.spec_hash, optional<std::string>(body, "spec_hash", ""));
  return m;
}

json AckMessage::to_body() const {
  json body = {{"job_id", job_id}, {"attempt", attempt}};
  if (!rejected.empty()) body["rejected"] = rejected;
  return body;
}

Result<AckMessage> AckMessage::from_body(const json& body) {
  AckMessage m;
  KB_ASSIGN_OR_RETURN(m.job_id, required<int64_t>(body, "job_id"));
  KB_ASSIGN_OR_RETURN(m.attempt, required<int>(body, "attempt"));
  KB_ASSIGN_OR_RETURN(m.rejected, optional<std::string>(body, "rejected", ""));
  return m;
}

json PackMessage::to_body() const {
  json body = {{"pack", pack}};
  if (missing) body["missing"] = true;
  return body;
}

Result<PackMessage> PackMessage::from_body(const json& body) {
  PackMessage m;
  KB_ASSIGN_OR_RETURN(m.pack, required<std::string>(body, "pack"));
  KB_ASSIGN_OR_RETURN(m.missing, optional<bool>(body, "missing", false));
  return m;
}

json DisconnectMessage::to_body() const {
  return {{"reason", reason}};
}

Result<DisconnectMessage> DisconnectMessage::from_body(const json& body) {
  DisconnectMessage m;
  KB_ASSIGN_OR_RETURN(m.reason, required<std::string>(body, "reason"));
  return m;
}

json RevokeMessage::to_body() const {
  json body = token.to_body();
  body["reason"] = reason;
  return body;
}

Result<RevokeMessage> RevokeMessage::from_body(const json& body) {
  RevokeMessage m;
  KB_ASSIGN_OR_RETURN(m.token, LeaseToken::from_body(body));
  KB_ASSIGN_OR_RETURN(m.reason, required<std::string>(body, "reason"));
  return m;
}

// --- client <-> coordinator ---------------------------------------------------------------------

json SubmitMessage::to_body() const {
  json body = {{"problems", problems},
               {"preset", preset},
               {"gpu_models", gpu_models},
               {"pack", pack},
               {"submitted_by", submitted_by}};
  auto put = [&](const char* name, const std::string& value) {
    if (!value.empty()) body[name] = value;
  };
  put("suite", suite);
  put("commit_sha", commit_sha);
  put("branch", branch);
  put("commit_time", commit_time);
  if (seed) body["seed"] = *seed;
  if (time_cap_s > 0) body["time_cap_s"] = time_cap_s;
  if (job_timeout_s) body["job_timeout_s"] = *job_timeout_s;
  if (sim_jobs) body["sim_jobs"] = *sim_jobs;
  if (max_attempts) body["max_attempts"] = *max_attempts;
  if (trials) body["trials"] = *trials;
  return body;
}

Result<SubmitMessage> SubmitMessage::from_body(const json& body) {
  SubmitMessage m;
  KB_ASSIGN_OR_RETURN(m.problems, required<std::string>(body, "problems"));
  KB_ASSIGN_OR_RETURN(m.suite, optional<std::string>(body, "suite", ""));
  KB_ASSIGN_OR_RETURN(m.preset, optional<std::string>(body, "preset", ""));
  KB_ASSIGN_OR_RETURN(m.gpu_models, optional<std::vector<std::string>>(body, "gpu_models", {}));
  KB_ASSIGN_OR_RETURN(m.commit_sha, optional<std::string>(body, "commit_sha", ""));
  KB_ASSIGN_OR_RETURN(m.branch, optional<std::string>(body, "branch", ""));
  KB_ASSIGN_OR_RETURN(m.commit_time, optional<std::string>(body, "commit_time", ""));
  KB_ASSIGN_OR_RETURN(m.pack, optional<std::string>(body, "pack", ""));
  KB_ASSIGN_OR_RETURN(m.submitted_by, optional<std::string>(body, "submitted_by", ""));
  KB_ASSIGN_OR_RETURN(m.time_cap_s, optional<double>(body, "time_cap_s", 0));
  auto present = [&](const char* name) { return body.contains(name) && !body[name].is_null(); };
  if (present("seed")) {
    KB_ASSIGN_OR_RETURN(m.seed, required<uint64_t>(body, "seed"));
  }
  if (present("job_timeout_s")) {
    KB_ASSIGN_OR_RETURN(m.job_timeout_s, required<double>(body, "job_timeout_s"));
  }
  if (present("sim_jobs")) {
    KB_ASSIGN_OR_RETURN(m.sim_jobs, required<std::vector<double>>(body, "sim_jobs"));
  }
  if (present("max_attempts")) {
    KB_ASSIGN_OR_RETURN(m.max_attempts, required<int>(body, "max_attempts"));
  }
  if (present("trials")) {
    KB_ASSIGN_OR_RETURN(m.trials, required<int64_t>(body, "trials"));
  }
  return m;
}

// YYYY-MM-DD, then optionally THH:MM (or a space), :SS, .fraction, and Z or +HH[:MM] / -HH[:MM]:
// what `git log --format=%cI` writes and what PostgreSQL's timestamptz reads.
bool is_commit_time(const std::string& t) {
  size_t i = 0;
  const auto digits = [&](size_t n) {
    for (size_t k = 0; k < n; ++k, ++i) {
      if (i >= t.size() || t[i] < '0' || t[i] > '9') return false;
    }
    return true;
  };
  const auto take = [&](char c) { return i < t.size() && t[i] == c ? (++i, true) : false; };
  if (!(digits(4) && take('-') && digits(2) && take('-') && digits(2))) return false;
  if (i == t.size()) return true;
  if (!(take('T') || take(' ')) || !(digits(2) && take(':') && digits(2))) return false;
  if (take(':')) {
    if (!digits(2)) return false;
    if (take('.')) {
      const size_t start = i;
      while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
      if (i == start || i - start > 9) return false;
    }
  }
  if (take('Z')) return i == t.size();
  if (take('+') || take('-')) {
    if (!digits(2)) return false;
    if (take(':')) return digits(2) && i == t.size();
    if (i < t.size() && !digits(2)) return false;
  }
  return i == t.size();
}

bool is_commit_sha(const std::string& sha) {
  if (sha.size() < 7 || sha.size() > 64) return false;
  for (char c : sha) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Status submit_rules(const SubmitMessage& s) {
  if (!s.commit_sha.empty() && !is_commit_sha(s.commit_sha)) {
    return Status::invalid_argument("commit_sha: expected 7 to 64 lowercase hex digits");
  }
  if (!s.commit_time.empty() && !is_commit_time(s.commit_time)) {
    return Status::invalid_argument(
        "commit_time: expected an ISO 8601 time (YYYY-MM-DD[THH:MM[:SS[.frac]]][Z|+HH[:MM]])");
  }
  if (s.gpu_models.size() > kMaxGpuModels) {
    return Status::invalid_argument("gpu_models: at most " + std::to_string(kMaxGpuModels));
  }
  for (size_t i = 0; i < s.gpu_models.size(); ++i) {
    const std::string& model = s.gpu_models[i];
    if (model.empty()) return Status::invalid_argument("gpu_models: expected non-empty strings");
    for (size_t j = 0; j < i; ++j) {
      if (s.gpu_models[j] == model)
        return Status::invalid_argument("gpu_models: " + model + " twice");
    }
  }
  if (!std::isfinite(s.time_cap_s) || s.time_cap_s < 0) {
    return Status::invalid_argument("time_cap_s: expected a finite number of seconds >= 0");
  }
  if (s.max_attempts && (*s.max_attempts < 1 || *s.max_attempts > kMaxMaxAttempts)) {
    return Status::invalid_argument("max_attempts: expected 1.." + std::to_string(kMaxMaxAttempts));
  }
  if (s.job_timeout_s && !(*s.job_timeout_s > 0)) {
    return Status::invalid_argument("job_timeout_s: expected a positive number of seconds");
  }
  if (s.trials && (*s.trials < kMinVerifiedTrials || *s.trials > kMaxTrials)) {
    return Status::invalid_argument("trials: the fleet runs " + std::to_string(kMinVerifiedTrials) +
                                    ".." + std::to_string(kMaxTrials) +
                                    " correctness trials per job");
  }
  if (!s.sim_jobs) {
    if (s.pack.empty())
      return Status::invalid_argument("pack: the kernel pack's sha256 is required");
    return Status::ok();
  }
  // One job per sleep time and model: the product is the run's size.
  if (s.sim_jobs->empty() ||
      s.sim_jobs->size() * std::max<size_t>(1, s.gpu_models.size()) > kMaxSimJobs) {
    return Status::invalid_argument(
        "sim_jobs: expected a non-empty list of sleep_ms numbers, at most " +
        std::to_string(kMaxSimJobs) + " jobs over the gpu_models");
  }
  for (double sleep_ms : *s.sim_jobs) {
    if (!(sleep_ms >= 0))
      return Status::invalid_argument("sim_jobs: expected non-negative numbers");
  }
  // Sim jobs only ever go to sim workers (a real worker would fail them: "no problem sim").
  for (const std::string& model : s.gpu_models) {
    if (model != "sim") {
      return Status::invalid_argument("sim_jobs: run only on sim workers (gpu_models [\"sim\"])");
    }
  }
  return Status::ok();
}

json QueryMessage::to_body() const {
  json body = {{"what", what}};
  if (!pack.empty()) body["pack"] = pack;
  return body;
}

Result<QueryMessage> QueryMessage::from_body(const json& body) {
  QueryMessage m;
  KB_ASSIGN_OR_RETURN(m.what, required<std::string>(body, "what"));
  KB_ASSIGN_OR_RETURN(m.pack, optional<std::string>(body, "pack", ""));
  return m;
}

json CancelMessage::to_body() const {
  return {{"run_id", run_id}};
}

Result<CancelMessage> CancelMessage::from_body(const json& body) {
  CancelMessage m;
  KB_ASSIGN_OR_RETURN(m.run_id, required<int64_t>(body, "run_id"));
  return m;
}

json WorkerControlMessage::to_body() const {
  return {{"action", action}, {"worker", worker}};
}

Result<WorkerControlMessage> WorkerControlMessage::from_body(const json& body) {
  WorkerControlMessage m;
  KB_ASSIGN_OR_RETURN(m.action, required<std::string>(body, "action"));
  KB_ASSIGN_OR_RETURN(m.worker, required<std::string>(body, "worker"));
  return m;
}

json ErrorMessage::to_body() const {
  json body = {{"message", message}};
  if (!code.empty()) body["code"] = code;
  return body;
}

Result<ErrorMessage> ErrorMessage::from_body(const json& body) {
  ErrorMessage m;
  KB_ASSIGN_OR_RETURN(m.message, required<std::string>(body, "message"));
  KB_ASSIGN_OR_RETURN(m.code, optional<std::string>(body, "code", ""));
  return m;
}

// --- REPLY bodies --------------------------------------------------------------------------------

json SubmitReply::to_body() const {
  return {{"run_id", run_id}, {"jobs", jobs}};
}

Result<SubmitReply> SubmitReply::from_body(const json& body) {
  SubmitReply m;
  KB_ASSIGN_OR_RETURN(m.run_id, required<int64_t>(body, "run_id"));
  KB_ASSIGN_OR_RETURN(m.jobs, optional<int64_t>(body, "jobs", 0));
  return m;
}

json PackQueryReply::to_body() const {
  return {{"have", have}};
}

Result<PackQueryReply> PackQueryReply::from_body(const json& body) {
  PackQueryReply m;
  KB_ASSIGN_OR_RETURN(m.have, required<bool>(body, "have"));
  return m;
}

json HealthReply::to_body() const {
  return {{"workers", workers},
          {"workers_busy", workers_busy},
          {"workers_lost", workers_lost},
          {"queued", queued},
          {"leased", leased},
          {"runs", runs},
          {"jobs_completed", jobs_completed},
          {"db_up", db_up},
          {"draining", draining}};
}

Result<HealthReply> HealthReply::from_body(const json& body) {
  HealthReply m;
  KB_ASSIGN_OR_RETURN(m.workers, required<int64_t>(body, "workers"));
  KB_ASSIGN_OR_RETURN(m.workers_busy, required<int64_t>(body, "workers_busy"));
  KB_ASSIGN_OR_RETURN(m.workers_lost, required<int64_t>(body, "workers_lost"));
  KB_ASSIGN_OR_RETURN(m.queued, required<int64_t>(body, "queued"));
  KB_ASSIGN_OR_RETURN(m.leased, required<int64_t>(body, "leased"));
  KB_ASSIGN_OR_RETURN(m.runs, required<int64_t>(body, "runs"));
  KB_ASSIGN_OR_RETURN(m.jobs_completed, required<int64_t>(body, "jobs_completed"));
  KB_ASSIGN_OR_RETURN(m.db_up, required<bool>(body, "db_up"));
  KB_ASSIGN_OR_RETURN(m.draining, required<bool>(body, "draining"));
  return m;
}

json CancelReply::to_body() const {
  return {{"run_id", run_id}, {"cancelled", cancelled}};
}

Result<CancelReply> CancelReply::from_body(const json& body) {
  CancelReply m;
  KB_ASSIGN_OR_RETURN(m.run_id, required<int64_t>(body, "run_id"));
  KB_ASSIGN_OR_RETURN(m.cancelled, required<int64_t>(body, "cancelled"));
  return m;
}

// The request's body, echoed once carried out.
json WorkerControlReply::to_body() const {
  return WorkerControlMessage{action, worker}.to_body();
}

Result<WorkerControlReply> WorkerControlReply::from_body(const json& body) {
  KB_ASSIGN_OR_RETURN(const WorkerControlMessage done, WorkerControlMessage::from_body(body));
  return WorkerControlReply{done.worker, done.action};
}

MessageType type_of(const AnyMessage& message) {
  return std::visit([](const auto& m) { return std::decay_t<decltype(m)>::kType; }, message);
}

Result<AnyMessage> read_body(MessageType type, const json& body) {
  using T = MessageType;
  switch (type) {
    case T::kReady:
      return read_as<ReadyMessage>(body);
    case T::kHeartbeat:
      return AnyMessage(HeartbeatMessage{});
    case T::kRequest:
      return read_as<RequestMessage>(body);
    case T::kResult:
      return read_as<ResultMessage>(body);
    case T::kPackRequest:
      return read_as<PackRequestMessage>(body);
    case T::kBye:
      return read_as<ByeMessage>(body);
    case T::kWelcome:
      return read_as<WelcomeMessage>(body);
    case T::kJob:
      return read_as<JobMessage>(body);
    case T::kAck:
      return read_as<AckMessage>(body);
    case T::kPack:
      return read_as<PackMessage>(body);
    case T::kDisconnect:
      return read_as<DisconnectMessage>(body);
    case T::kRevoke:
      return read_as<RevokeMessage>(body);
    case T::kSubmit:
      return read_as<SubmitMessage>(body);
    case T::kQuery:
      return read_as<QueryMessage>(body);
    case T::kCancel:
      return read_as<CancelMessage>(body);
    case T::kWorkerControl:
      return read_as<WorkerControlMessage>(body);
    case T::kReply:
      return AnyMessage(ReplyMessage{});
    case T::kError:
      return read_as<ErrorMessage>(body);
  }
  return Status::invalid_argument("unknown message type");
}

}  // namespace kb::wire
