/*
 * Shared helpers for the qdmesh load generators (qdm-send, qdm-recv).
 *
 * Both tools are single-threaded proton-C proactor programs.  They are
 * deliberately small: the point of a C load generator is that the client
 * side costs far less CPU than the router under test, so anything that
 * would make a client slow (per-message allocation, full message decode)
 * is avoided on the hot path.
 */
#ifndef QDM_LOADGEN_COMMON_H
#define QDM_LOADGEN_COMMON_H

#include <proton/connection.h>
#include <proton/event.h>
#include <proton/proactor.h>
#include <proton/transport.h>

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exit codes shared by both tools (run.py relies on them). */
enum {
  QDM_EXIT_OK = 0,      /* finished, all expected messages/outcomes seen */
  QDM_EXIT_ERROR = 1,   /* protocol/connection error or bad usage */
  QDM_EXIT_TIMEOUT = 2, /* --timeout expired before completion */
  QDM_EXIT_SHORT = 3    /* receiver stopped on --idle with fewer than expected */
};

/* Period of the proactor housekeeping tick used for timeouts, in ms. */
#define QDM_TICK_MS 100

/* Network endpoint and role shared by both tools. */
typedef struct qdm_endpoint_t {
  bool listen;           /* true: accept a connection; false: connect */
  char host[256];
  char port[32];
  bool sasl;             /* client side: negotiate SASL ANONYMOUS */
} qdm_endpoint_t;

/* CLOCK_MONOTONIC in nanoseconds.  The clock is system-wide on Linux, so
 * timestamps taken in the sender and the receiver processes are directly
 * comparable; that is what the one-way latency figure relies on. */
int64_t qdm_now_ns(void);

/* User + system CPU time this process has used, in seconds.  The tools
 * report the CPU used from their first message on, so a run can show the
 * load generators were not the bottleneck. */
double qdm_cpu_seconds(void);

/* realloc that exits on failure: a load generator cannot usefully go on. */
void *qdm_xrealloc(void *p, size_t size);

/* Parse "HOST:PORT" (HOST may be empty or "[v6]") into ep. Returns 0 on success. */
int qdm_parse_hostport(const char *s, qdm_endpoint_t *ep);

/* Parse a positive decimal count / size; exits with a message on garbage. */
long long qdm_parse_count(const char *what, const char *s, long long min);
double qdm_parse_seconds(const char *what, const char *s);

/* Start listening or connecting according to ep. Returns the listener (or NULL). */
pn_listener_t *qdm_start(pn_proactor_t *proactor, const qdm_endpoint_t *ep);

/*
 * Connection-level event handling common to both tools: SASL setup,
 * answering remote opens/closes, accepting incoming connections.
 * Returns true if the event was fully handled here.
 * `*error` is set when a peer reported an error condition.
 */
bool qdm_handle_connection_event(pn_event_t *e, const qdm_endpoint_t *ep, const char *container_id,
                                 bool *error);

/* Print a proton condition to stderr if set; returns true if it was set. */
bool qdm_report_condition(const char *prog, const char *what, pn_condition_t *cond);

/* The port a listener actually bound (useful with port 0). */
int qdm_listener_port(pn_listener_t *listener);

/* Set by SIGINT/SIGTERM; the tools poll it on their housekeeping tick and
 * stop gracefully, still printing a (partial) result. */
extern volatile sig_atomic_t qdm_stop_requested;
void qdm_install_signal_handlers(void);

/* Write a JSON string literal (with escaping) to stdout. */
void qdm_json_string(const char *s);

#endif
