// kb-coordinator's core (docs/design.md#components; schemas/protocol.md): one Boost.Asio event loop
// owns the workers' ROUTER, the clients' ROUTER, the ZAP handler (with CURVE), the timers
// (scheduler ticks and lease deadlines, heartbeats to workers, metrics rates), SIGTERM/SIGINT and
// the HTTP endpoint. The Scheduler (scheduler.h) decides; the DbThread (db_thread.h) writes; the
// loop never waits on PostgreSQL. With dashboard_db, the HTTP endpoint also serves the dashboard
// (dashboard.h), whose pages are queried and rendered on its own thread and answered later. A
// RESULT is acknowledged only after the batch holding it has committed (or it proved a duplicate of
// a committed row).
//
// Lifecycle: create() loads the open jobs from the store (lease grace for leased ones), binds the
// sockets (loopback only unless CURVE keys are given) and the HTTP endpoint, and writes the
// endpoints file; run() serves until SIGTERM/SIGINT or request_stop(), then drains: stops
// dispatching, DISCONNECTs the workers ("draining"), waits for the database thread (bounded by
// drain_timeout) and returns 0.
//
// Trust (docs/security.md, access_control.h): each message's role and name come from the CURVE
// key's ZAP User-Id; the allow-lists are re-read on SIGHUP (a bad file keeps the old lists).
// SUBMIT and pack uploads need a submitter or admin key (per-submitter pack quota), unsafe job
// options an admin key, CANCEL the run's submitter or an admin; READY must use the worker key's
// own name, and a name whose session is alive cannot be taken over.
//
// Errors: create() returns kInvalidArgument for bad flags (a bind refused by bind_policy.h, a
// bad key file or allow-list), kIoError for a bind that fails, and the store's Status when
// loading fails. Bad network input is never an error: it is dropped and counted (/metrics).
//
// Thread safety: create() and run() from one thread; request_stop() from any thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <zmq.hpp>

#include <chrono>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/protocol_messages.h"
#include "common/spec_loader.h"
#include "coordinator/access_control.h"
#include "coordinator/bind_policy.h"
#include "coordinator/dashboard.h"
#include "coordinator/db_thread.h"
#include "coordinator/http_endpoint.h"
#include "coordinator/job_store.h"
#include "coordinator/metrics.h"
#include "coordinator/pack_quota.h"
#include "coordinator/scheduler.h"
#include "coordinator/zap_handler.h"
#include "coordinator/zmq_asio.h"

namespace kb::coord {

struct CoordinatorConfig {
  std::string workers_bind = "tcp://127.0.0.1:*";
  std::string clients_bind = "tcp://127.0.0.1:*";
  std::string http_bind = "127.0.0.1:0";
  std::string endpoints_file;  // "" = none
  std::string curve_secret_key_file;  // with allow_lists, or neither
  AllowListFiles allow_lists;
  std::string http_token;              // "" = none (then HTTP must be on loopback)
  std::string dashboard_db;            // the read-only role's URL; "" = no dashboard (dashboard.h)
  PackQuota pack_quota;
  std::string problems_dir;    // the catalog for SUBMIT; "" = default_problems_dir()
  SchedulerConfig scheduler;
  std::chrono::milliseconds drain_timeout{10'000};
  bool handle_signals = true;  // tests run several coordinators in one process
  DbThreadOptions db;
};

struct CoordinatorEndpoints {
  std::string workers, clients, http;  // "tcp://127.0.0.1:PORT", ..., "127.0.0.1:PORT"
};

// This build's kbfleet version ("0.1.0"): a worker's must be wire::software_compatible with it.
const char* coordinator_version();

class Coordinator {
 public:
  static Result<std::unique_ptr<Coordinator>> create(CoordinatorConfig config,
                                                     std::unique_ptr<JobStore> store);
  ~Coordinator();

  int run();
  void request_stop();
  void request_reload();  // what SIGHUP does: re-read the allow-lists (from any thread)
  const CoordinatorEndpoints& endpoints() const { return endpoints_; }

 private:
  struct PendingAck {
    int64_t worker_id = 0, job_id = 0;
    int attempt = 0;
  };
  struct Session {  // what a RESULT row needs from the worker that sent it
    std::string gpu_model, device_kind, name;
  };

  explicit Coordinator(CoordinatorConfig config);
  Status open_sockets();
  std::vector<ProblemRow> catalog_rows();  // also fills spec_hashes_
  Status write_endpoints_file() const;
  void start();

  // coordinator.cpp: the loop's plumbing.
  void send_to_worker(const std::string& routing_id, const wire::Message& message);
  void send_to_client(const std::string& routing_id, const wire::Message& message);
  void flush_outbox();
  void maybe_flush_batch();
  // Results waiting for the database past which dispatching pauses (see maybe_flush_batch): at a
  // few KB per result, tens of MB at most.
  static constexpr size_t kMaxResultBacklog = 4096;
  void on_batch_done(std::shared_ptr<const Batch> batch, std::shared_ptr<BatchOutcome> outcome,
                     std::vector<PendingAck> acks, std::vector<Dispatch> dispatches,
                     const Status& status);
  void send_ack(int64_t worker_id, int64_t job_id, int attempt);
  // ACK {rejected: reason}: the worker drops its spooled copy; counted and logged.
  void reject_result(const std::string& routing_id, int64_t job_id, int attempt,
                     const std::string& reason);
  void check_regressions(std::vector<int64_t> job_ids);
  void on_tick();
  void on_heartbeat_timer();
  void begin_drain();
  void watch_sighup();
  void reload_allow_lists();
  void check_drained(std::chrono::steady_clock::time_point deadline);
  HttpResponse on_http(const std::string& target);
  void on_http_request(const std::string& target, HttpEndpoint::Respond respond);
  void post_to_loop(std::function<void()> f);  // from the database thread

  // coordinator_workers.cpp
  size_t receive_from_workers(size_t max);
  // The handlers take the body as wire::decode read it (wire::AnyMessage), never its JSON.
  void on_worker_message(const std::string& routing_id, const Peer& peer,
                         const wire::AnyMessage& message);
  void on_ready(const std::string& routing_id, const Peer& peer, const wire::ReadyMessage& ready);
  // Why this READY is refused ("" = accepted): another key's name, a live session's name, a
  // protocol or software version this coordinator does not speak.
  std::string refuse_ready(const std::string& routing_id, const Peer& peer,
                           const WorkerIdentity& identity, const wire::ReadyMessage& ready) const;
  void on_registered(const std::string& routing_id, const WorkerIdentity& identity,
                     const std::vector<InFlight>& in_flight, int64_t worker_id);
  void on_result(const std::string& routing_id, const wire::ResultMessage& result);
  void on_bye(const std::string& routing_id, const wire::ByeMessage& bye);
  void on_pack_request(const std::string& routing_id, const std::string& hash);
  void reply_pack(const std::string& routing_id, const std::string& hash);
  void disconnect(const std::string& routing_id, const std::string& reason);

  // coordinator_clients.cpp
  size_t receive_from_clients(size_t max);
  // `request` is the client's message as decoded: its struct in request.body, its JSON (read only
  // for the request_id that reply() echoes) and payload in request.message.
  void on_client_message(const std::string& routing_id, const Peer& peer,
                         wire::DecodeResult request);
  // Below, `request` is the body as it came, for its request_id (see reply()).
  void on_submit(const std::string& routing_id, const Peer& peer, const nlohmann::json& request,
                 const wire::SubmitMessage& submit, std::string payload);
  void on_query(const std::string& routing_id, const nlohmann::json& request,
                const wire::QueryMessage& query);
  void on_cancel(const std::string& routing_id, const Peer& peer, const nlohmann::json& request,
                 const wire::CancelMessage& cancel);
  void cancel_run(const std::string& routing_id, int64_t run_id,
                  std::shared_ptr<const nlohmann::json> request);
  void on_worker_control(const std::string& routing_id, const Peer& peer,
                         const nlohmann::json& request, const wire::WorkerControlMessage& control);
  // REPLY with R, one of the reply structs of protocol_messages.h.
  template <typename R>
  void reply(const std::string& routing_id, const nlohmann::json& request, const R& answer) {
    static_assert(R::kType == wire::MessageType::kReply, "a REPLY body struct");
    answer_client(routing_id, request, wire::to_message(answer));
  }
  void reply_error(const std::string& routing_id, const nlohmann::json& request,
                   const std::string& code, const std::string& message);
  // Sends `answer` with the request's request_id, if it had one, echoed in its body.
  void answer_client(const std::string& routing_id, const nlohmann::json& request,
                     wire::Message answer);

  CoordinatorConfig config_;
  RealClock clock_;
  boost::asio::io_context io_;
  zmq::context_t zmq_context_;
  std::unique_ptr<ZapHandler> zap_;
  zmq::socket_t workers_, clients_;
  std::unique_ptr<ZmqReadiness> workers_ready_, clients_ready_, zap_ready_;
  std::unique_ptr<HttpEndpoint> http_;
  // After io_: destroyed first, so its thread's last answers never post to a destroyed loop.
  std::unique_ptr<Dashboard> dashboard_;
  boost::asio::steady_timer tick_timer_, heartbeat_timer_, drain_timer_;
  std::optional<boost::asio::signal_set> signals_, hangup_;
  CoordinatorEndpoints endpoints_;

  Scheduler scheduler_;
  Metrics metrics_;
  std::unique_ptr<DbThread> db_;
  std::optional<ProblemCatalog> catalog_;
  std::string epoch_;  // the database's (JobStore::database_epoch), sent in WELCOME
  std::string catalog_error_;
  std::map<std::string, std::string> spec_hashes_;  // problem id -> sha256 of its spec file

  std::map<int64_t, Session> sessions_;  // worker id -> identity of its current session
  std::set<std::string> registering_;    // routing ids whose READY is on the database thread
  std::vector<PendingAck> acks_next_;    // acked when the next batch commits
  bool batch_in_flight_ = false;
  size_t in_flight_results_ = 0;  // results in the batch the database thread is applying
  bool draining_ = false;
  std::list<std::pair<std::string, std::shared_ptr<const std::string>>> pack_cache_;  // MRU first
  std::map<std::string, std::vector<std::string>> pack_waiters_;  // hash -> routing ids
  PackQuotaLedger pack_ledger_;
};

}  // namespace kb::coord
