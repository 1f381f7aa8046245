// A worker session against an in-process fake coordinator on a real ROUTER socket: registration,
// credits, a sim job end to end, results resent until ACK, reconnects after silence or
// DISCONNECT with in_flight in READY, packs fetched and verified.
#include "worker/worker_session.h"

#include <gtest/gtest.h>

#include <deque>
#include <filesystem>

#include "common/sha256.h"
#include "common/zmq_messaging.h"
#include "tests/support/assert_ok.h"
#include "tests/support/temp_dir.h"

namespace kb {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using wire::Message;
using wire::MessageType;

// A RESULT as an earlier run of the worker left it in the spool: `fields` over an ok result.
wire::ResultMessage spooled_result(nlohmann::json fields) {
  fields["result"] = {{"status", "ok"}};
  return wire::ResultMessage::from_body(fields).value();
}

struct Received {
  std::string routing_id;
  Message message;
};

class WorkerSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    router_ = zmq::socket_t(context_, zmq::socket_type::router);
    wire::configure_socket(router_);
    router_.bind("tcp://127.0.0.1:*");
    endpoint_ = router_.get(zmq::sockopt::last_endpoint);
  }
  void TearDown() override { session_.reset(); }

  void make_session(bool needs_packs = false, milliseconds pack_wait = milliseconds(30000)) {
    SessionConfig config;
    config.pack_wait = pack_wait;
    config.name = "w1";
    config.endpoint = endpoint_;
    config.device.kind = "sim";
    config.device.model = "sim";
    config.software = {{"kbfleet", "test"}};
    config.needs_packs = needs_packs;
    config.heartbeat = milliseconds(100);
    config.liveness = 3;
    config.backoff_initial = milliseconds(20);
    config.backoff_max = milliseconds(40);
    auto spool = ResultSpool::open(dir_ / "results");
    KB_ASSERT_OK(spool);
    session_ = std::make_unique<WorkerSession>(context_, config, std::make_unique<SimJobRunner>(),
                                               std::move(spool).value(), PackCache(dir_ / "packs"));
    session_->start(SteadyClock::now());
  }

  // One turn of a worker's loop plus the fake coordinator's reads.
  void step(milliseconds max_wait = milliseconds(5)) {
    std::vector<zmq::pollitem_t> items = {{router_.handle(), 0, ZMQ_POLLIN, 0}};
    if (auto item = session_->pollitem()) items.push_back(*item);
    const auto now = SteadyClock::now();
    const auto until = std::min(now + max_wait, session_->next_deadline());
    zmq::poll(
        items.data(), items.size(),
        std::chrono::ceil<milliseconds>(std::max(until - now, SteadyClock::duration::zero())));
    if (items.size() > 1 && (items[1].revents & ZMQ_POLLIN))
      session_->on_readable(SteadyClock::now());
    if (session_->next_deadline() <= SteadyClock::now()) session_->on_tick(SteadyClock::now());
    while (auto r = wire::receive_message(router_, true)) {
      ASSERT_TRUE(r->decoded.ok) << r->decoded.detail;
      inbox_.push_back({r->routing_id, r->decoded.message});
    }
  }

  // The first message of `type` the coordinator receives (others stay in the inbox), within 3 s.
  Received expect(MessageType type, milliseconds limit = milliseconds(3000)) {
    const auto give_up = SteadyClock::now() + limit;
    while (true) {
      for (auto it = inbox_.begin(); it != inbox_.end(); ++it) {
        if (it->message.type != type) continue;
        Received r = *it;
        inbox_.erase(it);
        return r;
      }
      if (SteadyClock::now() > give_up) {
        ADD_FAILURE() << "no " << wire::to_string(type) << " within " << limit.count() << " ms";
        return {};
      }
      step();
    }
  }
  bool has(MessageType type) const {
    for (const Received& r : inbox_) {
      if (r.message.type == type) return true;
    }
    return false;
  }
  void run_for(milliseconds duration) {
    const auto until = SteadyClock::now() + duration;
    while (SteadyClock::now() < until) step();
  }

  void send(const std::string& to, MessageType type, nlohmann::json body,
            std::string payload = {}) {
    Message m;
    m.type = type;
    m.body = std::move(body);
    m.payload = std::move(payload);
    ASSERT_TRUE(wire::send_message(router_, m, to));
  }
  // READY -> WELCOME -> REQUEST{credits}; returns the session's routing id.
  std::string register_worker(int expected_credits = 2) {
    Received ready = expect(MessageType::kReady);
    send(ready.routing_id, MessageType::kWelcome,
         {{"worker_id", 7}, {"heartbeat_ms", 100}, {"liveness", 3}});
    Received request = expect(MessageType::kRequest);
    EXPECT_EQ(request.message.body["credits"], expected_credits);
    return ready.routing_id;
  }
  static nlohmann::json sim_job(int64_t job_id, int64_t sleep_ms, const std::string& pack = "") {
    return {{"job_id", job_id}, {"attempt", 1},         {"seed", 1},
            {"problem", "sim"}, {"preset", "small"},    {"pack", pack},
            {"run_id", 1},      {"deadline_ms", 60000}, {"params", {{"sleep_ms", sleep_ms}}}};
  }
  size_t spooled() const {
    size_t n = 0;
    for (const auto& f : fs::directory_iterator(dir_ / "results"))
      n += f.path().extension() == ".json";
    return n;
  }

  zmq::context_t context_;
  zmq::socket_t router_;
  std::string endpoint_;
  ::kb::test::TempDir dir_{"kb-session-test"};
  std::unique_ptr<WorkerSession> session_;
  std::deque<Received> inbox_;
};

TEST_F(WorkerSessionTest, RegistersWithItsIdentityAndAsksForTwoJobs) {
  make_session();
  Received ready = expect(MessageType::kReady);
  EXPECT_EQ(ready.routing_id.rfind("w1-", 0), 0u) << ready.routing_id;
  EXPECT_EQ(ready.message.body["worker"], "w1");
  EXPECT_EQ(ready.message.body["device"]["kind"], "sim");
  EXPECT_EQ(ready.message.body["in_flight"], nlohmann::json::array());
  EXPECT_EQ(ready.message.body["protocol"], 1);
  EXPECT_EQ(session_->state(), SessionState::kConnecting);
  send(ready.routing_id, MessageType::kWelcome,
       {{"worker_id", 7}, {"heartbeat_ms", 100}, {"liveness", 3}});
  EXPECT_EQ(expect(MessageType::kRequest).message.body["credits"], 2);
  EXPECT_EQ(session_->state(), SessionState::kRegistered);
  EXPECT_EQ(session_->worker_id(), 7);
  // Heartbeats while idle, and it stays registered as long as the coordinator answers.
  expect(MessageType::kHeartbeat);
  send(ready.routing_id, MessageType::kHeartbeat, nlohmann::json::object());
  expect(MessageType::kHeartbeat);
}

// WELCOME's epoch was read with json::value(), which throws on a number: one such message would
// have ended kb-worker. Every body is now read by its struct, and a bad one is dropped and counted.
TEST_F(WorkerSessionTest, MalformedMessagesAreDroppedAndCountedNotACrash) {
  make_session();
  Received ready = expect(MessageType::kReady);
  send(ready.routing_id, MessageType::kWelcome,
       {{"worker_id", 7}, {"heartbeat_ms", 100}, {"epoch", 5}});
  run_for(milliseconds(50));
  EXPECT_EQ(session_->stats().dropped_messages, 1);
  EXPECT_EQ(session_->state(), SessionState::kConnecting);  // not registered by a bad WELCOME
  send(ready.routing_id, MessageType::kWelcome, {{"worker_id", 7}, {"heartbeat_ms", 100}});
  expect(MessageType::kRequest);
  nlohmann::json job = sim_job(41, 5);
  job["job_id"] = "41";
  send(ready.routing_id, MessageType::kJob, job);
  run_for(milliseconds(50));
  EXPECT_EQ(session_->stats().dropped_messages, 2);
  EXPECT_EQ(session_->stats().jobs_received, 0);
  EXPECT_EQ(session_->state(), SessionState::kRegistered);
}

TEST_F(WorkerSessionTest, RunsASimJobAndKeepsTheResultUntilAck) {
  make_session();
  const std::string id = register_worker();
  send(id, MessageType::kJob, sim_job(41, 30));
  Received result = expect(MessageType::kResult);
  EXPECT_EQ(expect(MessageType::kRequest).message.body["credits"], 1);  // finished: one more, please
  const nlohmann::json& body = result.message.body;
  EXPECT_EQ(body["job_id"], 41);
  EXPECT_EQ(body["attempt"], 1);
  EXPECT_EQ(body["result"]["status"], "ok");
  EXPECT_EQ(body["result"]["device_kind"], "sim");
  EXPECT_GE(body["wall_ms"].get<double>(), 29.0);
  EXPECT_LT(body["started_at_ms"].get<double>(), body["finished_at_ms"].get<double>());
  EXPECT_EQ(body["result"]["worker_clock"]["started_at_ms"], body["started_at_ms"]);  // stored
  EXPECT_EQ(spooled(), 1u);  // on disk until the ACK
  send(id, MessageType::kAck, {{"job_id", 41}, {"attempt", 1}});
  run_for(milliseconds(50));
  EXPECT_EQ(spooled(), 0u);
  EXPECT_EQ(session_->stats().acks, 1);
}

TEST_F(WorkerSessionTest, HoldsOneRunningAndOnePrefetchedAndIgnoresDuplicates) {
  make_session();
  const std::string id = register_worker();
  send(id, MessageType::kJob, sim_job(1, 60));
  send(id, MessageType::kJob, sim_job(2, 10));
  send(id, MessageType::kJob, sim_job(1, 60));  // the same job and attempt again
  run_for(milliseconds(20));
  EXPECT_EQ(session_->held_jobs(), 2u);
  EXPECT_EQ(session_->stats().jobs_ignored, 1);
  // Starting the prefetched-to-running job asks for nothing: at most one running + one held.
  EXPECT_FALSE(has(MessageType::kRequest));
  Received first = expect(MessageType::kResult);
  Received second = expect(MessageType::kResult);
  EXPECT_EQ(first.message.body["job_id"], 1);
  EXPECT_EQ(second.message.body["job_id"], 2);
  // The prefetched job starts when the first ends: no round trip to the coordinator between.
  const double gap = second.message.body["started_at_ms"].get<double>() -
                     first.message.body["finished_at_ms"].get<double>();
  EXPECT_GE(gap, 0.0);
  EXPECT_LT(gap, 5.0);
  EXPECT_EQ(expect(MessageType::kRequest).message.body["credits"], 1);  // one per finished job
  EXPECT_EQ(expect(MessageType::kRequest).message.body["credits"], 1);
}

TEST_F(WorkerSessionTest, ReconnectsAfterSilenceAndResendsUnackedResults) {
  make_session();
  const std::string first_id = register_worker();
  send(first_id, MessageType::kJob, sim_job(5, 10));
  expect(MessageType::kResult);
  // No ACK, no heartbeats: after 3 x 100 ms the worker gives up on this connection.
  Received ready = expect(MessageType::kReady, milliseconds(2000));
  EXPECT_NE(ready.routing_id, first_id) << "a reconnect is a new session";
  EXPECT_EQ(ready.message.body["in_flight"],
            nlohmann::json::parse(R"([{"job_id": 5, "attempt": 1, "lease_id": 0}])"));
  EXPECT_GE(session_->stats().connects, 2);
  send(ready.routing_id, MessageType::kWelcome, {{"worker_id", 8}, {"heartbeat_ms", 100}});
  Received again = expect(MessageType::kResult);
  EXPECT_EQ(again.routing_id, ready.routing_id);
  EXPECT_EQ(again.message.body["job_id"], 5);
  send(ready.routing_id, MessageType::kAck, {{"job_id", 5}, {"attempt", 1}});
  run_for(milliseconds(30));
  EXPECT_FALSE(session_->has_unacked_results());
  EXPECT_EQ(spooled(), 0u);
}

TEST_F(WorkerSessionTest, ReadyAfterDisconnectCarriesRunningAndHeldJobs) {
  make_session();
  const std::string id = register_worker();
  send(id, MessageType::kJob, sim_job(10, 2000));
  send(id, MessageType::kJob, sim_job(11, 10));
  run_for(milliseconds(30));
  send(id, MessageType::kDisconnect, {{"reason", "draining"}});
  Received ready = expect(MessageType::kReady);
  inbox_.clear();  // what the old connection sent
  EXPECT_NE(ready.routing_id, id);
  EXPECT_EQ(
      ready.message.body["in_flight"],
      nlohmann::json::parse(R"([{"job_id": 10, "attempt": 1, "lease_id": 0},
                                {"job_id": 11, "attempt": 1, "lease_id": 0}])"));
  // Re-registered holding two jobs: no credits to ask for; a re-sent held JOB is ignored.
  send(ready.routing_id, MessageType::kWelcome, {{"worker_id", 9}, {"heartbeat_ms", 100}});
  send(ready.routing_id, MessageType::kJob, sim_job(10, 2000));
  run_for(milliseconds(50));
  EXPECT_FALSE(has(MessageType::kRequest));
  EXPECT_EQ(session_->stats().jobs_ignored, 1);
  EXPECT_EQ(session_->held_jobs(), 2u);
}

TEST_F(WorkerSessionTest, FetchesAMissingPackAndVerifiesIt) {
  make_session(/*needs_packs=*/true);
  const std::string id = register_worker();
  const std::string bytes = "pretend kernel pack";
  const std::string hash = sha256_hex(bytes);
  send(id, MessageType::kJob, sim_job(20, 5, hash));
  Received asked = expect(MessageType::kPackRequest);
  EXPECT_EQ(asked.message.body["pack"], hash);
  EXPECT_EQ(session_->held_jobs(), 1u);  // waits for its pack
  send(id, MessageType::kPack, {{"pack", hash}}, bytes);
  Received result = expect(MessageType::kResult);
  EXPECT_EQ(result.message.body["result"]["status"], "ok");
  EXPECT_TRUE(fs::exists(dir_ / "packs" / (hash + ".so")));
}

// Regression: an answered pack request must not expire later and fail the jobs held then (seen on
// the H200: the prefetched job of a run failed "pack unavailable" 30 s into the run).
TEST_F(WorkerSessionTest, AReceivedPackNeverExpiresForLaterJobs) {
  make_session(/*needs_packs=*/true, /*pack_wait=*/milliseconds(80));
  const std::string id = register_worker();
  const std::string bytes = "pretend kernel pack";
  const std::string hash = sha256_hex(bytes);
  send(id, MessageType::kJob, sim_job(20, 200, hash));  // runs past pack_wait ...
  send(id, MessageType::kJob, sim_job(21, 5, hash));    // ... while this one is held
  expect(MessageType::kPackRequest);
  send(id, MessageType::kPack, {{"pack", hash}}, bytes);
  Received a = expect(MessageType::kResult);
  Received b = expect(MessageType::kResult);
  EXPECT_EQ(a.message.body["result"]["status"], "ok");
  EXPECT_EQ(b.message.body["result"]["status"], "ok") << b.message.body["result"]["message"];
}

TEST_F(WorkerSessionTest, APackThatIsMissingOrCorruptFailsItsJob) {
  make_session(/*needs_packs=*/true);
  const std::string id = register_worker();
  const std::string missing = sha256_hex("nobody has this");
  const std::string corrupt = sha256_hex("the real bytes");
  send(id, MessageType::kJob, sim_job(30, 5, missing));
  send(id, MessageType::kJob, sim_job(31, 5, corrupt));
  expect(MessageType::kPackRequest);
  expect(MessageType::kPackRequest);
  send(id, MessageType::kPack, {{"pack", missing}, {"missing", true}});  // no payload
  send(id, MessageType::kPack, {{"pack", corrupt}}, "other bytes");
  Received a = expect(MessageType::kResult);
  Received b = expect(MessageType::kResult);
  EXPECT_EQ(a.message.body["result"]["status"], "runtime_error");
  EXPECT_NE(a.message.body["result"]["message"].get<std::string>().find("unavailable"),
            std::string::npos);
  EXPECT_FALSE(a.message.body.contains("infra_failure"));  // the coordinator lacks it: final
  EXPECT_EQ(b.message.body["result"]["status"], "runtime_error");
  // A pack that arrives but cannot be stored is this worker's failure: the job runs elsewhere.
  EXPECT_EQ(b.message.body["infra_failure"].get<std::string>().rfind("pack_fetch: ", 0), 0u);
  EXPECT_FALSE(fs::exists(dir_ / "packs" / (corrupt + ".so")));
}

TEST_F(WorkerSessionTest, ResultsSpooledByAnEarlierRunAreSentAfterWelcome) {
  {
    auto spool = ResultSpool::open(dir_ / "results");
    KB_ASSERT_OK(spool->put(spooled_result({{"job_id", 99}, {"attempt", 2}})));
  }
  make_session();
  Received ready = expect(MessageType::kReady);
  EXPECT_EQ(ready.message.body["in_flight"],
            nlohmann::json::parse(R"([{"job_id": 99, "attempt": 2, "lease_id": 0}])"));
  send(ready.routing_id, MessageType::kWelcome, {{"worker_id", 1}, {"heartbeat_ms", 100}});
  EXPECT_EQ(expect(MessageType::kResult).message.body["job_id"], 99);
}

TEST_F(WorkerSessionTest, DrainGivesBackHeldJobsAndLetsTheRunningOneFinish) {
  make_session();
  const std::string id = register_worker();
  nlohmann::json held = sim_job(51, 5);
  held["lease_id"] = 9;
  // Running at the drain (30 ms in), and done well inside the 300 ms silence limit that the one
  // heartbeat below buys (at 300 ms it raced that limit: the session was lost and the result
  // stayed in the spool, about one run in thirty).
  send(id, MessageType::kJob, sim_job(50, 150));
  send(id, MessageType::kJob, held);
  run_for(milliseconds(30));
  inbox_.clear();
  session_->drain(SteadyClock::now());
  EXPECT_EQ(session_->held_jobs(), 1u);  // the running one
  Received bye = expect(MessageType::kBye);
  EXPECT_EQ(bye.message.body["draining"], true);
  EXPECT_EQ(bye.message.body["release"],
            nlohmann::json::parse(R"([{"job_id": 51, "attempt": 1, "lease_id": 9}])"));
  send(id, MessageType::kHeartbeat, {});  // this fake coordinator is silent otherwise
  EXPECT_EQ(expect(MessageType::kResult).message.body["job_id"], 50);
  EXPECT_FALSE(has(MessageType::kRequest));
  EXPECT_FALSE(session_->busy());
  session_->say_goodbye(SteadyClock::now());
  EXPECT_EQ(expect(MessageType::kBye).message.body["final"], true);
}

// Issue 14: a JOB leased before the coordinator read BYE {draining} used to be ignored, and stayed
// leased until BYE {final} or its deadline. It goes back at once, as a release (not an attempt).
TEST_F(WorkerSessionTest, AJobReceivedWhileDrainingIsGivenBackAtOnceAndNeverStarts) {
  make_session();
  const std::string id = register_worker();
  send(id, MessageType::kJob, sim_job(55, 150));  // done inside the 300 ms silence limit
  run_for(milliseconds(30));
  session_->drain(SteadyClock::now());
  EXPECT_EQ(expect(MessageType::kBye).message.body["release"], nlohmann::json::array());
  nlohmann::json late = sim_job(56, 5);
  late["lease_id"] = 11;
  send(id, MessageType::kJob, late);
  Received bye = expect(MessageType::kBye, milliseconds(200));
  EXPECT_EQ(bye.message.body["draining"], true);
  EXPECT_FALSE(bye.message.body.contains("final"));
  EXPECT_EQ(bye.message.body["release"],
            nlohmann::json::parse(R"([{"job_id": 56, "attempt": 1, "lease_id": 11}])"));
  EXPECT_EQ(session_->stats().jobs_given_back, 1);
  EXPECT_EQ(session_->held_jobs(), 1u);  // only the running one
  EXPECT_EQ(expect(MessageType::kResult).message.body["job_id"], 55);
  run_for(milliseconds(50));
  EXPECT_FALSE(has(MessageType::kResult));  // 56 never ran
  EXPECT_FALSE(has(MessageType::kRequest));
  EXPECT_EQ(session_->stats().jobs_started, 1);
  EXPECT_FALSE(session_->busy());
}

TEST_F(WorkerSessionTest, ASecondStopKillsTheRunningJobAndGivesItBack) {
  make_session();
  const std::string id = register_worker();
  send(id, MessageType::kJob, sim_job(60, 5000));
  run_for(milliseconds(30));
  session_->drain(SteadyClock::now());
  session_->stop_now(SteadyClock::now());
  EXPECT_FALSE(session_->busy());
  expect(MessageType::kBye);
  Received bye = expect(MessageType::kBye);
  EXPECT_EQ(bye.message.body["final"], true);
  EXPECT_EQ(bye.message.body["release"][0]["job_id"], 60);
  run_for(milliseconds(30));
  EXPECT_FALSE(has(MessageType::kResult));
}

TEST_F(WorkerSessionTest, RevokeStopsTheRunningJobWithoutAResult) {
  make_session();
  const std::string id = register_worker();
  send(id, MessageType::kJob, sim_job(70, 5000));
  send(id, MessageType::kJob, sim_job(71, 5));
  run_for(milliseconds(30));
  send(id, MessageType::kRevoke, {{"job_id", 70}, {"attempt", 1}, {"reason", "cancelled"}});
  Received next = expect(MessageType::kResult);  // the held job starts at once
  EXPECT_EQ(next.message.body["job_id"], 71);
  run_for(milliseconds(30));
  EXPECT_EQ(session_->stats().revokes, 1);
  EXPECT_FALSE(has(MessageType::kResult));
}

TEST_F(WorkerSessionTest, AnAdminDrainRevokeSparesTheRunningJobAndGivesBackTheHeldOne) {
  make_session();
  const std::string id = register_worker();
  send(id, MessageType::kJob, sim_job(80, 100));
  send(id, MessageType::kJob, sim_job(81, 5));
  run_for(milliseconds(30));
  send(id, MessageType::kRevoke, {{"job_id", 80}, {"attempt", 1}, {"reason", "drain"}});
  send(id, MessageType::kRevoke, {{"job_id", 81}, {"attempt", 1}, {"reason", "drain"}});
  Received bye = expect(MessageType::kBye);
  EXPECT_EQ(bye.message.body["release"][0]["job_id"], 81);
  EXPECT_FALSE(bye.message.body.contains("final"));
  EXPECT_EQ(expect(MessageType::kResult).message.body["job_id"], 80);
}

TEST_F(WorkerSessionTest, ResultsEchoTheLeaseAndARejectedOneIsDropped) {
  make_session();
  const std::string id = register_worker();
  nlohmann::json job = sim_job(90, 5);
  job["lease_id"] = 1234;
  send(id, MessageType::kJob, job);
  Received result = expect(MessageType::kResult);
  EXPECT_EQ(result.message.body["lease_id"], 1234);
  EXPECT_EQ(spooled(), 1u);
  send(id, MessageType::kAck, {{"job_id", 90}, {"attempt", 1}, {"rejected", "not_holder"}});
  run_for(milliseconds(30));
  EXPECT_EQ(spooled(), 0u);
  EXPECT_EQ(session_->stats().rejected, 1);
}

TEST_F(WorkerSessionTest, ASpooledResultOfAnotherDatabaseEpochIsDropped) {
  {
    auto spool = ResultSpool::open(dir_ / "results");
    KB_ASSERT_OK(spool->put(spooled_result({{"job_id", 98}, {"attempt", 1}, {"epoch", "old-db"}})));
    KB_ASSERT_OK(
        spool->put(spooled_result({{"job_id", 99}, {"attempt", 1}, {"epoch", "this-db"}})));
  }
  make_session();
  Received ready = expect(MessageType::kReady);
  send(ready.routing_id, MessageType::kWelcome,
       {{"worker_id", 1}, {"heartbeat_ms", 100}, {"epoch", "this-db"}});
  EXPECT_EQ(expect(MessageType::kResult).message.body["job_id"], 99);
  run_for(milliseconds(30));
  EXPECT_FALSE(has(MessageType::kResult));
  EXPECT_EQ(session_->stats().foreign_epoch, 1);
  EXPECT_EQ(spooled(), 1u);
}

}  // namespace
}  // namespace kb
