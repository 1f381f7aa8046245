// The fleet subcommands as a user runs them: argument errors (exit code 2 and a message that says
// what to do), a coordinator that does not answer (exit 1), and `kb submit` against a fake
// coordinator on loopback (QUERY pack, then SUBMIT with the pack bytes only when asked for).
#include "cli/fleet_commands.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "cli/cli_app.h"
#include "cli/submit_command.h"
#include "common/protocol_messages.h"
#include "common/sha256.h"
#include "common/zmq_messaging.h"
#include "tests/support/assert_ok.h"
#include "tests/support/temp_dir.h"

namespace kb::cli {
namespace {

namespace fs = std::filesystem;

struct Outcome {
  int code = 0;
  std::string out, err;
};

class FleetCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"KB_COORDINATOR", "KB_DB_URL", "KB_CURVE_KEY", "KB_COORDINATOR_KEY", "KB_CONFIG",
                             "XDG_CONFIG_HOME"}) {
      if (const char* v = std::getenv(name)) saved_[name] = v;
      unsetenv(name);
    }
    setenv("XDG_CONFIG_HOME", (dir_ / "config").c_str(), 1);  // no user config file
    pack_ = (dir_ / "libkbpack.so").string();
    std::ofstream(pack_, std::ios::binary) << "not really a shared library";
  }
  void TearDown() override {
    unsetenv("XDG_CONFIG_HOME");
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
  }

  static Outcome kb(std::vector<std::string> args) {
    args.insert(args.begin(), "kb");
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    CLI::App app{"kb"};
    app.require_subcommand(1);
    add_fleet_commands(app);
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    Outcome o;
    o.code = run_app(app, static_cast<int>(argv.size()), argv.data());
    o.out = ::testing::internal::GetCapturedStdout();
    o.err = ::testing::internal::GetCapturedStderr();
    return o;
  }

  ::kb::test::TempDir dir_{"kb-fleet-commands-test"};
  std::string pack_;
  std::map<std::string, std::string> saved_;
};

#define EXPECT_USAGE_ERROR(outcome, text)                                       \
  do {                                                                          \
    const Outcome o_ = (outcome);                                               \
    EXPECT_EQ(o_.code, kExitUsage) << o_.err;                                   \
    EXPECT_NE(o_.err.find(text), std::string::npos) << "stderr: " << o_.err;   \
  } while (0)

TEST_F(FleetCommandsTest, UnknownProblemOrPresetIsAUsageError) {
  EXPECT_USAGE_ERROR(kb({"submit", "L9_999", "--coordinator", "tcp://127.0.0.1:1", "--pack", pack_}),
                     "'L9_999' is neither a problem id nor a suite");
  EXPECT_USAGE_ERROR(kb({"submit", "smoke", "--preset", "huge", "--coordinator", "tcp://127.0.0.1:1"}),
                     "unknown preset 'huge' for");
}

TEST_F(FleetCommandsTest, MissingEndpointsSayWhereToPutThem) {
  EXPECT_USAGE_ERROR(kb({"submit", "smoke", "--pack", pack_}),
                     "no coordinator endpoint: pass --coordinator, set KB_COORDINATOR");
  EXPECT_USAGE_ERROR(kb({"workers"}), "no database URL");
  EXPECT_USAGE_ERROR(kb({"submit", "smoke", "--wait", "--coordinator", "tcp://127.0.0.1:1", "--pack", pack_}),
                     "no database URL");
  EXPECT_USAGE_ERROR(kb({"submit", "smoke", "--coordinator", "tcp://127.0.0.1:1", "--pack", pack_ + ".missing"}),
                     "is not a file");
  EXPECT_USAGE_ERROR(kb({"runs", "--config", (dir_ / "nope.yaml").string()}), "does not exist");
}

TEST_F(FleetCommandsTest, MalformedArgumentsExitWithTwo) {
  EXPECT_EQ(kb({"status", "twelve", "--db", "postgresql://x/y"}).code, kExitUsage);
  EXPECT_EQ(kb({"runs", "--last", "0", "--db", "postgresql://x/y"}).code, kExitUsage);
  EXPECT_EQ(kb({"results"}).code, kExitUsage);
  EXPECT_EQ(kb({"submit", "--max-attempts", "0"}).code, kExitUsage);
  EXPECT_USAGE_ERROR(kb({"submit", "smoke", "--trials", "0", "--coordinator", "tcp://127.0.0.1:1"}),
                     "trials: the fleet runs 3..1000 correctness trials per job");
  EXPECT_USAGE_ERROR(kb({"submit", "--sim-jobs", "0:5", "--coordinator", "tcp://127.0.0.1:1"}), "N:MS");
  EXPECT_USAGE_ERROR(kb({"submit", "smoke", "--sim-jobs", "3:5", "--coordinator", "tcp://127.0.0.1:1"}),
                     "leave out the problems");
}

TEST_F(FleetCommandsTest, UnreachableDatabaseIsARuntimeFailure) {
  const Outcome o = kb({"runs", "--db", "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"});
  EXPECT_EQ(o.code, kExitFailure);
  EXPECT_NE(o.err.find("cannot connect to the database"), std::string::npos) << o.err;
}

// A ROUTER on loopback that answers the client protocol like the coordinator would (kAnswers),
// not at all (kSilent), or with REPLY bodies of the wrong shape (kMalformed).
class FakeCoordinator {
 public:
  enum class Mode { kAnswers, kSilent, kMalformed };
  explicit FakeCoordinator(bool has_pack, Mode mode = Mode::kAnswers)
      : has_pack_(has_pack), mode_(mode) {
    socket_ = zmq::socket_t(context_, zmq::socket_type::router);
    wire::configure_socket(socket_);
    socket_.bind("tcp://127.0.0.1:*");
    endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeCoordinator() {
    stop_ = true;
    thread_.join();
  }
  const std::string& endpoint() const { return endpoint_; }
  // The requests served so far, in arrival order: a copy, since the serving thread appends to
  // them under the lock (the reply a command waited for orders it after its request only through
  // the socket, which a race detector cannot see).
  std::vector<wire::Message> received() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return received_;
  }

 private:
  void serve() {
    while (!stop_) {
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(50));
      while (auto m = wire::receive_message(socket_, true)) {
        if (!m->decoded.ok || mode_ == Mode::kSilent) continue;
        const wire::Message& request = m->decoded.message;
        {
          const std::lock_guard<std::mutex> lock(mutex_);
          received_.push_back(request);
        }
        wire::Message reply = mode_ == Mode::kMalformed ? malformed_answer() : answer(request);
        reply.body["request_id"] = request.body["request_id"];
        wire::send_message(socket_, reply, m->routing_id);
      }
    }
  }

  wire::Message answer(const wire::Message& request) const {
    switch (request.type) {
      case wire::MessageType::kQuery:
        return wire::to_message(wire::PackQueryReply{has_pack_});
      case wire::MessageType::kSubmit:
        return wire::to_message(wire::SubmitReply{42, 5});
      case wire::MessageType::kCancel:
        return wire::to_message(wire::CancelReply{request.body["run_id"], 3});
      default:
        return wire::to_message(
            wire::WorkerControlReply{request.body["worker"], request.body["action"]});
    }
  }

  // Every field of every reply struct, of the wrong type.
  static wire::Message malformed_answer() {
    return {wire::MessageType::kReply,
            {{"have", "yes"}, {"run_id", "42"}, {"cancelled", "3"}, {"worker", 1}, {"action", 2}},
            {}};
  }

  zmq::context_t context_;
  zmq::socket_t socket_;
  std::string endpoint_;
  bool has_pack_;
  Mode mode_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::vector<wire::Message> received_;  // guarded by mutex_
  std::thread thread_;
};

TEST_F(FleetCommandsTest, SubmitSendsThePackOnlyWhenTheCoordinatorLacksIt) {
  std::string bytes;
  {
    FakeCoordinator coordinator(/*has_pack=*/false);
    const Outcome o = kb({"submit", "smoke", "--preset", "small", "--pack", pack_, "--coordinator",
                          coordinator.endpoint(), "--commit", "abc1234", "--branch", "main",
                          "--gpu", "NVIDIA H200", "--seed", "7", "--json"});
    ASSERT_EQ(o.code, kExitOk) << o.err;
    EXPECT_EQ(nlohmann::json::parse(o.out)["run_id"], 42);
    const std::vector<wire::Message> received = coordinator.received();
    ASSERT_EQ(received.size(), 2u);
    const wire::Message& query = received[0];
    EXPECT_EQ(query.type, wire::MessageType::kQuery);
    EXPECT_EQ(query.body["what"], "pack");
    std::ifstream in(pack_, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
    EXPECT_EQ(query.body["pack"], sha256_hex(bytes));
    const wire::Message& submit = received[1];
    EXPECT_EQ(submit.type, wire::MessageType::kSubmit);
    EXPECT_EQ(submit.body["problems"], "L1_098,L2_017,L1_079,L3_013,L2_093");
    EXPECT_EQ(submit.body["suite"], "smoke");
    EXPECT_EQ(submit.body["preset"], "small");
    EXPECT_EQ(submit.body["commit_sha"], "abc1234");
    EXPECT_EQ(submit.body["branch"], "main");
    EXPECT_EQ(submit.body["gpu_models"], nlohmann::json::array({"NVIDIA H200"}));
    EXPECT_EQ(submit.body["seed"], 7);
    EXPECT_EQ(submit.payload, bytes);
  }
  FakeCoordinator coordinator(/*has_pack=*/true);
  const Outcome o = kb({"submit", "L1_003,L2_017", "--pack", pack_, "--coordinator", coordinator.endpoint()});
  ASSERT_EQ(o.code, kExitOk) << o.err;
  EXPECT_NE(o.out.find("submitted run 42: 5 jobs (problem list, preset full"), std::string::npos) << o.out;
  const std::vector<wire::Message> received = coordinator.received();
  ASSERT_EQ(received.size(), 2u);
  EXPECT_TRUE(received[1].payload.empty());
  EXPECT_FALSE(received[1].body.contains("suite"));
}

// kb submit runs the coordinator's own SUBMIT rules (wire::submit_rules) before it sends.
TEST_F(FleetCommandsTest, SubmitRefusesWhatTheCoordinatorWouldWithoutARoundTrip) {
  FakeCoordinator coordinator(/*has_pack=*/true);
  const Outcome o = kb({"submit", "smoke", "--preset", "small", "--pack", pack_, "--coordinator",
                        coordinator.endpoint(), "--commit", "abc123"});
  EXPECT_EQ(o.code, kExitUsage);
  EXPECT_NE(o.err.find("commit_sha: expected 7 to 64 lowercase hex digits"), std::string::npos)
      << o.err;
  EXPECT_TRUE(coordinator.received().empty());
}

TEST_F(FleetCommandsTest, SimRunsNeedNoPack) {
  FakeCoordinator coordinator(/*has_pack=*/false);
  setenv("KB_COORDINATOR", coordinator.endpoint().c_str(), 1);
  setenv("KB_PACK_PATH", "", 1);
  const Outcome o = kb({"submit", "--sim-jobs", "4:2.5"});
  unsetenv("KB_PACK_PATH");
  ASSERT_EQ(o.code, kExitOk) << o.err;
  const std::vector<wire::Message> received = coordinator.received();
  ASSERT_GE(received.size(), 1u);
  const wire::Message& submit = received.back();
  EXPECT_EQ(submit.body["sim_jobs"], nlohmann::json::array({2.5, 2.5, 2.5, 2.5}));
  EXPECT_EQ(submit.body["preset"], "sim");
  EXPECT_EQ(submit.body["gpu_models"], nlohmann::json::array({"sim"}));  // only sim workers take them
}

TEST_F(FleetCommandsTest, SimJobsFromAFile) {
  const std::string file = (dir_ / "jobs.txt").string();
  std::ofstream(file) << "# sleep times\n5, 10\n2.5 # short\n";
  auto jobs = parse_sim_jobs(file);
  KB_ASSERT_OK(jobs);
  EXPECT_EQ(jobs.value(), (std::vector<double>{5, 10, 2.5}));
  std::ofstream(file) << "5\nfast\n";
  auto bad = parse_sim_jobs(file);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find(":2: 'fast' is not a sleep time in ms"), std::string::npos);
  EXPECT_EQ(parse_sim_jobs("3:7").value(), (std::vector<double>{7, 7, 7}));
}

TEST_F(FleetCommandsTest, CancelAndASilentCoordinator) {
  {
    FakeCoordinator coordinator(/*has_pack=*/true);
    const Outcome o = kb({"cancel", "9", "--coordinator", coordinator.endpoint()});
    ASSERT_EQ(o.code, kExitOk) << o.err;
    EXPECT_EQ(o.out, "run 9: 3 open job(s) cancelled\n");
  }
  FakeCoordinator silent(/*has_pack=*/true, FakeCoordinator::Mode::kSilent);
  const Outcome o = kb({"cancel", "9", "--coordinator", silent.endpoint(), "--timeout", "0.3"});
  EXPECT_EQ(o.code, kExitFailure);
  EXPECT_NE(o.err.find("coordinator at " + silent.endpoint() + " did not answer within 0.3 s"), std::string::npos)
      << o.err;
}

TEST_F(FleetCommandsTest, CancelAndWorkerControlPrintTheTypedReply) {
  FakeCoordinator coordinator(/*has_pack=*/true);
  const Outcome cancel = kb({"cancel", "9", "--coordinator", coordinator.endpoint(), "--json"});
  ASSERT_EQ(cancel.code, kExitOk) << cancel.err;
  EXPECT_EQ(nlohmann::json::parse(cancel.out), (nlohmann::json{{"cancelled", 3}, {"run_id", 9}}));
  const Outcome drain = kb({"workers", "--drain", "w1", "--coordinator", coordinator.endpoint(),
                            "--db", "postgresql://nobody@127.0.0.1:1/none"});
  ASSERT_EQ(drain.code, kExitOk) << drain.err;
  EXPECT_EQ(drain.out, "worker w1: drain\n");
}

// A REPLY that is not the struct of what kb asked is a failure that names the field, never a
// default read in its place (a missing "cancelled" used to print 0 jobs cancelled).
TEST_F(FleetCommandsTest, AMalformedReplyIsAFailureNamingTheField) {
  FakeCoordinator coordinator(/*has_pack=*/true, FakeCoordinator::Mode::kMalformed);
  const std::string at = coordinator.endpoint();
  struct Case {
    std::vector<std::string> args;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{"cancel", "9", "--coordinator", at},
       "the coordinator's answer to CANCEL: REPLY: field 'run_id': expected an integer (int64), "
       "got a string"},
      {{"workers", "--resume", "w1", "--coordinator", at, "--db", "postgresql://x@127.0.0.1:1/x"},
       "the coordinator's answer to WORKER_CONTROL: REPLY: field 'action': expected a string, got "
       "an integer"},
      {{"submit", "L1_003", "--pack", pack_, "--coordinator", at},
       "the coordinator's answer to QUERY: REPLY: field 'have': expected a boolean, got a string"},
  };
  for (const Case& c : cases) {
    const Outcome o = kb(c.args);
    EXPECT_EQ(o.code, kExitFailure) << c.args[0];
    EXPECT_NE(o.err.find(c.error), std::string::npos) << o.err;
  }
}

TEST_F(FleetCommandsTest, KeygenWritesASecretPairAndAPublicFile) {
  const std::string prefix = (dir_ / "worker1").string();
  const Outcome o = kb({"keygen", prefix, "--json"});
  ASSERT_EQ(o.code, kExitOk) << o.err;
  struct stat st {};
  ASSERT_EQ(stat((prefix + ".key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream pub(prefix + ".pub");
  std::string line;
  std::getline(pub, line);
  EXPECT_EQ(line, "public: " + nlohmann::json::parse(o.out)["public_key"].get<std::string>());
  EXPECT_USAGE_ERROR(kb({"keygen", prefix}), "exists: pass --force");
  EXPECT_EQ(kb({"keygen", prefix, "--force"}).code, kExitOk);
}

}  // namespace
}  // namespace kb::cli
