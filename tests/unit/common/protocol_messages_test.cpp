// The protocol's bodies: each struct round-trips through its one encoder and decoder, keeps the
// version 1 wire format, and a malformed body of each kind is rejected with an error naming the
// message and the field.
#include "common/protocol_messages.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <variant>
#include <vector>

#include "common/job_result.h"
#include "common/wire_protocol.h"
#include "tests/support/assert_ok.h"

namespace kb::wire {
namespace {

using nlohmann::json;

JobMessage a_job() {
  JobMessage job;
  job.job_id = 9;
  job.attempt = 2;
  job.lease_id = 1234567;
  job.seed = 42;
  job.problem = "L1_003";
  job.preset = "small";
  job.pack = "ab";
  job.run_id = 3;
  job.time_cap_s = 1.5;
  job.deadline_ms = 60000;
  job.params = {{"sleep_ms", 3}};
  return job;
}

ResultMessage a_result() {
  ResultMessage r;
  r.token = {7, 1, 99};
  r.epoch = "e1";
  r.result = {{"status", "ok"}, {"problem_id", "L1_003"}};
  r.wall_ms = 12.5;
  r.started_at_ms = 100;
  r.finished_at_ms = 112.5;
  return r;
}

// m through encode and decode, read back as a handler gets it: the struct decode read (a REPLY's
// body by the requester, with from_message).
template <typename M>
M round_trip(const M& m) {
  DecodeResult decoded = decode(encode(to_message(m, M::kType == MessageType::kPack ? "so" : "")));
  EXPECT_TRUE(decoded.ok) << decoded.detail;
  if constexpr (M::kType == MessageType::kReply) {
    Result<M> back = from_message<M>(decoded.message);
    EXPECT_TRUE(back.is_ok()) << back.status().to_string();
    return back.is_ok() ? back.value() : M{};
  } else {
    const M* back = std::get_if<M>(&decoded.body);
    EXPECT_NE(back, nullptr) << to_string(type_of(decoded.body));
    return back ? *back : M{};
  }
}

// The error from_message gives for `body` read as M.
template <typename M>
std::string error_of(const json& body) {
  Result<M> r = from_message<M>(Message{M::kType, body, {}});
  EXPECT_FALSE(r.is_ok()) << body.dump();
  return r.is_ok() ? "" : r.status().message();
}

TEST(ProtocolMessages, AJobRoundTripsEveryField) {
  const JobMessage job = round_trip(a_job());
  EXPECT_EQ(job.token(), (LeaseToken{9, 2, 1234567}));
  EXPECT_EQ(job.seed, 42u);
  EXPECT_EQ(job.problem, "L1_003");
  EXPECT_DOUBLE_EQ(job.time_cap_s, 1.5);
  EXPECT_EQ(job.deadline_ms, 60000);
  EXPECT_EQ(job.params, (json{{"sleep_ms", 3}}));
  EXPECT_EQ(job.spec_hash, "");
  EXPECT_EQ(job.trials, 0);  // absent: the executor's default
}

// A run's SUBMIT trials reach the worker in each JOB; a count the fleet never runs is refused.
TEST(ProtocolMessages, AJobCarriesTheRunsTrialsWithinTheFleetsRange) {
  JobMessage job = a_job();
  job.trials = 7;
  EXPECT_EQ(job.to_body()["trials"], 7);
  EXPECT_EQ(round_trip(job).trials, 7);
  for (const int64_t bad : {int64_t{-1}, int64_t{kMinVerifiedTrials - 1}, kMaxTrials + 1}) {
    json body = a_job().to_body();
    body["trials"] = bad;
    EXPECT_NE(error_of<JobMessage>(body).find("trials"), std::string::npos) << bad;
  }
}

// The JOB the coordinator wrote before the shared definition, field for field.
TEST(ProtocolMessages, AJobKeepsTheVersion1WireFormat) {
  JobMessage job = a_job();
  const json before = {{"job_id", 9},
                       {"attempt", 2},
                       {"lease_id", 1234567},
                       {"seed", 42},
                       {"problem", "L1_003"},
                       {"preset", "small"},
                       {"pack", "ab"},
                       {"run_id", 3},
                       {"time_cap_s", 1.5},
                       {"deadline_ms", 60000},
                       {"params", {{"sleep_ms", 3}}}};
  EXPECT_EQ(job.to_body().dump(), before.dump());
  job.spec_hash = "feed";
  EXPECT_EQ(job.to_body()["spec_hash"], "feed");
}

// The RESULT the worker wrote before the shared definition, field for field.
TEST(ProtocolMessages, AResultKeepsTheVersion1WireFormatAndRoundTrips) {
  const json before = {{"job_id", 7},
                       {"attempt", 1},
                       {"lease_id", 99},
                       {"epoch", "e1"},
                       {"result", {{"status", "ok"}, {"problem_id", "L1_003"}}},
                       {"wall_ms", 12.5},
                       {"started_at_ms", 100.0},
                       {"finished_at_ms", 112.5}};
  EXPECT_EQ(a_result().to_body().dump(), before.dump());
  ResultMessage failed = a_result();
  failed.infra_failure = "spawn: no executor";
  const ResultMessage back = round_trip(failed);
  EXPECT_EQ(back.token, (LeaseToken{7, 1, 99}));
  EXPECT_EQ(back.infra_failure, "spawn: no executor");
  EXPECT_EQ(back.result, failed.result);
}

TEST(ProtocolMessages, ReadyKeepsTheExecutorsDeviceFieldsAndItsTokens) {
  ReadyMessage ready;
  ready.worker = "w1";
  Result<DeviceIdentity> device = DeviceIdentity::from_body(
      {{"kind", "cpu"}, {"model", "cpu"}, {"memory_bytes", 1024}, {"cores", 16}});
  KB_ASSERT_OK(device);
  ready.device = device.value();
  ready.in_flight = {{1, 2, 3}, {4, 5, 0}};
  ready.protocol = kProtocolVersion;
  const json body = ready.to_body();
  EXPECT_EQ(body["device"]["cores"], 16);  // passed through as the executor wrote it
  const ReadyMessage back = round_trip(ready);
  EXPECT_EQ(back.device.kind, "cpu");
  EXPECT_EQ(back.device.memory_bytes, 1024);
  EXPECT_EQ(back.in_flight, ready.in_flight);
  EXPECT_EQ(back.protocol, kProtocolVersion);
  EXPECT_FALSE(ReadyMessage::from_body(
                   {{"worker", "w"}, {"device", json::object()}, {"software", json::object()}})
                   .value()
                   .protocol);  // absent: a worker from before versions
}

TEST(ProtocolMessages, ByeWritesOnlyTheFlagsThatAreSet) {
  ByeMessage bye;
  bye.release = {{3, 1, 8}};
  EXPECT_EQ(bye.to_body(), (json{{"release", {{{"job_id", 3}, {"attempt", 1}, {"lease_id", 8}}}}}));
  bye.final = true;
  const ByeMessage back = round_trip(bye);
  EXPECT_TRUE(back.final);
  EXPECT_FALSE(back.draining);
  EXPECT_EQ(back.release, bye.release);
}

TEST(ProtocolMessages, TheSmallMessagesRoundTrip) {
  EXPECT_EQ(round_trip(RequestMessage{2}).credits, 2);
  EXPECT_EQ(round_trip(PackRequestMessage{"ab"}).pack, "ab");
  const WelcomeMessage welcome = round_trip(WelcomeMessage{5, 1000, 3, "e1"});
  EXPECT_EQ(welcome.worker_id, 5);
  EXPECT_EQ(welcome.liveness, 3);
  EXPECT_EQ(round_trip(AckMessage{7, 1, "stale_lease"}).rejected, "stale_lease");
  EXPECT_EQ((AckMessage{7, 1, ""}.to_body()), (json{{"job_id", 7}, {"attempt", 1}}));
  EXPECT_TRUE(round_trip(PackMessage{"ab", true}).missing);
  EXPECT_EQ(round_trip(DisconnectMessage{"draining"}).reason, "draining");
  const RevokeMessage revoke{{7, 1, 2}, "drain"};
  EXPECT_EQ(round_trip(revoke).token, (LeaseToken{7, 1, 2}));
  EXPECT_EQ(round_trip(QueryMessage{"pack", "ab"}).pack, "ab");
  EXPECT_EQ(round_trip(CancelMessage{12}).run_id, 12);
  EXPECT_EQ(round_trip(WorkerControlMessage{"drain", "w1"}).worker, "w1");
  EXPECT_EQ(round_trip(ErrorMessage{"no", "bad_request"}).code, "bad_request");
}

// Each REPLY body as the coordinator wrote it before the reply structs, field for field.
TEST(ProtocolMessages, EachReplyKeepsTheVersion1WireFormat) {
  EXPECT_EQ((SubmitReply{4, 22}.to_body().dump()), R"({"jobs":22,"run_id":4})");
  EXPECT_EQ(PackQueryReply{true}.to_body().dump(), R"({"have":true})");
  EXPECT_EQ((CancelReply{12, 3}.to_body().dump()), R"({"cancelled":3,"run_id":12})");
  EXPECT_EQ((WorkerControlReply{"w1", "drain"}.to_body().dump()),
            R"({"action":"drain","worker":"w1"})");
  const HealthReply health{.workers = 3,
                           .workers_busy = 2,
                           .workers_lost = 1,
                           .queued = 40,
                           .leased = 2,
                           .runs = 5,
                           .jobs_completed = 7,
                           .db_up = true,
                           .draining = false};
  EXPECT_EQ(health.to_body().dump(),
            R"({"db_up":true,"draining":false,"jobs_completed":7,"leased":2,"queued":40,)"
            R"("runs":5,"workers":3,"workers_busy":2,"workers_lost":1})");
}

TEST(ProtocolMessages, EachReplyRoundTrips) {
  const SubmitReply submit = round_trip(SubmitReply{4, 22});
  EXPECT_EQ(submit.run_id, 4);
  EXPECT_EQ(submit.jobs, 22);
  EXPECT_TRUE(round_trip(PackQueryReply{true}).have);
  EXPECT_FALSE(round_trip(PackQueryReply{false}).have);
  const CancelReply cancel = round_trip(CancelReply{12, 3});
  EXPECT_EQ(cancel.run_id, 12);
  EXPECT_EQ(cancel.cancelled, 3);
  const WorkerControlReply control = round_trip(WorkerControlReply{"w1", "release"});
  EXPECT_EQ(control.worker, "w1");
  EXPECT_EQ(control.action, "release");
  const HealthReply health =
      round_trip(HealthReply{1, 2, 3, 4, 5, 6, 7, /*db_up=*/false, /*draining=*/true});
  EXPECT_EQ(health.workers, 1);
  EXPECT_EQ(health.workers_busy, 2);
  EXPECT_EQ(health.workers_lost, 3);
  EXPECT_EQ(health.queued, 4);
  EXPECT_EQ(health.leased, 5);
  EXPECT_EQ(health.runs, 6);
  EXPECT_EQ(health.jobs_completed, 7);
  EXPECT_FALSE(health.db_up);
  EXPECT_TRUE(health.draining);
  // The request_id the coordinator echoes in every REPLY is the transport's, not the struct's.
  EXPECT_TRUE(PackQueryReply::from_body({{"have", true}, {"request_id", "r1"}}).value().have);
  // A coordinator from before the job count.
  EXPECT_EQ(SubmitReply::from_body({{"run_id", 4}}).value().jobs, 0);
}

// One malformed body per REPLY kind: refused, naming REPLY and the field.
TEST(ProtocolMessages, AMalformedReplyOfEachKindIsRejectedWithTheFieldNamed) {
  EXPECT_EQ(error_of<SubmitReply>({{"run_id", "4"}}),
            "REPLY: field 'run_id': expected an integer (int64), got a string");
  EXPECT_EQ(error_of<PackQueryReply>(json::object()),
            "REPLY: field 'have': missing (expected a boolean)");
  EXPECT_EQ(error_of<HealthReply>({{"workers", 1},
                                   {"workers_busy", 0},
                                   {"workers_lost", 0},
                                   {"queued", 0},
                                   {"leased", 0},
                                   {"runs", 0},
                                   {"jobs_completed", 0},
                                   {"db_up", "yes"}}),
            "REPLY: field 'db_up': expected a boolean, got a string");
  EXPECT_EQ(error_of<CancelReply>({{"run_id", 12}, {"cancelled", 2.5}}),
            "REPLY: field 'cancelled': expected an integer (int64), got a fractional number");
  EXPECT_EQ(error_of<WorkerControlReply>({{"worker", "w1"}}),
            "REPLY: field 'action': missing (expected a string)");
}

TEST(ProtocolMessages, ASubmitRoundTripsWhatKbSubmitSends) {
  SubmitMessage submit;
  submit.problems = "L1_003,L2_017";
  submit.preset = "small";
  submit.gpu_models = {"H200"};
  submit.pack = std::string(64, 'a');
  submit.seed = 7;
  submit.max_attempts = 3;
  submit.trials = 5;
  const json body = submit.to_body();
  EXPECT_FALSE(body.contains("sim_jobs"));
  EXPECT_FALSE(body.contains("job_timeout_s"));
  const SubmitMessage back = round_trip(submit);
  EXPECT_EQ(back.gpu_models, submit.gpu_models);
  EXPECT_EQ(back.seed, 7u);
  EXPECT_EQ(back.trials, 5);
  EXPECT_FALSE(back.sim_jobs);
  KB_EXPECT_OK(submit_rules(back));
}

// One malformed body per message type: each is refused, naming the message and the field.
TEST(ProtocolMessages, AMalformedMessageOfEachKindIsRejectedWithTheFieldNamed) {
  EXPECT_EQ(error_of<ReadyMessage>({{"worker", 1}, {"device", json::object()}}),
            "READY: field 'worker': expected a string, got an integer");
  EXPECT_EQ(error_of<ReadyMessage>({{"worker", "w"},
                                    {"device", json::object()},
                                    {"software", json::object()},
                                    {"in_flight", {{{"job_id", 1}}}}}),
            "READY: in_flight[0]: field 'attempt': missing (expected an integer (int))");
  EXPECT_EQ(
      error_of<ReadyMessage>(
          {{"worker", "w"}, {"device", {{"memory_bytes", "big"}}}, {"software", json::object()}}),
      "READY: device: field 'memory_bytes': expected an integer (int64), got a string");
  EXPECT_EQ(error_of<RequestMessage>({{"credits", 1.5}}),
            "REQUEST: field 'credits': expected an integer (int64), got a fractional number");
  EXPECT_EQ(error_of<ResultMessage>({{"job_id", 1}, {"attempt", 1}, {"result", "ok"}}),
            "RESULT: field 'result': expected an object, got a string");
  EXPECT_EQ(error_of<PackRequestMessage>(json::object()),
            "PACK_REQUEST: field 'pack': missing (expected a string)");
  EXPECT_EQ(error_of<ByeMessage>({{"final", "yes"}}),
            "BYE: field 'final': expected a boolean, got a string");
  EXPECT_EQ(error_of<WelcomeMessage>({{"worker_id", 1}, {"heartbeat_ms", 1000}, {"epoch", 5}}),
            "WELCOME: field 'epoch': expected a string, got an integer");
  EXPECT_EQ(error_of<JobMessage>({{"job_id", "nine"}, {"attempt", 1}}),
            "JOB: field 'job_id': expected an integer (int64), got a string");
  EXPECT_EQ(error_of<AckMessage>({{"job_id", 1}}),
            "ACK: field 'attempt': missing (expected an integer (int))");
  EXPECT_EQ(error_of<PackMessage>({{"pack", "ab"}, {"missing", 1}}),
            "PACK: field 'missing': expected a boolean, got an integer");
  EXPECT_EQ(error_of<DisconnectMessage>({{"reason", nullptr}}),
            "DISCONNECT: field 'reason': missing (expected a string)");
  EXPECT_EQ(
      error_of<RevokeMessage>({{"job_id", 1}, {"attempt", 1}, {"lease_id", -1}, {"reason", "x"}}),
      "REVOKE: field 'lease_id': expected a non-negative integer (uint64), got an integer");
  EXPECT_EQ(error_of<SubmitMessage>({{"problems", "sim"}, {"gpu_models", "H200"}}),
            "SUBMIT: field 'gpu_models': expected a list of strings, got a string");
  EXPECT_EQ(error_of<QueryMessage>({{"what", json::array()}}),
            "QUERY: field 'what': expected a string, got a list");
  EXPECT_EQ(error_of<CancelMessage>({{"run_id", "12"}}),
            "CANCEL: field 'run_id': expected an integer (int64), got a string");
  EXPECT_EQ(error_of<WorkerControlMessage>({{"action", "drain"}}),
            "WORKER_CONTROL: field 'worker': missing (expected a string)");
  EXPECT_EQ(error_of<ErrorMessage>({{"message", "x"}, {"code", 3}}),
            "ERROR: field 'code': expected a string, got an integer");
}

TEST(ProtocolMessages, FromMessageRefusesAMessageOfAnotherType) {
  Result<AckMessage> r = from_message<AckMessage>(to_message(RequestMessage{1}));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(), "expected ACK, got REQUEST");
}

// The checks wire::decode runs: a body its struct cannot read is a missing_field, whose detail
// names the field, and the type and body stay readable so that a client can be answered.
TEST(ProtocolMessages, DecodeRunsEachTypesDecoder) {
  DecodeResult r = decode({"KBF1", "BYE", R"({"final": "yes", "request_id": 4})"});
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.error, DecodeError::kMissingField);
  EXPECT_EQ(r.detail, "BYE: field 'final': expected a boolean, got a string");
  EXPECT_EQ(r.message.type, MessageType::kBye);
  EXPECT_EQ(r.message.body["request_id"], 4);
  EXPECT_TRUE(decode({"KBF1", "REPLY", R"({"anything": [1]})"}).ok);
  EXPECT_TRUE(decode({"KBF1", "HEARTBEAT", "{}"}).ok);
}

// decode reads each body once, into the struct of its type, and that struct is what the handlers
// take (Coordinator::on_worker_message, WorkerSession::handle): none of them reads the JSON again.
TEST(ProtocolMessages, DecodeHandsEachTypeOverAsItsOwnStruct) {
  const std::vector<Message> one_of_each = {
      to_message(ReadyMessage{}),
      Message{MessageType::kHeartbeat, json::object(), {}},
      to_message(RequestMessage{2}),
      to_message(a_result()),
      to_message(PackRequestMessage{"ab"}),
      to_message(ByeMessage{}),
      to_message(WelcomeMessage{5, 1000, 3, "e1"}),
      to_message(a_job()),
      to_message(AckMessage{7, 1, ""}),
      to_message(PackMessage{"ab", false}, "bytes"),
      to_message(DisconnectMessage{"draining"}),
      to_message(RevokeMessage{{7, 1, 2}, "drain"}),
      to_message(SubmitMessage{}),
      to_message(QueryMessage{"health", ""}),
      to_message(CancelMessage{12}),
      to_message(WorkerControlMessage{"drain", "w1"}),
      to_message(CancelReply{12, 3}),
      to_message(ErrorMessage{"no", "bad_request"}),
  };
  ASSERT_EQ(one_of_each.size(), std::variant_size_v<AnyMessage>);
  for (size_t i = 0; i < one_of_each.size(); ++i) {
    const Message& sent = one_of_each[i];
    ASSERT_EQ(static_cast<size_t>(sent.type), i) << "in MessageType's order";
    const DecodeResult r = decode(encode(sent));
    ASSERT_TRUE(r.ok) << r.detail;
    EXPECT_EQ(to_string(type_of(r.body)), to_string(sent.type));
    EXPECT_EQ(r.body.index(), i);
  }
  const DecodeResult job = decode(encode(to_message(a_job())));
  ASSERT_TRUE(std::holds_alternative<JobMessage>(job.body));
  EXPECT_EQ(std::get<JobMessage>(job.body).token(), (LeaseToken{9, 2, 1234567}));
  EXPECT_EQ(std::get<JobMessage>(job.body).params, (json{{"sleep_ms", 3}}));
}

TEST(ProtocolMessages, EachTypeHasOneNameOnTheWire) {
  for (size_t i = 0; i < std::variant_size_v<AnyMessage>; ++i) {
    const auto type = static_cast<MessageType>(i);
    EXPECT_EQ(message_type_named(to_string(type)), type) << to_string(type);
  }
  EXPECT_EQ(message_type_named("ready"), std::nullopt);
  EXPECT_EQ(message_type_named(""), std::nullopt);
}

TEST(SubmitRules, ACommitShaIsSevenToSixtyFourLowercaseHexDigits) {
  EXPECT_TRUE(is_commit_sha("0123abc"));
  EXPECT_TRUE(is_commit_sha(std::string(64, 'f')));
  const std::vector<std::string> bad_shas = {
      "012345", "0123ABC", "abc1' OR ''='", "0123abg", std::string(65, 'a'), ""};
  for (const std::string& bad : bad_shas) {
    EXPECT_FALSE(is_commit_sha(bad)) << bad;
  }
}

SubmitMessage a_real_run() {
  SubmitMessage s;
  s.problems = "L1_003";
  s.pack = std::string(64, 'a');
  return s;
}

TEST(SubmitRules, EachRuleNamesItsField) {
  struct Case {
    SubmitMessage submit;
    std::string error;
  };
  std::vector<Case> cases(14, Case{a_real_run(), ""});
  cases[0].submit.commit_sha = "ABC1234";
  cases[0].error = "commit_sha: expected 7 to 64 lowercase hex digits";
  cases[1].submit.gpu_models = {""};
  cases[1].error = "gpu_models: expected non-empty strings";
  cases[2].submit.max_attempts = 11;
  cases[2].error = "max_attempts: expected 1..10";
  cases[3].submit.job_timeout_s = 0;
  cases[3].error = "job_timeout_s: expected a positive number of seconds";
  cases[4].submit.trials = 2;
  cases[4].error = "trials: the fleet runs 3..1000 correctness trials per job";
  cases[5].submit.pack = "";
  cases[5].error = "pack: the kernel pack's sha256 is required";
  cases[6].submit.sim_jobs = std::vector<double>{1, -1};
  cases[6].error = "sim_jobs: expected non-negative numbers";
  cases[7].submit.sim_jobs = std::vector<double>{1};
  cases[7].submit.gpu_models = {"H200"};
  cases[7].error = "sim_jobs: run only on sim workers (gpu_models [\"sim\"])";
  cases[8].submit.commit_time = "yesterday";
  cases[8].error =
      "commit_time: expected an ISO 8601 time (YYYY-MM-DD[THH:MM[:SS[.frac]]][Z|+HH[:MM]])";
  cases[9].submit.gpu_models = {"H200", "H100", "H200"};
  cases[9].error = "gpu_models: H200 twice";
  cases[10].submit.gpu_models = std::vector<std::string>(kMaxGpuModels + 1, "H200");
  cases[10].error = "gpu_models: at most 32";
  cases[11].submit.time_cap_s = -1;
  cases[11].error = "time_cap_s: expected a finite number of seconds >= 0";
  cases[12].submit.time_cap_s = std::numeric_limits<double>::infinity();
  cases[12].error = "time_cap_s: expected a finite number of seconds >= 0";
  // 40,000 sleep times on 30 models: 1.2 M jobs from one small body.
  cases[13].submit.sim_jobs = std::vector<double>(40000, 1);
  cases[13].submit.gpu_models = std::vector<std::string>(30, "sim");
  for (size_t i = 0; i < 30; ++i) cases[13].submit.gpu_models[i] = "sim" + std::to_string(i);
  cases[13].error =
      "sim_jobs: expected a non-empty list of sleep_ms numbers, at most 1000000 jobs over the "
      "gpu_models";
  for (const Case& c : cases) {
    Status s = submit_rules(c.submit);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.error;
    EXPECT_EQ(s.message(), c.error);
  }
}

TEST(SubmitRules, ASimRunNeedsNoPack) {
  SubmitMessage sim;
  sim.problems = "";
  sim.sim_jobs = std::vector<double>{5, 5};
  KB_EXPECT_OK(submit_rules(sim));
  sim.sim_jobs->clear();
  EXPECT_EQ(submit_rules(sim).message(),
            "sim_jobs: expected a non-empty list of sleep_ms numbers, at most 1000000 jobs over "
            "the gpu_models");
}

// What `git log --format=%cI` writes, and the shorter forms timestamptz reads; nothing else.
TEST(SubmitRules, ACommitTimeIsAnIso8601Time) {
  for (const char* good :
       {"2026-12-07", "2026-12-07T03:58:11+00:00", "2026-12-07T03:58:11Z", "2026-12-07 03:58",
        "2026-12-07T03:58:11.123456-05:30", "2026-12-07T03:58:11+0100", "2026-12-07T03:58:11-05"}) {
    EXPECT_TRUE(is_commit_time(good)) << good;
  }
  for (const char* bad :
       {"", "x", "2026-12-7", "2026-12-07T", "2026-12-07T03", "2026-12-07T03:58:1",
        "2026-12-07T03:58:11.", "2026-12-07T03:58:11+", "2026-12-07T03:58:11Zx",
        "2026-12-07T03:58:11+01:0", "2026-12-07'; DROP TABLE runs; --", "2026-12-07T03:58:11\n"}) {
    EXPECT_FALSE(is_commit_time(bad)) << bad;
  }
}

}  // namespace
}  // namespace kb::wire
