// libpqxx exceptions -> kb::Status for the store (pg_job_store.cpp, migrations.cpp); internal to
// kb_store.
//
// A lost or unusable connection (pqxx::broken_connection, an unknown commit outcome
// (in_doubt_error), SQLSTATE class 08, admin/crash shutdown 57P01..57P03), a server short of
// resources (class 53: disk full, out of memory, too many connections), a statement timeout or
// cancel (57014), a read-only node after a failover (25006), a lock timeout (55P03), a system or
// I/O error (class 58) and a transient conflict (serialization failure 40001, deadlock 40P01)
// become kIoError: nothing is wrong with the data, so the caller reconnects and retries until it
// passes. A value the database refuses (SQLSTATE class 22, data exception: a bad time, a NUL, a
// number out of range; class 23, a constraint) is kInvalidArgument: the request is at fault, and
// the same statement would fail again, so the database thread neither retries it nor waits
// (db_thread.h; a batch isolates the row). Anything else is kInternal.
//
// Thread safety: pure functions.
#pragma once

#include <pqxx/pqxx>

#include <exception>
#include <string>

#include "common/status.h"

namespace kb::coord {

inline bool is_retryable_sqlstate(const std::string& state) {
  return state.rfind("08", 0) == 0 || state.rfind("53", 0) == 0 || state.rfind("58", 0) == 0 ||
         state == "57P01" || state == "57P02" || state == "57P03" || state == "57014" ||
         state == "25006" || state == "55P03" || state == "40001" || state == "40P01";
}

inline bool is_refused_value_sqlstate(const std::string& state) {
  return state.rfind("22", 0) == 0 || state.rfind("23", 0) == 0;
}

// Call inside a catch block: converts the exception in flight.
inline Status current_pg_status(const std::string& what) {
  try {
    throw;
  } catch (const pqxx::broken_connection& e) {
    return Status::io_error(what + ": database connection lost: " + e.what());
  } catch (const pqxx::in_doubt_error& e) {
    return Status::io_error(what + ": commit outcome unknown: " + e.what());
  } catch (const pqxx::sql_error& e) {
    if (is_retryable_sqlstate(e.sqlstate())) {
      return Status::io_error(what + ": database unavailable (" + e.sqlstate() + "): " + e.what());
    }
    if (is_refused_value_sqlstate(e.sqlstate())) {
      return Status::invalid_argument(what + ": the database refused a value (" + e.sqlstate() +
                                      "): " + e.what());
    }
    return Status::internal(what + ": SQL error " + e.sqlstate() + ": " + e.what());
  } catch (const std::exception& e) {
    return Status::internal(what + ": " + e.what());
  }
}

// libpq waits forever for an unreachable host by default; an outage must show up as an error.
inline std::string with_connect_timeout(const std::string& url) {
  if (url.find("connect_timeout") != std::string::npos) return url;
  if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0) {
    return url + (url.find('?') == std::string::npos ? "?" : "&") + "connect_timeout=10";
  }
  return url + " connect_timeout=10";
}

}  // namespace kb::coord
