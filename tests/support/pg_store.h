// KB_OPEN_STORE(db, store): inside a test, declares `db` (a fresh database: skips without
// KB_TEST_PG_URL) and `store`, a PgJobStore on it with every migration applied.
#pragma once

#include "coordinator/pg_job_store.h"
#include "tests/support/assert_ok.h"
#include "tests/support/postgres_test_db.h"

#define KB_OPEN_STORE(db, store)                                 \
  KB_REQUIRE_TEST_DB(db);                                        \
  KB_ASSERT_OK(::kb::testing::apply_migrations(db.url()));       \
  auto store##_opened = ::kb::coord::PgJobStore::open(db.url()); \
  KB_ASSERT_OK(store##_opened);                                  \
  ::kb::coord::PgJobStore& store = *store##_opened.value()
