// The kbfleet protocol's messages (schemas/protocol.md): their types (MessageType), a message as
// type, JSON body and payload (Message), and the body of each as a C++ struct ("Bodies"), with
// AnyMessage holding any one of them. Each struct is encoded (to_body) and decoded (from_body) here
// and nowhere else: the coordinator, the worker and the CLI build and read bodies only through
// these. How a message travels as frames is wire_protocol.h.
//
//   wire::Message m = wire::to_message(wire::AckMessage{.job_id = 7, .attempt = 1});
//   wire::DecodeResult r = wire::decode(frames);         // r.body: an AnyMessage
//   if (const auto* job = std::get_if<wire::JobMessage>(&r.body)) on_job(*job);
//
// from_body checks the fields' presence and JSON types (json_fields.h) and nothing else; an error
// names the field and the type expected. wire::decode (wire_protocol.h) runs it, through
// read_body, once on every message it receives: a body of the wrong shape is a
// DecodeError::kMissingField there, counted and dropped before any handler sees it, and the
// handlers take the struct decode read (AnyMessage), never the JSON. REPLY bodies, which depend on
// the request, are read by the client with the struct of what it asked.
// Limits that are policy rather than shape (credits 1..1000, a SUBMIT's attempts and trials) stay
// with the receiver; SUBMIT's are submit_rules() below, shared by the coordinator and `kb submit`.
//
// Fields a body may omit have the defaults written here; bodies may carry fields this build does
// not know (forward compatibility within protocol version 1), which from_body ignores. Encoding
// keeps the wire format of version 1: an optional field at its default is left out only where the
// table below says so.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"

namespace kb::wire {

// --- the messages -------------------------------------------------------------------------------

enum class MessageType {
  // worker -> coordinator
  kReady,        // registration: GPU identity and software versions
  kHeartbeat,    // both directions
  kRequest,      // credits: how many more jobs the worker will take
  kResult,       // a job's result (kept on the worker's disk until ACK)
  kPackRequest,  // the worker lacks a pack: asks for it by hash
  kBye,          // draining (gives back unstarted jobs) or leaving now (final)
  // coordinator -> worker
  kWelcome,     // registration accepted: heartbeat interval, worker id
  kJob,         // one job to run
  kAck,         // the result's row is committed: the worker may delete it
  kPack,        // pack bytes in the payload frame
  kDisconnect,  // the coordinator is draining or refuses the worker
  kRevoke,      // a lease ended (deadline, cancel, drain, not the holder): stop the job
  // client <-> coordinator
  kSubmit,
  kQuery,
  kCancel,
  kWorkerControl,  // admin: drain, resume or release (from quarantine) a worker by name
  kReply,
  kError,
};

std::string_view to_string(MessageType type);

struct Message {
  MessageType type = MessageType::kHeartbeat;
  nlohmann::json body = nlohmann::json::object();
  std::string payload;  // empty when the message has no payload frame
};

// The type whose name on the wire (frame 1) is `name`; nullopt when no type has it.
std::optional<MessageType> message_type_named(std::string_view name);

// A lease's fencing token (schemas/protocol.md, "Leases and fencing"): JOB carries it, RESULT
// echoes it, READY's in_flight and BYE's release list it. lease_id 0: not given (a body from
// before lease ids).
struct LeaseToken {
  int64_t job_id = 0;
  int attempt = 0;
  uint64_t lease_id = 0;
  bool operator==(const LeaseToken&) const = default;

  nlohmann::json to_body() const;
  static Result<LeaseToken> from_body(const nlohmann::json& body);
};

// READY.device: the device as `kb-executor --describe` reports it. The fields below are the ones
// the coordinator reads; `described` keeps every field the executor wrote (ordinal, cores, ...),
// which is sent as it is, the typed fields written over it.
struct DeviceIdentity {
  std::string kind;  // cuda | cpu | sim (checked by the coordinator; "" when absent)
  std::string model, uuid, compute_capability;
  int64_t memory_bytes = 0;
  nlohmann::json described = nlohmann::json::object();

  nlohmann::json to_body() const;
  static Result<DeviceIdentity> from_body(const nlohmann::json& body);
};

// --- worker -> coordinator ----------------------------------------------------------------------

struct ReadyMessage {
  static constexpr MessageType kType = MessageType::kReady;
  std::string worker;  // the worker's name
  DeviceIdentity device;
  nlohmann::json software = nlohmann::json::object();  // {driver, cuda, cudnn, cublas, kbfleet}
  std::string host;
  std::vector<LeaseToken> in_flight{};  // jobs the worker runs, holds or has unacked results of
  std::optional<int> protocol{};        // absent: a worker from before protocol versions

  nlohmann::json to_body() const;
  static Result<ReadyMessage> from_body(const nlohmann::json& body);
};

struct RequestMessage {
  static constexpr MessageType kType = MessageType::kRequest;
  int64_t credits = 0;  // jobs the worker will take beyond those it holds

  nlohmann::json to_body() const;
  static Result<RequestMessage> from_body(const nlohmann::json& body);
};

// Always written whole (infra_failure only when not empty): it is spooled before it is sent.
struct ResultMessage {
  static constexpr MessageType kType = MessageType::kResult;
  LeaseToken token;
  std::string epoch;  // the database epoch of the session the JOB came on; "" unknown
  nlohmann::json result = nlohmann::json::object();  // a JobResult as common/job_result.h writes it
  double wall_ms = 0;
  double started_at_ms = 0, finished_at_ms = 0;  // the worker's steady clock
  std::string infra_failure;  // "kind: detail" when the job could not run here; else ""

  nlohmann::json to_body() const;
  static Result<ResultMessage> from_body(const nlohmann::json& body);
};

struct PackRequestMessage {
  static constexpr MessageType kType = MessageType::kPackRequest;
  std::string pack;  // sha256 hex

  nlohmann::json to_body() const;
  static Result<PackRequestMessage> from_body(const nlohmann::json& body);
};

// draining and final are written only when true; release always.
struct ByeMessage {
  static constexpr MessageType kType = MessageType::kBye;
  std::vector<LeaseToken> release{};  // held jobs given back, not counted as attempts
  bool draining = false;
  bool final = false;

  nlohmann::json to_body() const;
  static Result<ByeMessage> from_body(const nlohmann::json& body);
};

// --- coordinator -> worker ----------------------------------------------------------------------

struct WelcomeMessage {
  static constexpr MessageType kType = MessageType::kWelcome;
  int64_t worker_id = 0;
  int64_t heartbeat_ms = 0;
  std::optional<int> liveness;  // heartbeats of silence before the peer is gone
  std::string epoch;            // the database's epoch

  nlohmann::json to_body() const;
  static Result<WelcomeMessage> from_body(const nlohmann::json& body);
};

// spec_hash is written only when not empty (sim jobs have none), trials only when above 0.
struct JobMessage {
  static constexpr MessageType kType = MessageType::kJob;
  int64_t job_id = 0;
  int attempt = 0;
  uint64_t lease_id = 0;
  uint64_t seed = 0;
  std::string problem, preset;
  std::string pack;  // sha256 hex; "" for sim jobs
  int64_t run_id = 0;
  double time_cap_s = 0;  // 0: the executor's default
  int64_t trials = 0;     // correctness trials (the run's SUBMIT trials); 0: the executor's default
  int64_t deadline_ms = 0;                           // wall budget of this attempt; 0: unknown
  nlohmann::json params = nlohmann::json::object();  // {sleep_ms} for sim jobs
  std::string spec_hash{};  // sha256 of the problem's spec file, as in the problems table

  LeaseToken token() const { return {job_id, attempt, lease_id}; }
  nlohmann::json to_body() const;
  static Result<JobMessage> from_body(const nlohmann::json& body);
};

// rejected is written only when not empty.
struct AckMessage {
  static constexpr MessageType kType = MessageType::kAck;
  int64_t job_id = 0;
  int attempt = 0;
  std::string rejected{};  // "": the result is stored; else why it was refused (lease fencing)

  nlohmann::json to_body() const;
  static Result<AckMessage> from_body(const nlohmann::json& body);
};

// The bytes travel in the message's payload frame; missing is written only when true.
struct PackMessage {
  static constexpr MessageType kType = MessageType::kPack;
  std::string pack;
  bool missing = false;  // the coordinator does not have it (no payload then)

  nlohmann::json to_body() const;
  static Result<PackMessage> from_body(const nlohmann::json& body);
};

struct DisconnectMessage {
  static constexpr MessageType kType = MessageType::kDisconnect;
  std::string reason;

  nlohmann::json to_body() const;
  static Result<DisconnectMessage> from_body(const nlohmann::json& body);
};

struct RevokeMessage {
  static constexpr MessageType kType = MessageType::kRevoke;
  LeaseToken token;
  std::string reason;  // lease_expired | cancelled | not_yours | superseded | drain

  nlohmann::json to_body() const;
  static Result<RevokeMessage> from_body(const nlohmann::json& body);
};

// --- client <-> coordinator ---------------------------------------------------------------------
// Every request may carry a request_id, which the answer echoes when it is a number or a string of
// at most kMaxRequestIdBytes (anything else is not echoed: a 1 MiB id echoed into every ERROR let
// a client that never reads fill the coordinator's send queue): the transport's business
// (cli/fleet_client.h, Coordinator::answer_client), so it is not in these structs.
inline constexpr size_t kMaxRequestIdBytes = 128;

// problems, preset, gpu_models, pack and submitted_by are always written; the other fields only
// when set (not empty, not absent; time_cap_s when above 0).
struct SubmitMessage {
  static constexpr MessageType kType = MessageType::kSubmit;
  std::string problems;                 // a suite name or comma-separated problem ids
  std::string suite;                    // the suite the ids came from, as a label
  std::string preset;                   // "": full (sim for a sim run)
  std::vector<std::string> gpu_models;  // empty: any worker
  std::string commit_sha, branch, commit_time;
  std::string pack;                       // sha256 hex; "" only for a sim run
  std::string submitted_by;               // kept only without keys: with keys the key's name
  std::optional<uint64_t> seed{};         // absent: the coordinator draws one
  double time_cap_s = 0;                  // 0: the worker's default
  std::optional<double> job_timeout_s{};  // absent: derived from the prediction
  std::optional<std::vector<double>> sim_jobs{};  // sleep_ms per job: a run of the sim device
  std::optional<int> max_attempts{};              // absent: kDefaultMaxAttempts
  std::optional<int64_t> trials{};  // correctness trials per job; absent: the worker's

  nlohmann::json to_body() const;
  static Result<SubmitMessage> from_body(const nlohmann::json& body);
};

inline constexpr int kDefaultMaxAttempts = 3;
inline constexpr int kMaxMaxAttempts = 10;
inline constexpr int64_t kMaxTrials = 1000;
inline constexpr size_t kMaxSimJobs = 1'000'000;  // sim jobs of one run (sleep times x models)
inline constexpr size_t kMaxGpuModels = 32;       // gpu_models of one SUBMIT, each named once

// SUBMIT's rules that do not need the problem catalog: commit_sha, commit_time, gpu_models (each
// once, at most kMaxGpuModels), time_cap_s, max_attempts, job_timeout_s, trials (the fleet's
// verification policy, docs/verification.md), sim_jobs (at most kMaxSimJobs jobs), and a pack
// for a real run. Run by the coordinator on every SUBMIT; `kb submit` runs it before sending,
// so that a mistake is reported without a round trip. Status::invalid_argument naming the field.
Status submit_rules(const SubmitMessage& submit);

// A commit label: 7 to 64 lowercase hex digits (stored, and matched by `kb compare`, so never
// text that could be read as SQL).
bool is_commit_sha(const std::string& sha);

// A commit time as `git log --format=%cI` writes it (ISO 8601: YYYY-MM-DD[THH:MM[:SS[.frac]]]
// [Z|+HH[:MM]|-HH[:MM]]), checked before PostgreSQL's timestamptz sees it.
bool is_commit_time(const std::string& time);

struct QueryMessage {
  static constexpr MessageType kType = MessageType::kQuery;
  std::string what;  // pack | health
  std::string pack;  // for what == pack

  nlohmann::json to_body() const;
  static Result<QueryMessage> from_body(const nlohmann::json& body);
};

struct CancelMessage {
  static constexpr MessageType kType = MessageType::kCancel;
  int64_t run_id = 0;

  nlohmann::json to_body() const;
  static Result<CancelMessage> from_body(const nlohmann::json& body);
};

struct WorkerControlMessage {
  static constexpr MessageType kType = MessageType::kWorkerControl;
  std::string action;  // drain | resume | release
  std::string worker;  // its name

  nlohmann::json to_body() const;
  static Result<WorkerControlMessage> from_body(const nlohmann::json& body);
};

// code is written only when not empty.
struct ErrorMessage {
  static constexpr MessageType kType = MessageType::kError;
  std::string message;
  std::string code;  // bad_request | unknown_pack | forbidden | unavailable

  nlohmann::json to_body() const;
  static Result<ErrorMessage> from_body(const nlohmann::json& body);
};

// --- REPLY bodies --------------------------------------------------------------------------------
// A REPLY's body depends on the request it answers, so wire::decode cannot read it: the client
// reads it with the struct of what it asked (cli/fleet_client.h, FleetClient::ask), the
// coordinator writes it with the same struct. kType is REPLY for all of them, so that
// from_message names REPLY in an error. Every field is always written, and required when read but
// SubmitReply's jobs. No REPLY is a pass-through document: `kb` reads each of these field by field
// (its `--json` prints to_body()).

struct SubmitReply {  // SUBMIT
  static constexpr MessageType kType = MessageType::kReply;
  int64_t run_id = 0;
  int64_t jobs = 0;  // jobs created (read as 0 when absent: a coordinator from before the count)

  nlohmann::json to_body() const;
  static Result<SubmitReply> from_body(const nlohmann::json& body);
};

struct PackQueryReply {  // QUERY {what: pack}
  static constexpr MessageType kType = MessageType::kReply;
  bool have = false;  // the coordinator has the pack: a SUBMIT need not carry its bytes

  nlohmann::json to_body() const;
  static Result<PackQueryReply> from_body(const nlohmann::json& body);
};

// QUERY {what: health}: the scheduler's counters (coordinator/scheduler.h, SchedulerStats).
struct HealthReply {
  static constexpr MessageType kType = MessageType::kReply;
  int64_t workers = 0, workers_busy = 0, workers_lost = 0;  // workers: busy + idle
  int64_t queued = 0, leased = 0, runs = 0;
  int64_t jobs_completed = 0;  // since the coordinator started
  bool db_up = false, draining = false;

  nlohmann::json to_body() const;
  static Result<HealthReply> from_body(const nlohmann::json& body);
};

struct CancelReply {  // CANCEL
  static constexpr MessageType kType = MessageType::kReply;
  int64_t run_id = 0;
  int64_t cancelled = 0;  // the run's open jobs that this CANCEL ended

  nlohmann::json to_body() const;
  static Result<CancelReply> from_body(const nlohmann::json& body);
};

struct WorkerControlReply {  // WORKER_CONTROL: the request, echoed once done
  static constexpr MessageType kType = MessageType::kReply;
  std::string worker;
  std::string action;  // drain | resume | release

  nlohmann::json to_body() const;
  static Result<WorkerControlReply> from_body(const nlohmann::json& body);
};

// --- any message --------------------------------------------------------------------------------

// HEARTBEAT: liveness only; any fields of its body are ignored.
struct HeartbeatMessage {
  static constexpr MessageType kType = MessageType::kHeartbeat;
};

// A REPLY, its body unread: what it holds depends on the request it answers, so the requester
// reads it once, from DecodeResult::message, with the reply struct of what it asked (above).
struct ReplyMessage {
  static constexpr MessageType kType = MessageType::kReply;
};

// One message's body as its type's struct, in MessageType's order. wire::decode (wire_protocol.h)
// reads each body into it once; the coordinator's and the worker's handlers take these structs.
using AnyMessage =
    std::variant<ReadyMessage, HeartbeatMessage, RequestMessage, ResultMessage, PackRequestMessage,
                 ByeMessage, WelcomeMessage, JobMessage, AckMessage, PackMessage, DisconnectMessage,
                 RevokeMessage, SubmitMessage, QueryMessage, CancelMessage, WorkerControlMessage,
                 ReplyMessage, ErrorMessage>;

MessageType type_of(const AnyMessage& message);

// The body read by the struct of `type`: what wire::decode runs on every message it receives. An
// error names the field (not the type: decode adds it).
Result<AnyMessage> read_body(MessageType type, const nlohmann::json& body);

// --- one message <-> one struct -----------------------------------------------------------------

template <typename M>
Message to_message(const M& body, std::string payload = {}) {
  return Message{M::kType, body.to_body(), std::move(payload)};
}

// The message's body as M; an error says which message and field was wrong. For a REPLY, which
// decode leaves unread; the other types arrive read, in DecodeResult::body.
template <typename M>
Result<M> from_message(const Message& message) {
  if (message.type != M::kType) {
    return Status::invalid_argument("expected " + std::string(to_string(M::kType)) + ", got " +
                                    std::string(to_string(message.type)));
  }
  Result<M> decoded = M::from_body(message.body);
  if (!decoded.is_ok()) {
    return Status::invalid_argument(std::string(to_string(M::kType)) + ": " +
                                    decoded.status().message());
  }
  return decoded;
}

}  // namespace kb::wire
