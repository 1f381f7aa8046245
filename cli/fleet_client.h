// The CLI's connection to kb-coordinator: a DEALER socket to the coordinator's clients ROUTER
// (schemas/protocol.md: SUBMIT, QUERY, CANCEL, WORKER_CONTROL -> REPLY | ERROR), CURVE when the
// config has keys.
//
// request() stamps the message with a fresh `request_id`, sends it and waits for the REPLY or
// ERROR carrying the same id (other messages, e.g. a late answer to an earlier timed-out request,
// are dropped). Errors, as Status:
//   - no answer in time ("coordinator at X did not answer within 5 s (...)"): kIoError
//   - the CURVE handshake failed (our key not allowed, wrong server key): kFailedPrecondition
//   - ERROR {code: bad_request | unknown_pack}: kInvalidArgument / kNotFound
//   - ERROR {code: forbidden}, our key's role may not (docs/security.md): kFailedPrecondition
//   - ERROR of another code ("unavailable": the database is down, ...): kInternal
//   - ask(): a REPLY whose body is not the struct asked for (names the field): kInternal
//
// Thread safety: one FleetClient per thread (it owns a ZeroMQ socket).
#pragma once

#include <zmq.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "cli/cli_config.h"
#include "common/protocol_messages.h"
#include "common/status.h"
#include "common/wire_protocol.h"

namespace kb::cli {

inline constexpr std::chrono::milliseconds kDefaultRequestTimeout{5000};

class FleetClient {
 public:
  // Connects in the background: nothing is known about the coordinator until request().
  // Fails on a malformed endpoint or an unreadable key file.
  static Result<std::unique_ptr<FleetClient>> connect(const FleetConfig& config);

  Result<wire::Message> request(wire::Message message,
                                std::chrono::milliseconds timeout = kDefaultRequestTimeout);

  // request(), its REPLY read as R (a reply struct of protocol_messages.h, the one that answers
  // what `message` asks). A body R cannot read is kInternal, naming the field.
  template <typename R>
  Result<R> ask(wire::Message message, std::chrono::milliseconds timeout = kDefaultRequestTimeout) {
    const std::string asked(wire::to_string(message.type));
    KB_ASSIGN_OR_RETURN(const wire::Message reply, request(std::move(message), timeout));
    Result<R> answer = wire::from_message<R>(reply);
    if (!answer.is_ok()) {
      return Status::internal("the coordinator's answer to " + asked + ": " +
                              answer.status().message());
    }
    return answer;
  }

  const std::string& endpoint() const { return endpoint_; }

 private:
  FleetClient() = default;
  Status init(const FleetConfig& config);
  // A handshake failure reported by the socket monitor, if any arrived.
  Status check_monitor();

  zmq::context_t context_;
  zmq::socket_t socket_;
  zmq::socket_t monitor_;
  std::string endpoint_;
  std::string id_prefix_;
  uint64_t next_id_ = 1;
  bool curve_ = false;
};

// "tcp://host:port" from "host:port" or a full endpoint; "" stays "".
std::string normalize_endpoint(const std::string& endpoint);

}  // namespace kb::cli
