/*
 * qdm-recv: AMQP 1.0 throughput/latency receiver for benchmarking qdmesh.
 *
 * Connects to HOST:PORT and attaches a receiving link from ADDRESS, or
 * listens and accepts whatever sending links peers attach (the "direct"
 * baseline, where qdm-send connects straight to us with no router).
 *
 * Credit is granted in a window (default 1000) and topped up once it has
 * fallen to half, so the sender sees batched flow frames, as from a
 * real consumer.  Unsettled deliveries are accepted and settled; pre-settled
 * ones are just freed.  Latency is now - (timestamp in the first 8 body
 * bytes), both CLOCK_MONOTONIC, written by qdm-send.
 *
 * Stops after N messages (--messages; 0 = no limit), or when nothing has
 * arrived for --idle seconds after the first message (needed when the
 * share of each receiver is unknown, e.g. balanced distribution, or when
 * a router may drop pre-settled messages), or on --timeout.
 *
 * SIGINT/SIGTERM stop it gracefully, still printing the result.
 *
 * Exit codes: 0 done, 1 error, 2 timeout, 3 stopped (idle or signal) short of N.
 */
#include "body_walk.h"
#include "common.h"
#include "latency_stats.h"

#include <proton/condition.h>
#include <proton/delivery.h>
#include <proton/disposition.h>
#include <proton/link.h>
#include <proton/listener.h>
#include <proton/message.h>
#include <proton/session.h>
#include <proton/terminus.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct receiver_t {
  /* configuration */
  qdm_endpoint_t ep;
  const char *address;
  char address_buf[256]; /* listen mode: the address the peer attached to */
  const char *expect_to; /* --validate: required message 'to' (NULL: don't check) */
  long long count;       /* 0 = unlimited */
  int window;
  double idle_s, timeout_s;
  const char *latency_out;
  bool validate;
  char container_id[128];

  /* proton objects */
  pn_proactor_t *proactor;
  pn_listener_t *listener;
  pn_link_t *link;       /* connect mode: our link */
  pn_connection_t *conn; /* connection to close when done (connect: ours; listen: last active) */
  pn_message_t *vmsg; /* --validate decode target, reused */
  int open_connections; /* CONNECTION_INIT seen, TRANSPORT_CLOSED not yet */

  /* receive buffer, grown on demand and reused */
  char *buf;
  size_t buf_cap;

  /* latency samples in ns, one per timestamped message */
  int64_t *lat;
  size_t lat_n, lat_cap;

  /* counters */
  long long received, presettled, unsettled, aborted;
  long long non_data_body, no_timestamp, invalid;
  int64_t t_start_ns, t_ready_ns, t_first_ns, t_last_ns, close_deadline_ns;
  double cpu_at_first; /* CPU seconds used before the first message (setup) */
  bool done, timed_out, idle_stop, interrupted, error;
} receiver_t;

static const char *prog = "qdm-recv";

static void usage(FILE *out) {
  fprintf(out,
          "usage: qdm-recv [options]\n"
          "  -c, --connect HOST:PORT   connect and attach a receiver (default 127.0.0.1:5672)\n"
          "  -l, --listen HOST:PORT    listen and accept incoming sending links (direct mode;\n"
          "                            port 0 picks a free port, printed in the JSON ready line)\n"
          "  -a, --address ADDR        source address to receive from (default bench)\n"
          "  -m, --messages N          stop after N messages (default 10000, 0 = no limit)\n"
          "  -w, --credit W            credit window, topped up at W/2 (default 1000)\n"
          "  -i, --idle SEC            stop if nothing arrives for SEC after the first message (0 = off)\n"
          "  -t, --timeout SEC         give up after SEC seconds (default 60, 0 = never)\n"
          "      --latency-out FILE    write each latency sample (int64 ns, native order) to FILE\n"
          "      --validate            fully decode each message and check body/'to' (slower)\n"
          "      --expect-to ADDR      with --validate: required 'to' (default: --address)\n"
          "      --no-sasl             connect without a SASL layer\n"
          "      --container ID        AMQP container id (default qdm-recv-PID)\n"
          "Prints {\"event\": \"ready\"} once the link is attached (or the listener is open), then\n"
          "one JSON result line.\n");
}

/* ---- results --------------------------------------------------------------------- */

static void write_latencies(receiver_t *r) {
  if (!r->latency_out) return;
  FILE *f = fopen(r->latency_out, "wb");
  if (!f || fwrite(r->lat, sizeof(int64_t), r->lat_n, f) != r->lat_n) {
    perror(r->latency_out);
    r->error = true;
  }
  if (f) fclose(f);
}

static void print_result(receiver_t *r) {
  /* Dump before sorting so the file keeps arrival order (useful for plots). */
  write_latencies(r);
  qdm_latency_t lat = qdm_latency_summary(r->lat, r->lat_n);
  double secs = r->received > 1 ? (double)(r->t_last_ns - r->t_first_ns) / 1e9 : 0.0;
  double cpu = r->t_first_ns ? qdm_cpu_seconds() - r->cpu_at_first : 0.0;
  printf("{\"role\": \"receiver\", \"address\": ");
  qdm_json_string(r->address);
  printf(", \"expected\": %lld, \"messages\": %lld, \"presettled\": %lld, \"unsettled\": %lld, "
         "\"aborted\": %lld, \"non_data_body\": %lld, \"no_timestamp\": %lld, \"invalid\": %lld, "
         "\"seconds\": %.6f, \"msgs_per_sec\": %.1f, "
         "\"p50_us\": %.1f, \"p90_us\": %.1f, \"p99_us\": %.1f, \"max_us\": %.1f, \"mean_us\": %.1f, "
         "\"t_ready_ns\": %lld, \"t_first_ns\": %lld, \"t_last_ns\": %lld, "
         "\"cpu_seconds\": %.3f, \"timeout\": %s, \"idle_stop\": %s, \"interrupted\": %s, \"error\": %s}\n",
         r->count, r->received, r->presettled, r->unsettled, r->aborted, r->non_data_body, r->no_timestamp,
         r->invalid, secs, secs > 0 ? (double)(r->received - 1) / secs : 0.0,
         lat.p50_us, lat.p90_us, lat.p99_us, lat.max_us, lat.mean_us,
         (long long)r->t_ready_ns, (long long)r->t_first_ns, (long long)r->t_last_ns,
         cpu, r->timed_out ? "true" : "false", r->idle_stop ? "true" : "false",
         r->interrupted ? "true" : "false", r->error ? "true" : "false");
  fflush(stdout);
}

static void finish(receiver_t *r, pn_connection_t *c) {
  if (r->done) return;
  r->done = true;
  print_result(r);
  if (!c) c = r->conn;
  /* Detach explicitly rather than only closing the connection: it is the
   * polite order, and routers must free the consumer promptly either way. */
  if (r->link && (pn_link_state(r->link) & PN_LOCAL_ACTIVE)) pn_link_close(r->link);
  if (c) pn_connection_close(c);
  if (r->listener) pn_listener_close(r->listener);
  r->close_deadline_ns = qdm_now_ns() + 5LL * 1000000000LL;
}

static void ready(receiver_t *r, int port) {
  if (r->t_ready_ns) return;
  r->t_ready_ns = qdm_now_ns();
  if (port >= 0) printf("{\"event\": \"ready\", \"port\": %d}\n", port);
  else printf("{\"event\": \"ready\"}\n");
  fflush(stdout);
}

/* ---- message handling ------------------------------------------------------------ */

static void validate(receiver_t *r, const char *data, size_t n) {
  const char *why = NULL;
  if (pn_message_decode(r->vmsg, data, n) != 0) {
    why = "decode error";
  } else {
    pn_data_t *body = pn_message_body(r->vmsg);
    pn_data_rewind(body);
    /* inferred + binary is how proton represents a single `data` section */
    bool is_data = pn_data_next(body) && pn_data_type(body) == PN_BINARY && pn_message_is_inferred(r->vmsg);
    const char *to = pn_message_get_address(r->vmsg);
    if (!is_data) why = "body is not a data section";
    else if (r->expect_to && (!to || strcmp(to, r->expect_to) != 0)) why = "'to' is not the expected address";
  }
  if (why) {
    if (r->invalid == 0) fprintf(stderr, "%s: invalid message: %s\n", prog, why);
    r->invalid++;
  }
}

static void on_delivery(receiver_t *r, pn_event_t *e) {
  pn_delivery_t *d = pn_event_delivery(e);
  pn_link_t *l = pn_delivery_link(d);
  if (pn_delivery_aborted(d)) {
    r->aborted++;
    pn_delivery_settle(d);
    pn_link_flow(l, 1); /* an aborted transfer still consumed credit */
    return;
  }
  /* Proton keeps buffering a multi-frame delivery; read it once complete. */
  if (!pn_delivery_readable(d) || pn_delivery_partial(d)) return;

  size_t n = pn_delivery_pending(d);
  if (n > r->buf_cap) {
    r->buf_cap = n * 2;
    r->buf = qdm_xrealloc(r->buf, r->buf_cap);
  }
  ssize_t got = pn_link_recv(l, r->buf, n);
  int64_t now = qdm_now_ns();
  if (got < 0) got = 0; /* PN_EOS (empty delivery) or an error: treat as no bytes */

  const unsigned char *body;
  size_t blen;
  int kind = qdm_find_data_body(r->buf, (size_t)got, &body, &blen);
  if (kind != 0) {
    r->non_data_body++;
  } else if (blen >= 8) {
    int64_t lat = now - qdm_get_le64(body);
    /* Guard against foreign senders: a plausible latency is 0..1 hour. */
    if (lat >= 0 && lat < 3600LL * 1000000000LL) {
      if (r->lat_n == r->lat_cap) {
        r->lat_cap = r->lat_cap ? r->lat_cap * 2 : 65536;
        r->lat = qdm_xrealloc(r->lat, r->lat_cap * sizeof(int64_t));
      }
      r->lat[r->lat_n++] = lat;
    } else {
      r->no_timestamp++;
    }
  } else {
    r->no_timestamp++;
  }
  if (r->validate) validate(r, r->buf, (size_t)got);

  if (pn_delivery_settled(d)) {
    r->presettled++;
  } else {
    pn_delivery_update(d, PN_ACCEPTED);
    r->unsettled++;
  }
  pn_delivery_settle(d); /* also advances the link past this delivery */

  if (!r->t_first_ns) {
    r->t_first_ns = now;
    r->cpu_at_first = qdm_cpu_seconds();
  }
  r->t_last_ns = now;
  r->received++;

  /* Top up in batches: one flow frame per window/2 messages, not per message. */
  int credit = pn_link_credit(l);
  if (credit <= r->window / 2) pn_link_flow(l, r->window - credit);

  if (r->count > 0 && r->received >= r->count) finish(r, pn_event_connection(e));
}

static void open_link(receiver_t *r, pn_connection_t *c) {
  pn_session_t *ssn = pn_session(c);
  pn_session_open(ssn);
  r->link = pn_receiver(ssn, "qdm-recv");
  pn_terminus_set_address(pn_link_source(r->link), r->address);
  pn_link_set_rcv_settle_mode(r->link, PN_RCV_FIRST);
  pn_link_open(r->link);
  pn_link_flow(r->link, r->window);
}

/* Everything is closed after completion.  We cannot wait for
 * PN_PROACTOR_INACTIVE: our own housekeeping timeout keeps the proactor active. */
static bool all_closed(receiver_t *r) { return r->done && r->open_connections == 0 && !r->listener; }

static bool handle(receiver_t *r, pn_event_t *e) {
  switch (pn_event_type(e)) {
    case PN_CONNECTION_INIT:
      pn_connection_set_container(pn_event_connection(e), r->container_id);
      r->open_connections++;
      r->conn = pn_event_connection(e);
      if (!r->ep.listen) {
        pn_connection_open(pn_event_connection(e));
        open_link(r, pn_event_connection(e));
      }
      break;

    case PN_LISTENER_OPEN:
      ready(r, qdm_listener_port(pn_event_listener(e)));
      break;

    case PN_LISTENER_CLOSE:
      if (qdm_report_condition(prog, "listener", pn_listener_condition(pn_event_listener(e)))) {
        r->error = true;
        finish(r, NULL);
      }
      r->listener = NULL;
      if (all_closed(r)) return false;
      break;

    case PN_LINK_REMOTE_OPEN: {
      pn_link_t *l = pn_event_link(e);
      if (pn_link_state(l) & PN_LOCAL_UNINIT) {
        /* Listen mode: a peer attached a sending link.  Mirror its termini
         * and settle mode (as a router would) and grant the credit window. */
        if (pn_link_is_sender(l)) {
          pn_condition_set_name(pn_link_condition(l), "amqp:not-allowed");
          pn_condition_set_description(pn_link_condition(l), "qdm-recv only accepts sending links");
          pn_link_close(l);
          break;
        }
        pn_terminus_copy(pn_link_source(l), pn_link_remote_source(l));
        pn_terminus_copy(pn_link_target(l), pn_link_remote_target(l));
        pn_link_set_snd_settle_mode(l, pn_link_remote_snd_settle_mode(l));
        pn_link_set_rcv_settle_mode(l, PN_RCV_FIRST);
        pn_link_open(l);
        pn_link_flow(l, r->window);
        r->conn = pn_event_connection(e);
        const char *target = pn_terminus_get_address(pn_link_remote_target(l));
        if (target) {
          snprintf(r->address_buf, sizeof(r->address_buf), "%s", target);
          r->address = r->address_buf;
        }
      } else if (l == r->link) {
        if (pn_terminus_get_type(pn_link_remote_source(l)) == PN_UNSPECIFIED) {
          /* Null source: the attach is being refused; the detach follows. */
          fprintf(stderr, "%s: peer refused link from '%s'\n", prog, r->address);
        } else {
          ready(r, -1);
        }
      }
      break;
    }

    case PN_DELIVERY:
      if (!r->done) on_delivery(r, e);
      break;

    case PN_LINK_REMOTE_CLOSE:
    case PN_LINK_REMOTE_DETACH: {
      pn_link_t *l = pn_event_link(e);
      bool cond = qdm_report_condition(prog, "link closed", pn_link_remote_condition(l));
      /* In listen mode a sender detaching early is the sender's problem (it
       * reports it); here only our own link going away is fatal. */
      if (l == r->link && !r->done) {
        if (!cond) fprintf(stderr, "%s: peer detached the link before completion\n", prog);
        r->error = true;
        finish(r, pn_event_connection(e));
      }
      pn_link_close(l);
      break;
    }

    case PN_TRANSPORT_CLOSED: {
      r->open_connections--;
      bool cond = qdm_report_condition(prog, "transport", pn_transport_condition(pn_event_transport(e)));
      if (pn_event_connection(e) == r->conn) r->conn = NULL;
      if (!r->ep.listen) {
        if (!r->done) {
          if (!cond) fprintf(stderr, "%s: connection closed before completion\n", prog);
          r->error = true;
          finish(r, NULL);
        }
        return false;
      }
      if (all_closed(r)) return false;
      break; /* listen mode: before completion other peers may still come */
    }

    case PN_PROACTOR_TIMEOUT: {
      int64_t now = qdm_now_ns();
      if (!r->done) {
        if (r->timeout_s > 0 && now - r->t_start_ns > (int64_t)(r->timeout_s * 1e9)) {
          fprintf(stderr, "%s: timeout after %.1fs (received %lld of %lld)\n", prog, r->timeout_s,
                  r->received, r->count);
          r->timed_out = true;
          finish(r, NULL);
        } else if (r->idle_s > 0 && r->received > 0 && now - r->t_last_ns > (int64_t)(r->idle_s * 1e9)) {
          r->idle_stop = true;
          finish(r, NULL);
        } else if (qdm_stop_requested) {
          r->interrupted = true;
          finish(r, NULL);
        }
      }
      if (all_closed(r) || (r->done && now > r->close_deadline_ns)) return false;
      pn_proactor_set_timeout(r->proactor, QDM_TICK_MS);
      break;
    }

    case PN_PROACTOR_INACTIVE:
      return false;

    default: {
      bool err = false;
      qdm_handle_connection_event(e, &r->ep, r->container_id, &err);
      if (err && !r->done && !r->ep.listen) {
        r->error = true;
        finish(r, pn_event_connection(e));
      }
      break;
    }
  }
  return true;
}

int main(int argc, char **argv) {
  receiver_t r;
  memset(&r, 0, sizeof(r));
  r.address = "bench";
  r.count = 10000;
  r.window = 1000;
  r.timeout_s = 60;
  r.ep.sasl = true;
  qdm_parse_hostport("127.0.0.1:5672", &r.ep);
  snprintf(r.container_id, sizeof(r.container_id), "qdm-recv-%d", (int)getpid());
  bool expect_to_set = false;

  enum { OPT_LAT = 256, OPT_VALIDATE, OPT_EXPECT_TO, OPT_NO_SASL, OPT_CONTAINER };
  static const struct option opts[] = {
      {"connect", required_argument, NULL, 'c'},      {"listen", required_argument, NULL, 'l'},
      {"address", required_argument, NULL, 'a'},      {"messages", required_argument, NULL, 'm'},
      {"credit", required_argument, NULL, 'w'},       {"idle", required_argument, NULL, 'i'},
      {"timeout", required_argument, NULL, 't'},      {"latency-out", required_argument, NULL, OPT_LAT},
      {"validate", no_argument, NULL, OPT_VALIDATE},  {"expect-to", required_argument, NULL, OPT_EXPECT_TO},
      {"no-sasl", no_argument, NULL, OPT_NO_SASL},    {"container", required_argument, NULL, OPT_CONTAINER},
      {"help", no_argument, NULL, 'h'},               {NULL, 0, NULL, 0}};
  int opt;
  while ((opt = getopt_long(argc, argv, "c:l:a:m:w:i:t:h", opts, NULL)) != -1) {
    switch (opt) {
      case 'c':
      case 'l':
        if (qdm_parse_hostport(optarg, &r.ep) != 0) {
          fprintf(stderr, "%s: bad HOST:PORT '%s'\n", prog, optarg);
          return QDM_EXIT_ERROR;
        }
        r.ep.listen = (opt == 'l');
        break;
      case 'a': r.address = optarg; break;
      case 'm': r.count = qdm_parse_count("--messages", optarg, 0); break;
      case 'w': r.window = (int)qdm_parse_count("--credit", optarg, 1); break;
      case 'i': r.idle_s = qdm_parse_seconds("--idle", optarg); break;
      case 't': r.timeout_s = qdm_parse_seconds("--timeout", optarg); break;
      case OPT_LAT: r.latency_out = optarg; break;
      case OPT_VALIDATE: r.validate = true; break;
      case OPT_EXPECT_TO: r.expect_to = optarg; expect_to_set = true; break;
      case OPT_NO_SASL: r.ep.sasl = false; break;
      case OPT_CONTAINER: snprintf(r.container_id, sizeof(r.container_id), "%s", optarg); break;
      case 'h': usage(stdout); return QDM_EXIT_OK;
      default: usage(stderr); return QDM_EXIT_ERROR;
    }
  }
  if (optind != argc) {
    usage(stderr);
    return QDM_EXIT_ERROR;
  }
  if (r.validate) {
    r.vmsg = pn_message();
    if (!expect_to_set) r.expect_to = r.address;
  }
  if (r.count > 0) {
    r.lat_cap = (size_t)r.count;
    r.lat = qdm_xrealloc(NULL, r.lat_cap * sizeof(int64_t));
  }

  qdm_install_signal_handlers();
  r.t_start_ns = qdm_now_ns();
  r.proactor = pn_proactor();
  r.listener = qdm_start(r.proactor, &r.ep);
  pn_proactor_set_timeout(r.proactor, QDM_TICK_MS);

  bool running = true;
  while (running) {
    pn_event_batch_t *batch = pn_proactor_wait(r.proactor);
    pn_event_t *e;
    while (running && (e = pn_event_batch_next(batch))) running = handle(&r, e);
    pn_proactor_done(r.proactor, batch);
  }
  if (!r.done) finish(&r, NULL);
  pn_proactor_free(r.proactor);
  if (r.vmsg) pn_message_free(r.vmsg);
  free(r.buf);
  free(r.lat);

  if (r.error) return QDM_EXIT_ERROR;
  if (r.timed_out) return QDM_EXIT_TIMEOUT;
  if (r.count > 0 && r.received < r.count) return QDM_EXIT_SHORT;
  if (r.invalid > 0 || r.non_data_body > 0) return QDM_EXIT_ERROR;
  return QDM_EXIT_OK;
}
