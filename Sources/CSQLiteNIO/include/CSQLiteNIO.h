// The few SQLite C functions Countersign calls directly, declared against SQLiteNIO's vendored copy
// (its VaporCSQLite target exports them renamed sqlite_nio_sqlite3_*). The linker resolves them to the
// SAME copy that SQLiteNIO and Fluent use: a second SQLite library in one process would keep its own
// POSIX lock table, and two copies opening one file can corrupt it. Never link libsqlite3 beside it.
#ifndef CSQLITENIO_H
#define CSQLITENIO_H

#include <stdint.h>

typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;

#define CS_SQLITE_OK 0
#define CS_SQLITE_BUSY 5
#define CS_SQLITE_ROW 100
#define CS_SQLITE_DONE 101
#define CS_SQLITE_OPEN_READONLY 0x00000001
#define CS_SQLITE_OPEN_READWRITE 0x00000002
#define CS_SQLITE_OPEN_NOMUTEX 0x00008000
#define CS_SQLITE_PREPARE_PERSISTENT 0x01

int sqlite_nio_sqlite3_open_v2(const char *filename, sqlite3 **ppDb, int flags, const char *zVfs);
int sqlite_nio_sqlite3_close_v2(sqlite3 *);
int sqlite_nio_sqlite3_busy_timeout(sqlite3 *, int ms);
int sqlite_nio_sqlite3_exec(sqlite3 *, const char *sql, int (*callback)(void *, int, char **, char **), void *, char **errmsg);
int sqlite_nio_sqlite3_prepare_v3(sqlite3 *db, const char *zSql, int nByte, unsigned int prepFlags, sqlite3_stmt **ppStmt,
                                  const char **pzTail);
int sqlite_nio_sqlite3_step(sqlite3_stmt *);
int sqlite_nio_sqlite3_reset(sqlite3_stmt *);
int sqlite_nio_sqlite3_clear_bindings(sqlite3_stmt *);
int sqlite_nio_sqlite3_finalize(sqlite3_stmt *);
int sqlite_nio_sqlite3_bind_int64(sqlite3_stmt *, int, int64_t);
int sqlite_nio_sqlite3_bind_null(sqlite3_stmt *, int);
int sqlite_nio_sqlite3_bind_text(sqlite3_stmt *, int, const char *, int, void (*)(void *));
int sqlite_nio_sqlite3_bind_blob(sqlite3_stmt *, int, const void *, int n, void (*)(void *));
int sqlite_nio_sqlite3_column_type(sqlite3_stmt *, int iCol);
int64_t sqlite_nio_sqlite3_column_int64(sqlite3_stmt *, int iCol);
const unsigned char *sqlite_nio_sqlite3_column_text(sqlite3_stmt *, int iCol);
const void *sqlite_nio_sqlite3_column_blob(sqlite3_stmt *, int iCol);
int sqlite_nio_sqlite3_column_bytes(sqlite3_stmt *, int iCol);
int sqlite_nio_sqlite3_extended_errcode(sqlite3 *);
const char *sqlite_nio_sqlite3_errmsg(sqlite3 *);
int sqlite_nio_sqlite3_get_autocommit(sqlite3 *);
int sqlite_nio_sqlite3_db_config(sqlite3 *, int op, ...);
int sqlite_nio_sqlite3_wal_checkpoint_v2(sqlite3 *db, const char *zDb, int eMode, int *pnLog, int *pnCkpt);

#define CS_SQLITE_CHECKPOINT_PASSIVE 0

// The query planner stability guarantee (SQLITE_DBCONFIG_ENABLE_QPSG): plans never depend on bound
// values, so a kept prepared statement is not marked expired and re-prepared (parsed again) whenever a
// parameter is rebound. Variadic, hence wrapped: Swift cannot call C variadics.
static inline int cs_sqlite_enable_qpsg(sqlite3 *db) {
    return sqlite_nio_sqlite3_db_config(db, 1007, 1, (int *)0);
}

// SQLITE_TRANSIENT (SQLite copies the value before the call returns): a cast Swift cannot spell.
static inline int cs_sqlite_bind_text(sqlite3_stmt *s, int i, const char *text, int n) {
    return sqlite_nio_sqlite3_bind_text(s, i, text, n, (void (*)(void *))-1);
}
static inline int cs_sqlite_bind_blob(sqlite3_stmt *s, int i, const void *bytes, int n) {
    return sqlite_nio_sqlite3_bind_blob(s, i, bytes, n, (void (*)(void *))-1);
}

#endif
