// Lease fencing under faults and attacks (issue 13): real
// kb-coordinator and kb-worker processes on loopback, a real PostgreSQL, the kb CLI. Each test
// asserts how many times each job RAN (FleetStack::executions: one "start" line per execution in
// the workers' --execution-log) and what was stored (rows): one result per job alone cannot fail,
// results being UNIQUE per job.
//
// The sandbox itself (hostile packs: a socket, $HOME, the state dir, the key) is tests/sandbox;
// the trust model's key and coordinator checks are trust_test.cpp; the worker's drain is
// drain_test.cpp.
//
// Needs KB_TEST_PG_URL (tools/test.sh starts a throwaway cluster); skips without it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

#include <pqxx/pqxx>

#include "common/wire_protocol.h"
#include "common/zmq_messaging.h"
#include "tests/integration/fault_fixture.h"
#include "tests/support/assert_ok.h"
#include "tests/support/loopback_listener.h"
#include "tests/support/read_text.h"

namespace kb::testing::fault {
namespace {

// Attack: a process with a valid worker identity (loopback mode needs no key) sends a RESULT for
// a job leased to another worker, with that lease's exact token. It is rejected and not stored;
// the holder's result is.
TEST_F(FaultTest, AForgedResultForAJobHeldByAnotherWorkerIsRejected) {
  const auto t0 = Clock::now();
  KB_START_FLEET(stack);
  add_worker("holder");
  const int64_t run = submit_sim({3000});
  ASSERT_GT(run, 0);
  const int64_t job = first_job(run);
  const std::string j = std::to_string(job);
  ASSERT_TRUE(wait_started(job, 1));
  const std::string lease_id = stack.query_value("SELECT lease_id FROM jobs WHERE id = " + j).value();
  ASSERT_FALSE(lease_id.empty());

  zmq::context_t context;
  zmq::socket_t forger(context, zmq::socket_type::dealer);
  wire::configure_socket(forger);
  forger.set(zmq::sockopt::routing_id, "forger-1");
  forger.connect(stack.workers_endpoint());
  auto send = [&](wire::MessageType type, nlohmann::json body) {
    ASSERT_TRUE(wire::send_message(forger, wire::Message{type, std::move(body), {}}));
  };
  auto receive = [&](wire::MessageType type) -> nlohmann::json {
    const auto end = Clock::now() + seconds(10);
    while (Clock::now() < end) {
      zmq::pollitem_t item{forger.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, milliseconds(50));
      auto r = wire::receive_message(forger, false);
      if (r && r->decoded.ok && r->decoded.message.type == type) return r->decoded.message.body;
    }
    ADD_FAILURE() << "no " << wire::to_string(type);
    return {};
  };
  send(wire::MessageType::kReady, {{"worker", "forger"}, {"device", {{"kind", "sim"}}},
                                   {"software", {{"kbfleet", KB_VERSION}}}, {"protocol", 1}});
  receive(wire::MessageType::kWelcome);
  send(wire::MessageType::kResult,
       {{"job_id", job}, {"attempt", 1}, {"lease_id", std::stoll(lease_id)},
        {"result", {{"status", "ok"}, {"problem_id", "sim"}, {"preset", "sim"}, {"message", "forged"}}}});
  EXPECT_EQ(receive(wire::MessageType::kAck)["rejected"], "not_holder");

  ASSERT_TRUE(stack.wait_for_run(run, seconds(30)));
  EXPECT_EQ(rows_of_job(job), 1);
  EXPECT_EQ(value("SELECT count(*) FROM results r JOIN workers w ON w.id = r.worker_id WHERE r.job_id = " +
                  j + " AND w.name = 'holder' AND r.message <> 'forged'"), 1);
  EXPECT_EQ(stack.executions()[job], 1);  // it ran once, on the holder
  EXPECT_EQ(stack.executions("start", "holder")[job], 1);
  report("forged RESULT", "1/" + std::to_string(stack.executions()[job]),
         "1/" + std::to_string(rows_of_job(job)), t0);
}

// kb cancel stops a running real job (kb-executor on the CPU device, under the sandbox): the
// executor's process group dies within 2 s, nothing is stored.
TEST_F(FaultTest, CancelMidRunKillsTheExecutorWithinTwoSeconds) {
  const auto t0 = Clock::now();
  KB_START_FLEET(stack);
  add_worker("cpu-a", "cpu");
  // The faulty pack's L1_003 hangs (tests/faulty_cpu_pack): it runs until killed.
  const int64_t run = submit({"submit", "L1_003", "--preset", "small", "--pack", faulty_pack_path(),
                              "--time-cap", "1", "--job-timeout", "120"});
  ASSERT_GT(run, 0);
  const int64_t job = first_job(run);
  const std::string j = std::to_string(job);
  ASSERT_TRUE(wait_started(job, 1, milliseconds(60000)));
  const auto appeared = Clock::now() + seconds(20);
  while (executor_processes(stack.work_dir()) == 0 && Clock::now() < appeared)
    std::this_thread::sleep_for(milliseconds(20));
  ASSERT_GT(executor_processes(stack.work_dir()), 0);
  std::string out;
  const auto cancelled_at = Clock::now();
  ASSERT_EQ(stack.kb({"cancel", std::to_string(run)}, &out), 0) << out;
  while (executor_processes(stack.work_dir()) > 0 && since(cancelled_at) < seconds(10))
    std::this_thread::sleep_for(milliseconds(10));
  const milliseconds took = since(cancelled_at);
  std::cout << "[fault] cancel mid-run: executor gone " << took.count() << " ms after `kb cancel`\n";
  EXPECT_EQ(executor_processes(stack.work_dir()), 0);
  EXPECT_LT(took, milliseconds(2000));
  ASSERT_TRUE(stack.wait_for_executions(job, 1, milliseconds(10000), "revoke"));
  EXPECT_TRUE(stack.wait_for_value("SELECT state FROM jobs WHERE id = " + j, "cancelled",
                                   milliseconds(10000)));
  EXPECT_EQ(stack.executions()[job], 1);
  EXPECT_EQ(stack.executions("revoke")[job], 1);
  EXPECT_EQ(stack.executions("finish")[job], 0);
  EXPECT_EQ(rows_of_job(job), 0);
  report("cancel mid-run (cpu executor)", "1/" + std::to_string(stack.executions()[job]),
         "0/" + std::to_string(rows_of_job(job)), t0);
}

// A hostile candidate pack run by a real kb-worker (kb-executor on the CPU device under its
// bubblewrap sandbox; tests/sandbox checks the sandbox itself): a job that opens a socket and one
// that writes to $HOME each fail as the candidate's runtime_error, a final result stored once
// after one execution, not an infrastructure failure retried on every host; nothing arrives.
TEST_F(FaultTest, AHostilePackJobIsStoredOnceAsItsOwnFailureAndNotRetried) {
  if (access("/usr/bin/bwrap", X_OK) != 0) GTEST_SKIP() << "bwrap is not installed: no sandbox to test";
  const auto t0 = Clock::now();
  KB_OPEN_FLEET(stack);
  const ::kb::test::LoopbackListener listener;
  const std::string home = stack.work_dir() + "/home";
  fs::create_directories(home);
  // The worker (and so its executors) inherit these: the hostile variants' targets.
  setenv("KB_HOSTILE_PORT", std::to_string(listener.port()).c_str(), 1);
  const std::string saved_home = std::getenv("HOME") ? std::getenv("HOME") : "";
  setenv("HOME", home.c_str(), 1);
  KB_ASSERT_OK(stack.start_coordinator());
  add_worker("cpu-a", "cpu");
  setenv("HOME", saved_home.c_str(), 1);
  const int64_t run = submit({"submit", "L1_054,L1_060", "--preset", "small", "--pack", faulty_pack_path(),
                              "--time-cap", "1"});
  ASSERT_GT(run, 0);
  ASSERT_TRUE(stack.wait_for_run(run, seconds(120)));
  const std::string r = std::to_string(run);
  EXPECT_EQ(value("SELECT count(*) FROM results WHERE run_id = " + r + " AND status = 'runtime_error'"), 2)
      << stack.query_value("SELECT string_agg(problem_id || ': ' || message, ' | ') FROM results WHERE run_id = " + r)
             .value();
  EXPECT_EQ(value("SELECT count(*) FROM jobs WHERE run_id = " + r + " AND state = 'done' AND attempt = 1"), 2);
  EXPECT_FALSE(listener.connection_arrived()) << "a hostile job reached the listener";
  EXPECT_FALSE(fs::exists(home + "/kb-hostile-was-here"));
  const auto runs = stack.executions();
  EXPECT_EQ(runs.size(), 2u);
  for (const auto& [job, n] : runs) EXPECT_EQ(n, 1) << "job " << job;
  report("hostile pack (socket, $HOME)", "1+1/" + std::to_string(total(runs)),
         "2/" + std::to_string(value("SELECT count(*) FROM results WHERE run_id = " + r)), t0);
}

// Partition: a worker stopped (SIGSTOP) past its liveness loses the job to another worker;
// resumed (SIGCONT) after the other's result is stored and past the lease grace, its late result
// is refused and dropped: the job is stored once, the second worker's.
TEST_F(FaultTest, AWorkerStoppedPastItsLeaseLosesTheJobAndItsLateResultIsRejected) {
  const auto t0 = Clock::now();
  KB_START_FLEET(stack);
  const int stopped = add_worker("stopped");
  const int64_t run = submit_sim({1500});
  ASSERT_GT(run, 0);
  const int64_t job = first_job(run);
  const std::string j = std::to_string(job);
  ASSERT_TRUE(wait_started(job, 1));
  stack.signal_worker(stopped, SIGSTOP);
  add_worker("other");
  ASSERT_TRUE(wait_started(job, 2));  // lost after 3 x 200 ms: requeued to `other`
  ASSERT_TRUE(stack.wait_for_run(run, seconds(30)));
  // The lease that ended last is the stopped worker's; its grace (2 s) must be over.
  std::this_thread::sleep_for(milliseconds(2500));
  stack.signal_worker(stopped, SIGCONT);
  // It wakes, finishes its sim job, reconnects and sends the result, which is refused and
  // dropped from its spool. Waited for by the worker's log line of the refusal: the execution log
  // says "finish" before the result reaches the spool, so "finished and the spool empty" can hold
  // for a moment before the result is written.
  const fs::path spool = stack.worker_state_dir("stopped") + "/results";
  const fs::path log = stack.work_dir() + "/worker-stopped.log";
  const std::string refusal = "the coordinator rejected the result of job " + j + " ";
  const auto refused = [&] { return kb::test::read_text(log).find(refusal) != std::string::npos; };
  const auto end = Clock::now() + seconds(20);
  while (Clock::now() < end && !(refused() && fs::is_empty(spool)))
    std::this_thread::sleep_for(milliseconds(20));
  EXPECT_TRUE(refused()) << "the late result was never refused";
  EXPECT_TRUE(fs::is_empty(spool)) << "the refused result stayed in the spool";
  EXPECT_EQ(rows_of_job(job), 1);
  EXPECT_EQ(value("SELECT count(*) FROM results r JOIN workers w ON w.id = r.worker_id "
                  "WHERE r.job_id = " + j + " AND w.name = 'other'"), 1);
  EXPECT_EQ(stack.executions()[job], 2);  // once on each worker
  EXPECT_EQ(stack.executions("start", "other")[job], 1);
  EXPECT_EQ(stack.executions("start", "stopped")[job], 1);
  report("SIGSTOP past the lease", "2/" + std::to_string(stack.executions()[job]),
         "1/" + std::to_string(rows_of_job(job)), t0);
}

// The coordinator is killed and stays down longer than the lease grace; its workers keep
// running. After the restart the leases it loads wait lease_grace for their holders, which come
// back with the running and the prefetched job in READY's in_flight: both are kept, each job runs
// once and is stored once, no attempt is spent.
TEST_F(FaultTest, ACoordinatorRestartOutlastingTheLeaseGraceLosesNoLeaseAndRerunsNothing) {
  const auto t0 = Clock::now();
  KB_START_FLEET(stack);
  add_worker("w");
  const int64_t run = submit_sim({5000, 1000});
  ASSERT_GT(run, 0);
  const std::string r = std::to_string(run);
  const int64_t running = first_job(run), prefetched = last_job(run);
  ASSERT_TRUE(wait_started(running, 1));
  ASSERT_TRUE(stack.wait_for_value("SELECT count(*) FROM jobs WHERE run_id = " + r + " AND state = 'leased'",
                                   "2", milliseconds(10000)));
  stack.signal_coordinator(SIGKILL);
  ASSERT_TRUE(stack.wait_coordinator_exit(seconds(10)));
  std::this_thread::sleep_for(milliseconds(3000));  // the outage: longer than the 2 s lease grace
  const auto restarted = Clock::now();
  KB_ASSERT_OK(stack.start_coordinator());
  ASSERT_TRUE(stack.wait_for_run(run, seconds(60)));
  std::cout << "[fault] coordinator restart: run done " << since(restarted).count()
            << " ms after the restart\n";
  EXPECT_EQ(value("SELECT count(*) FROM results WHERE run_id = " + r), 2);
  EXPECT_EQ(value("SELECT sum(attempt) FROM jobs WHERE run_id = " + r), 2);
  for (int64_t job : {running, prefetched}) {
    EXPECT_EQ(rows_of_job(job), 1) << "job " << job;
    EXPECT_EQ(stack.executions()[job], 1) << "job " << job;
    EXPECT_EQ(stack.executions("revoke")[job], 0) << "job " << job;
  }
  report("coordinator restart past the grace", "1+1/" + std::to_string(total(stack.executions())),
         "2/" + std::to_string(value("SELECT count(*) FROM results WHERE run_id = " + r)), t0);
}

// Disk full: the worker's results spool is a full 64 KiB tmpfs. The design (protocol.md,
// Failures): a result that cannot be made durable is not delivered; the worker reports an
// infrastructure failure `spool`, the job is requeued and counts an attempt, and after 3 such
// failures the worker is quarantined. The job is then done elsewhere, stored once; nothing lost.
// Once space returns and an admin releases it, the same worker stores its results again.
TEST_F(FaultTest, AFullResultSpoolRequeuesTheJobElsewhereAndLosesNothing) {
  const auto t0 = Clock::now();
  KB_OPEN_FLEET(stack);
  const std::string spool = stack.worker_state_dir("full") + "/results";
  std::string why;
  if (!mount_tmpfs(spool, "64k", &why)) GTEST_SKIP() << "cannot make a full disk: " << why;
  {
    std::ofstream filler(spool + "/filler", std::ios::binary);
    const std::string block(4096, 'x');
    while (filler.write(block.data(), static_cast<std::streamsize>(block.size())) && filler.flush()) {
    }
  }
  ASSERT_FALSE(std::ofstream(spool + "/probe") << "x" << std::flush) << "the tmpfs is not full";
  fs::remove(spool + "/probe");
  KB_ASSERT_OK(stack.start_coordinator());
  add_worker("full");
  const int64_t run = submit_sim({200}, {"--max-attempts", "5"});
  ASSERT_GT(run, 0);
  const int64_t job = first_job(run);
  const std::string j = std::to_string(job);
  ASSERT_TRUE(stack.wait_for_value("SELECT state FROM workers WHERE name = 'full'", "quarantined",
                                   milliseconds(30000)));
  ASSERT_TRUE(stack.wait_for_value("SELECT state FROM jobs WHERE id = " + j, "queued", milliseconds(10000)));
  EXPECT_EQ(stack.executions("start", "full")[job], 3);
  EXPECT_EQ(rows_of_job(job), 0);
  for (const auto& f : fs::directory_iterator(spool))
    EXPECT_EQ(f.path().filename(), "filler") << "a failed put left " << f.path();

  const int spare = add_worker("spare");
  ASSERT_TRUE(stack.wait_for_run(run, seconds(30)));
  EXPECT_EQ(rows_of_job(job), 1);
  EXPECT_EQ(value("SELECT count(*) FROM results r JOIN workers w ON w.id = r.worker_id WHERE r.job_id = " +
                  j + " AND w.name = 'spare' AND r.status = 'ok'"), 1);
  EXPECT_EQ(value("SELECT attempt FROM jobs WHERE id = " + j), 4);
  EXPECT_EQ(stack.executions()[job], 4);  // 3 on the full spool, 1 elsewhere
  EXPECT_EQ(stack.executions("start", "spare")[job], 1);
  report("disk full", "4 (3 full + 1 spare)/" + std::to_string(stack.executions()[job]),
         "1/" + std::to_string(rows_of_job(job)), t0);

  // Space returns; the spare leaves; the released worker stores its next result itself.
  fs::remove(spool + "/filler");
  stack.kill_worker(spare, SIGTERM);
  std::string out;
  ASSERT_EQ(stack.kb({"workers", "--release", "full"}, &out), 0) << out;
  const int64_t after = submit_sim({50});
  ASSERT_GT(after, 0);
  ASSERT_TRUE(stack.wait_for_run(after, seconds(30)));
  const int64_t next = first_job(after);
  EXPECT_EQ(rows_of_job(next), 1);
  EXPECT_EQ(stack.executions("start", "full")[next], 1);
  EXPECT_EQ(stack.executions()[next], 1);
  EXPECT_TRUE(fs::is_empty(spool)) << "the acked result is still spooled";
}

// The database is replaced (a restore onto a fresh database) while a worker holds an unacked
// result: the new database has a new epoch, and its job ids start again. The spooled result is
// dropped, never stored under the new database's job of the same id.
TEST_F(FaultTest, ASpooledResultFromAnotherDatabaseEpochIsDropped) {
  const auto t0 = Clock::now();
  KB_START_FLEET(stack);
  add_worker("w");
  const int64_t old_run = submit_sim({1500});
  ASSERT_GT(old_run, 0);
  const int64_t old_job = first_job(old_run);
  ASSERT_TRUE(wait_started(old_job, 1));
  stack.signal_coordinator(SIGKILL);  // the result will have nobody to ack it
  ASSERT_TRUE(stack.wait_coordinator_exit(seconds(10)));
  ASSERT_TRUE(stack.wait_for_executions(old_job, 1, milliseconds(10000), "finish"));  // spooled, unacked

  TestDatabase restored;  // a fresh database: new epoch, job ids from 1 again
  KB_ASSERT_OK(restored.status());
  stack.set_db_url(restored.url());
  KB_ASSERT_OK(stack.start_coordinator());
  const int64_t new_run = submit_sim({50});
  ASSERT_GT(new_run, 0);
  const int64_t new_job = first_job(new_run);
  ASSERT_EQ(new_job, old_job) << "the restored database should reuse the job id";
  ASSERT_TRUE(stack.wait_for_run(new_run, seconds(30)));
  const std::string j = std::to_string(new_job);
  EXPECT_EQ(rows_of_job(new_job), 1);
  EXPECT_EQ(stack.query_value("SELECT message FROM results WHERE job_id = " + j).value(),
            "sim device: slept 50 ms; no kernel ran");
  EXPECT_EQ(value("SELECT count(*) FROM results"), 1);  // nothing of the old database
  EXPECT_EQ(stack.executions()[new_job], 2);  // one execution per database, each of its own job
  EXPECT_EQ(stack.executions("finish")[new_job], 2);
  EXPECT_NE(stack.logs_tail(20000).find("dropped the spooled result"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(stack.worker_state_dir("w") + "/results"));
  report("database restore (epoch)", "2 (1 per database)/" + std::to_string(stack.executions()[new_job]),
         "1/" + std::to_string(value("SELECT count(*) FROM results")), t0);
  stack_.reset();  // before `restored` is dropped
}

}  // namespace
}  // namespace kb::testing::fault
