// One worker identity's side of the protocol (schemas/protocol.md): its DEALER socket to the
// coordinator, its held jobs (one running + one prefetched), its JobRunner, its result spool and
// pack cache. The states:
//
//   connecting --WELCOME--> registered --silence or DISCONNECT--> backoff --timer--> connecting
//
// connecting: a fresh DEALER (routing id NAME-<random>, so a reconnect is visibly a new session)
//   has sent READY {worker, device, software, host, in_flight, protocol}; waits for WELCOME.
// registered: REQUEST{credits: 2 - held}, then resends every unacked RESULT of the WELCOME's
//   database epoch (one from another epoch is dropped and logged); a new REQUEST{1}
//   each time a job leaves the worker (its run finished, or it failed before it could start), so
//   it holds at most one running and one prefetched job; heartbeats
//   when nothing else was sent for heartbeat_ms. JOBs are held, run one at a time; a JOB already
//   held (same job_id and attempt) is ignored; a missing pack is asked for (PACK_REQUEST) and its
//   job waits for it (PACK with missing: true fails the job as runtime_error).
// backoff: no socket; after 250 ms doubling to 8 s (+-25% jitter), connecting again. The running
//   job goes on meanwhile; its result is spooled and sent once registered again.
// The coordinator is gone after liveness * heartbeat_ms without a message from it (1000 ms x 3
// before WELCOME).
//
// Every RESULT is written to the spool (fsync) before it is sent and stays there until ACK (or an
// ACK {rejected: reason}: the coordinator refused it by lease fencing; it is dropped and logged).
// RESULT echoes the JOB's lease token (job_id, attempt, lease_id) and the epoch. A job that could
// not run here (pack late or not storable, spool not writable, executor not spawnable, device
// init) is reported as RESULT {infra_failure: "kind: detail"}: the coordinator requeues it.
//
// REVOKE {job_id, attempt, reason}: a held job is dropped; the running one is killed (its process
// group) and reports nothing. reason "drain" (an admin's) spares the running job and gives a held
// one back with BYE {release}. Lifecycle (worker_main.cpp): drain() on the first SIGTERM (held jobs
// given back with BYE {draining}, the running one finishes; a JOB that arrives later, leased
// before the coordinator read that BYE, is given back at once the same way), stop_now() on the
// second (the running job is killed and given back with BYE {final}), say_goodbye() (BYE {final})
// before exiting.
//
// SessionConfig::execution_log: one line "job_id,attempt,event,worker" per start, finish, revoke
// or abort of a job, appended; the fault tests count executions with it.
//
// Driven by an external poll loop (worker_main.cpp runs one loop over 1..K sessions): poll the
// socket of pollitem(), call on_readable() when it is readable and on_tick() once next_deadline()
// has passed. Nothing blocks: sim jobs end on a timer, real jobs are children polled on ticks.
//
// Errors: network input is validated and counted, never trusted; spool write failures are
// logged (the result is still sent and kept in memory until ACK).
// Thread safety: one thread (the loop's); the zmq context is shared and thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>

#include "common/curve_keys.h"
#include "common/protocol_messages.h"
#include "common/wire_protocol.h"
#include "worker/job_runner.h"
#include "worker/pack_cache.h"
#include "worker/result_spool.h"

namespace kb {

struct SessionConfig {
  std::string name;      // READY.worker; also the prefix of the routing id
  std::string endpoint;  // tcp://HOST:PORT of the coordinator's worker ROUTER
  wire::DeviceIdentity device;                         // READY.device
  nlohmann::json software = nlohmann::json::object();  // READY.software
  std::string host;
  bool needs_packs = true;                   // false for the sim device, whose jobs load no pack
  int capacity = 2;                          // jobs held at once: one running + one prefetched
  std::optional<curve::KeyPair> curve_keys;  // with coordinator_key: CURVE
  std::string coordinator_key;
  // Before WELCOME (which brings the coordinator's own figures).
  std::chrono::milliseconds heartbeat{1000};
  int liveness = 3;
  std::chrono::milliseconds backoff_initial{250}, backoff_max{8000};
  std::chrono::milliseconds pack_wait{30000};
  std::string execution_log;  // "" = none
};

enum class SessionState { kConnecting, kRegistered, kBackoff, kStopped };
std::string_view to_string(SessionState state);

struct SessionStats {
  int64_t connects = 0, welcomes = 0, jobs_received = 0, jobs_ignored = 0, jobs_started = 0,
          results_sent = 0, acks = 0, packs_received = 0, dropped_messages = 0, revokes = 0,
          rejected = 0, foreign_epoch = 0, jobs_given_back = 0;
};

class WorkerSession {
 public:
  WorkerSession(zmq::context_t& context, SessionConfig config, std::unique_ptr<JobRunner> runner,
                ResultSpool spool, PackCache packs);
  ~WorkerSession();
  WorkerSession(const WorkerSession&) = delete;
  WorkerSession& operator=(const WorkerSession&) = delete;

  // Connects for the first time.
  void start(SteadyClock::time_point now);
  // The socket to poll for input; nullopt while there is none (backoff, stopped).
  std::optional<zmq::pollitem_t> pollitem();
  void on_readable(SteadyClock::time_point now);
  void on_tick(SteadyClock::time_point now);
  SteadyClock::time_point next_deadline() const;

  // First SIGTERM: requests nothing more, gives the held jobs back (BYE {draining}); the running
  // job finishes and its result is delivered.
  void drain(SteadyClock::time_point now);
  // Second SIGTERM: kills the running job and gives it back (BYE {final}).
  void stop_now(SteadyClock::time_point now);
  // BYE {final} once (before the process exits); the socket lingers so that it goes out.
  void say_goodbye(SteadyClock::time_point now);
  bool busy() const { return running_.has_value() || !held_.empty(); }
  bool has_unacked_results() const { return !unacked_.empty(); }

  SessionState state() const { return state_; }
  const SessionStats& stats() const { return stats_; }
  const std::string& routing_id() const { return routing_id_; }
  int64_t worker_id() const { return worker_id_; }
  size_t held_jobs() const { return held_.size() + (running_ ? 1 : 0); }

 private:
  using JobKey = std::pair<int64_t, int64_t>;  // job_id, attempt

  void connect(SteadyClock::time_point now);
  void lose(SteadyClock::time_point now, const std::string& why);
  bool send(const wire::Message& message, SteadyClock::time_point now);
  template <typename M>
  bool send(const M& body, SteadyClock::time_point now) {
    return send(wire::to_message(body), now);
  }
  // The body as wire::decode read it; payload: the message's payload frame (PACK's bytes).
  void handle(wire::AnyMessage message, const std::string& payload, SteadyClock::time_point now);
  void on_welcome(const wire::WelcomeMessage& welcome, SteadyClock::time_point now);
  void on_job(wire::JobMessage job, SteadyClock::time_point now);
  void on_ack(const wire::AckMessage& ack);
  void on_revoke(const wire::RevokeMessage& revoke, SteadyClock::time_point now);
  void give_back_while_draining(const JobSpec& job, SteadyClock::time_point now);
  void drop_foreign_results();
  // A warning line of this session: "kb-worker: NAME: text".
  void warn(const std::string& text) const;
  void log_execution(const JobSpec& job, const char* event) const;
  void on_pack(const wire::PackMessage& pack, const std::string& bytes,
               SteadyClock::time_point now);
  // infra empty: the jobs end as runtime_error results; else as infrastructure failures.
  void fail_jobs_waiting_for(const std::string& pack, const std::string& why,
                             SteadyClock::time_point now, const std::string& infra = "");
  void request_missing_packs(SteadyClock::time_point now);
  void expire_pack_requests(SteadyClock::time_point now);
  void start_next_job(SteadyClock::time_point now);
  void finish_job(const JobSpec& job, JobOutcome outcome, SteadyClock::time_point now);
  wire::ReadyMessage ready_message() const;
  std::chrono::milliseconds silence_limit() const;
  bool is_held(const JobKey& key) const;

  zmq::context_t& context_;
  SessionConfig config_;
  std::unique_ptr<JobRunner> runner_;
  ResultSpool spool_;
  PackCache packs_;
  std::mt19937_64 random_;

  SessionState state_ = SessionState::kStopped;
  std::unique_ptr<zmq::socket_t> socket_;
  std::string routing_id_;
  int64_t worker_id_ = -1;
  std::chrono::milliseconds heartbeat_, backoff_;
  int liveness_;
  SteadyClock::time_point last_heard_, last_sent_, reconnect_at_;
  bool draining_ = false, said_goodbye_ = false;
  std::string epoch_;  // from WELCOME

  std::deque<JobSpec> held_;        // received, not started
  std::optional<JobSpec> running_;  // the job the runner runs
  // Packs asked for on this connection, and when: one unanswered for SessionConfig::pack_wait
  // fails its jobs (as a PACK with missing: true does).
  std::map<std::string, SteadyClock::time_point> packs_requested_;
  std::map<JobKey, wire::ResultMessage> unacked_;  // RESULTs sent (or to send), awaiting ACK
  SessionStats stats_;
};

}  // namespace kb
