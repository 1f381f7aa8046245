#include "coordinator/coordinator.h"
#include "common/files.h"
#include "common/log.h"

#include <unistd.h>

#include <boost/asio/post.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/curve_keys.h"
#include "common/sha256.h"
#include "common/zmq_messaging.h"

namespace kb::coord {
namespace asio = boost::asio;

namespace {

constexpr std::chrono::milliseconds kTickPeriod{100};  // lease deadlines are checked this often

}  // namespace

Coordinator::Coordinator(CoordinatorConfig config)
    : config_(std::move(config)),
      zmq_context_(1),
      workers_(zmq_context_, zmq::socket_type::router),
      clients_(zmq_context_, zmq::socket_type::router),
      tick_timer_(io_),
      heartbeat_timer_(io_),
      drain_timer_(io_),
      scheduler_(config_.scheduler, clock_),
      pack_ledger_(config_.pack_quota) {}

Coordinator::~Coordinator() {
  io_.stop();
  db_.reset();  // joins the database thread before the loop's objects go
  if (workers_ready_) workers_ready_->stop();
  if (clients_ready_) clients_ready_->stop();
  if (zap_ready_) zap_ready_->stop();
}

Result<std::unique_ptr<Coordinator>> Coordinator::create(CoordinatorConfig config,
                                                         std::unique_ptr<JobStore> store) {
  std::unique_ptr<Coordinator> c(new Coordinator(std::move(config)));
  const std::string dir = c->config_.problems_dir.empty() ? default_problems_dir()
                                                           : c->config_.problems_dir;
  if (auto catalog = load_problem_catalog(dir); catalog.is_ok()) {
    c->catalog_ = std::move(catalog.value());
  } else {
    c->catalog_error_ = catalog.status().message();  // SUBMIT of problems answers "unavailable"
    KB_LOGF_WARN("problem catalog %s: %s", dir.c_str(),
                 c->catalog_error_.c_str());
  }
  KB_ASSIGN_OR_RETURN(c->epoch_, store->database_epoch());
  KB_ASSIGN_OR_RETURN(auto open_jobs, store->load_open_jobs());
  KB_LOGF_INFO("%zu open jobs loaded", open_jobs.size());
  c->scheduler_.load(std::move(open_jobs));
  KB_TRY(c->open_sockets());
  KB_TRY(c->write_endpoints_file());
  c->db_ = std::make_unique<DbThread>(std::move(store), c->config_.db);
  if (std::vector<ProblemRow> rows = c->catalog_rows(); !rows.empty()) {
    c->db_->submit([rows = std::move(rows)](JobStore& s) { return s.store_problems(rows); },
                   [](const Status& status) {
                     if (!status.is_ok()) {
                       KB_LOGF_WARN("storing the problem catalog: %s", status.to_string().c_str());
                     }
                   });
  }
  c->start();
  return c;
}

Status Coordinator::open_sockets() {
  const bool curve = !config_.curve_secret_key_file.empty() || config_.allow_lists.any();
  if (curve && (config_.curve_secret_key_file.empty() || !config_.allow_lists.any())) {
    return Status::invalid_argument("--curve-secret-key and the allow-lists (--allow-dir or "
                                    "--allow-workers/--allow-submitters/--allow-admins) go together");
  }
  KB_TRY(check_binds({config_.workers_bind, config_.clients_bind, config_.http_bind, curve,
                      !config_.http_token.empty()}));
  try {
    for (zmq::socket_t* s : {&workers_, &clients_}) {
      wire::configure_socket(*s);
      s->set(zmq::sockopt::router_mandatory, 1);  // a send to a gone peer fails: counted
    }
    // Workers send no payload (packs only flow to them): a frame larger than a body is a hostile
    // peer's, and libzmq drops its connection before it is buffered. A worker's queue holds at
    // most 1,000 messages (1 GiB of bodies) instead of 100,000 (a worker sends a few a second).
    workers_.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(wire::kMaxBodyBytes + 4096));
    workers_.set(zmq::sockopt::rcvhwm, 1000);
    if (curve) {
      if (!curve::curve_available()) return Status::failed_precondition("libzmq lacks CURVE");
      KB_ASSIGN_OR_RETURN(
          auto keys, curve::load_key_file(config_.curve_secret_key_file, /*require_secret=*/true));
      KB_ASSIGN_OR_RETURN(auto allowed, load_allow_lists(config_.allow_lists));
      zap_ = std::make_unique<ZapHandler>(zmq_context_, std::move(allowed));
      curve::configure_server(workers_, keys, kWorkersDomain);
      curve::configure_server(clients_, keys, kClientsDomain);
    }
    workers_.bind(config_.workers_bind);
    clients_.bind(config_.clients_bind);
    endpoints_.workers = workers_.get(zmq::sockopt::last_endpoint);
    endpoints_.clients = clients_.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return Status::io_error(std::string("binding the coordinator's sockets: ") + e.what());
  }
  if (!config_.dashboard_db.empty()) {
    dashboard_ = std::make_unique<Dashboard>(DashboardConfig{.db_url = config_.dashboard_db});
  }
  KB_ASSIGN_OR_RETURN(http_, HttpEndpoint::bind_async(
                                 io_, config_.http_bind,
                                 [this](const std::string& target, HttpEndpoint::Respond respond) {
                                   on_http_request(target, std::move(respond));
                                 },
                                 config_.http_token));
  endpoints_.http = http_->address();
  return Status::ok();
}

std::vector<ProblemRow> Coordinator::catalog_rows() {
  std::vector<ProblemRow> rows;
  if (!catalog_) return rows;
  for (const auto& [id, spec] : catalog_->problems) {
    const std::string text = read_file(spec->file).value();  // loaded from it at startup
    ProblemRow row{id, spec->name, spec->family, text, sha256_hex(text), spec->level};
    spec_hashes_[id] = row.spec_hash;
    rows.push_back(std::move(row));
  }
  return rows;
}

Status Coordinator::write_endpoints_file() const {
  if (config_.endpoints_file.empty()) return Status::ok();
  const nlohmann::json j = {{"workers", endpoints_.workers}, {"clients", endpoints_.clients},
                            {"http", endpoints_.http}, {"pid", static_cast<int64_t>(::getpid())}};
  const std::string tmp = config_.endpoints_file + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump() << "\n";
    if (!out.flush()) return Status::io_error(tmp + ": cannot write the endpoints file");
  }
  std::error_code error;
  std::filesystem::rename(tmp, config_.endpoints_file, error);
  if (error) return Status::io_error(config_.endpoints_file + ": " + error.message());
  return Status::ok();
}

void Coordinator::start() {
  if (zap_) {
    zap_ready_ = std::make_unique<ZmqReadiness>(io_, zap_->socket(), [this](size_t max) {
      const uint64_t before = zap_->rejected();
      const size_t n = zap_->serve(max);
      for (uint64_t i = before; i < zap_->rejected(); ++i) metrics_.count_auth_rejected();
      if (n > 0) zap_ready_->notify_sent();
      return n;
    });
    zap_ready_->start();
  }
  workers_ready_ = std::make_unique<ZmqReadiness>(io_, workers_, [this](size_t max) {
    return receive_from_workers(max);
  });
  clients_ready_ = std::make_unique<ZmqReadiness>(io_, clients_, [this](size_t max) {
    return receive_from_clients(max);
  });
  workers_ready_->start();
  clients_ready_->start();
  http_->start();
  if (config_.handle_signals) {
    signals_.emplace(io_, SIGINT, SIGTERM);
    signals_->async_wait([this](const boost::system::error_code& error, int) {
      if (!error) begin_drain();
    });
    watch_sighup();
  }
  on_tick();
  on_heartbeat_timer();
}

int Coordinator::run() {
  io_.run();
  return 0;
}

void Coordinator::request_stop() {
  asio::post(io_, [this] { begin_drain(); });
}

void Coordinator::request_reload() {
  asio::post(io_, [this] { reload_allow_lists(); });
}

void Coordinator::post_to_loop(std::function<void()> f) { asio::post(io_, std::move(f)); }

// --- sending and batches ------------------------------------------------------------------------

void Coordinator::send_to_worker(const std::string& routing_id, const wire::Message& message) {
  if (!wire::send_message(workers_, message, routing_id)) metrics_.count_dropped(kDropSendFailed);
  workers_ready_->notify_sent();
}

void Coordinator::send_to_client(const std::string& routing_id, const wire::Message& message) {
  if (!wire::send_message(clients_, message, routing_id)) metrics_.count_dropped(kDropSendFailed);
  clients_ready_->notify_sent();
}

void Coordinator::flush_outbox() {
  for (OutgoingMessage& m : scheduler_.take_messages()) send_to_worker(m.routing_id, m.message);
}

// One batch on the database thread at a time; everything that happens meanwhile goes into the
// next one (group commit: under load, batches grow instead of queueing).
void Coordinator::maybe_flush_batch() {
  // Backpressure: results waiting for the database (in flight + pending) beyond the bound pause
  // dispatching; below half of it, dispatching resumes. Memory stays bounded however far the
  // database falls behind (an outage, a slow disk).
  const size_t backlog = scheduler_.pending_results() + in_flight_results_;
  if (!scheduler_.paused() && backlog > kMaxResultBacklog) {
    scheduler_.set_paused(true);
    metrics_.count_backpressure();
  } else if (scheduler_.paused() && backlog < kMaxResultBacklog / 2 && !draining_) {
    scheduler_.set_paused(false);
  }
  flush_outbox();
  if (batch_in_flight_ || (!scheduler_.has_pending_batch() && acks_next_.empty())) return;
  batch_in_flight_ = true;
  auto batch = std::make_shared<const Batch>(scheduler_.take_batch());
  // The JOBs of this batch's leases wait for its commit: a JOB never names an unstored lease.
  auto dispatches = std::make_shared<std::vector<Dispatch>>(scheduler_.take_dispatches());
  in_flight_results_ = batch->results.size();
  auto outcome = std::make_shared<BatchOutcome>();
  auto acks = std::move(acks_next_);
  acks_next_.clear();
  db_->submit_batch(batch, outcome, [this, batch, outcome, acks, dispatches](const Status& status) mutable {
    post_to_loop([this, batch, outcome, acks = std::move(acks), dispatches, status]() mutable {
      on_batch_done(batch, outcome, std::move(acks), std::move(*dispatches), status);
    });
  });
}

void Coordinator::on_batch_done(std::shared_ptr<const Batch> batch,
                                std::shared_ptr<BatchOutcome> outcome, std::vector<PendingAck> acks,
                                std::vector<Dispatch> dispatches, const Status& status) {
  batch_in_flight_ = false;
  in_flight_results_ = 0;
  if (!status.is_ok()) {
    // Only when the database thread stops (every error is retried, a bad row isolated: see
    // db_thread.h). The workers keep their results and resend them; nothing is acked; the JOBs
    // of its leases are not sent and their jobs are queued again.
    KB_LOGF_WARN("a batch of %zu results was not stored: %s",
                 batch->results.size(), status.to_string().c_str());
    for (const Dispatch& d : dispatches) scheduler_.lease_not_stored(d.token);
  } else {
    for (Dispatch& d : dispatches) {
      if (!scheduler_.send_or_requeue(d.token)) continue;
      // The spec the job was scheduled against (schemas/protocol.md, JOB).
      if (auto hash = spec_hashes_.find(d.job.problem); hash != spec_hashes_.end()) {
        d.job.spec_hash = hash->second;
      }
      send_to_worker(d.routing_id, wire::to_message(d.job));
    }
    uint64_t inserted = 0;
    std::vector<int64_t> to_check;  // new real (not sim) results: regression detection
    for (size_t i = 0; i < outcome->result_inserted.size(); ++i) {
      if (!outcome->result_inserted[i]) continue;
      ++inserted;
      if (batch->results[i].device_kind != "sim") to_check.push_back(batch->results[i].job_id);
    }
    metrics_.count_results_stored(inserted);
    for (const PendingAck& a : acks) send_ack(a.worker_id, a.job_id, a.attempt);
    if (!to_check.empty()) check_regressions(std::move(to_check));
  }
  scheduler_.committed(*batch);
  maybe_flush_batch();
}

// On the database thread, after the results are committed (and acked): a failure here loses no
// result, it only leaves those points unchecked, so it is logged, not retried.
void Coordinator::check_regressions(std::vector<int64_t> job_ids) {
  auto flagged = std::make_shared<int>(0);
  auto open = std::make_shared<int64_t>(-1);
  db_->submit(
      [job_ids = std::move(job_ids), flagged, open](JobStore& store) -> Status {
        KB_ASSIGN_OR_RETURN(*flagged, store.detect_regressions(job_ids));
        KB_ASSIGN_OR_RETURN(*open, store.open_regressions());
        return Status::ok();
      },
      [this, flagged, open](const Status& status) {
        post_to_loop([this, flagged, open, status] {
          if (!status.is_ok()) {
            KB_LOGF_WARN("regression check failed: %s",
                         status.to_string().c_str());
            return;
          }
          metrics_.count_regressions_flagged(*flagged);
          metrics_.set_open_regressions(*open);
          if (*flagged > 0) {
            KB_LOGF_INFO("%d new regression(s) flagged (kb regressions)",
                         *flagged);
          }
        });
      });
}

void Coordinator::send_ack(int64_t worker_id, int64_t job_id, int attempt) {
  const std::string routing_id = scheduler_.routing_id_of(worker_id);
  if (routing_id.empty()) return;  // gone: it resends after reconnecting and is acked then
  send_to_worker(routing_id,
                 wire::to_message(wire::AckMessage{.job_id = job_id, .attempt = attempt}));
}

void Coordinator::reject_result(const std::string& routing_id, int64_t job_id, int attempt,
                                const std::string& reason) {
  metrics_.count_result_rejected(reason);
  KB_LOGF_WARN("rejected a RESULT for job %lld attempt %d from %s: %s", static_cast<long long>(job_id), attempt,
               routing_id.c_str(), reason.c_str());
  send_to_worker(routing_id, wire::to_message(wire::AckMessage{job_id, attempt, reason}));
}

// --- timers, drain, HTTP ------------------------------------------------------------------------

void Coordinator::on_tick() {
  scheduler_.tick();
  maybe_flush_batch();
  tick_timer_.expires_after(kTickPeriod);
  tick_timer_.async_wait([this](const boost::system::error_code& error) {
    if (!error) on_tick();
  });
}

void Coordinator::on_heartbeat_timer() {
  wire::Message heartbeat;
  heartbeat.type = wire::MessageType::kHeartbeat;
  for (const std::string& routing_id : scheduler_.routing_ids()) send_to_worker(routing_id, heartbeat);
  metrics_.sample(std::chrono::steady_clock::now(), scheduler_.stats().jobs_completed);
  heartbeat_timer_.expires_after(config_.scheduler.heartbeat);
  heartbeat_timer_.async_wait([this](const boost::system::error_code& error) {
    if (!error) on_heartbeat_timer();
  });
}

void Coordinator::watch_sighup() {
  if (!hangup_) hangup_.emplace(io_, SIGHUP);
  hangup_->async_wait([this](const boost::system::error_code& error, int) {
    if (error) return;
    reload_allow_lists();
    watch_sighup();
  });
}

// New handshakes see the new lists; a list that fails to load leaves the old ones in force.
void Coordinator::reload_allow_lists() {
  if (!zap_) {
    KB_LOGF_WARN("SIGHUP: no allow-lists to reload (no CURVE keys)");
    return;
  }
  auto allowed = load_allow_lists(config_.allow_lists);
  if (!allowed.is_ok()) {
    KB_LOGF_ERROR("SIGHUP: allow-lists not reloaded, the old ones stay: %s", allowed.status().to_string().c_str());
    return;
  }
  zap_->reload(std::move(allowed.value()));
  KB_LOGF_INFO("SIGHUP: allow-lists reloaded, %zu keys", zap_->keys());
}

void Coordinator::begin_drain() {
  if (draining_) return;
  draining_ = true;
  KB_LOGF_INFO("draining");
  for (const std::string& routing_id : scheduler_.drain()) disconnect(routing_id, "draining");
  maybe_flush_batch();
  check_drained(std::chrono::steady_clock::now() + config_.drain_timeout);
}

void Coordinator::check_drained(std::chrono::steady_clock::time_point deadline) {
  const bool flushed = !batch_in_flight_ && !scheduler_.has_pending_batch() &&
                       acks_next_.empty() && db_->stats().queued_ops == 0;
  if (flushed || std::chrono::steady_clock::now() >= deadline) {
    if (!flushed) KB_LOGF_WARN("drain timed out; unflushed work is left to the workers' spools");
    http_->stop();
    io_.stop();
    return;
  }
  drain_timer_.expires_after(std::chrono::milliseconds(20));
  drain_timer_.async_wait([this, deadline](const boost::system::error_code& error) {
    if (!error) check_drained(deadline);
  });
}

void Coordinator::on_http_request(const std::string& target, HttpEndpoint::Respond respond) {
  if (dashboard_ && Dashboard::serves(target)) {
    dashboard_->handle(target, std::move(respond));  // answered from the dashboard's thread
  } else {
    respond(on_http(target));
  }
}

HttpResponse Coordinator::on_http(const std::string& target) {
  if (target == "/healthz") {
    const bool up = db_->healthy();
    const SchedulerStats s = scheduler_.stats();
    const nlohmann::json j = {{"db", up ? "up" : "down"}, {"queued", s.queued},
                              {"leased", s.leased}, {"workers", s.workers_busy + s.workers_idle},
                              {"draining", draining_}};
    return {up ? 200 : 503, "text/plain; charset=utf-8", (up ? "ok\n" : "unavailable\n") + j.dump() + "\n"};
  }
  if (target == "/metrics") {
    return {200, "text/plain; version=0.0.4; charset=utf-8",
            metrics_.render(scheduler_.stats(), db_->stats(), scheduler_.quarantined())};
  }
  if (!dashboard_ && Dashboard::serves(target)) {
    return {
        404, "text/plain; charset=utf-8",
        "no dashboard: start kb-coordinator with --dashboard-db URL (a login in kb_readonly)\n"};
  }
  return {404, "text/plain; charset=utf-8", "not found: try /, /healthz or /metrics\n"};
}

}  // namespace kb::coord
