/*
 * qdm-send: AMQP 1.0 throughput sender for benchmarking qdmesh.
 *
 * Opens one sender link to ADDRESS (connecting to HOST:PORT, or listening
 * and waiting for a peer to attach a receiving link), sends N messages
 * whose body is one AMQP `data` section of S bytes, and prints a one-line
 * JSON result on stdout.
 *
 * - The first 8 body bytes carry the CLOCK_MONOTONIC send time in ns
 *   (little-endian uint64), from which qdm-recv computes one-way latency.
 * - Messages are sent whenever credit allows ("keep the pipeline full");
 *   a peer that grants credit slowly just makes us wait for PN_LINK_FLOW.
 * - With --rate R, message i is due at t0 + i/R (t0: first credit) and
 *   carries that due time, not the time it left: a message held back (no
 *   credit, a busy peer) shows its wait as latency, as a client producing at
 *   a fixed rate would see it (no coordinated omission). A pacing thread
 *   wakes the connection every PACE_NS, so a message leaves at most that
 *   long after it is due (the proactor's own timeouts count milliseconds).
 * - In unsettled mode every delivery's outcome is counted; the run is
 *   complete when all N are settled by the peer.
 *
 * SIGINT/SIGTERM stop the run early; the partial result is still printed.
 *
 * Exit codes: 0 done, 1 error, 2 timeout or interrupted (see common.h).
 */
#include "common.h"

#include <proton/condition.h>
#include <proton/delivery.h>
#include <proton/disposition.h>
#include <proton/link.h>
#include <proton/listener.h>
#include <proton/message.h>
#include <proton/session.h>
#include <proton/terminus.h>

#include <getopt.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct sender_t {
  /* configuration */
  qdm_endpoint_t ep;
  const char *address;
  long long count;
  size_t size;
  bool presettled;
  double timeout_s;
  int burst;
  double rate;        /* messages per second; 0 = as fast as credit allows */
  int64_t t_rate0_ns; /* when paced sending began (first credit) */
  pthread_t pacer;
  pthread_mutex_t pacer_lock; /* guards pacer_connection */
  pn_connection_t *pacer_connection; /* what the pacer wakes; NULL once the run is over */
  volatile bool pacer_stop;
  char container_id[128];

  /* proton objects */
  pn_proactor_t *proactor;
  pn_listener_t *listener;
  pn_connection_t *connection;
  pn_link_t *link;
  int open_connections; /* CONNECTION_INIT seen, TRANSPORT_CLOSED not yet */

  /* the pre-encoded message; only the timestamp is patched per send */
  char *msg;
  size_t msg_len;
  long ts_off; /* offset of the timestamp in msg, or -1 if size < 8 */

  /* progress */
  long long sent, settled;
  long long accepted, rejected, released, modified, other;
  int64_t t_start_ns;  /* process start, for --timeout */
  int64_t t_credit_ns; /* first credit seen */
  int64_t t_first_ns;  /* first message handed to proton */
  int64_t t_last_ns;   /* last message sent (pre-settled) or settled */
  int64_t close_deadline_ns;
  double cpu_at_first; /* CPU seconds used before the first send (setup) */
  bool done, timed_out, interrupted, error;
} sender_t;

static const char *prog = "qdm-send";

static void usage(FILE *out) {
  fprintf(out,
          "usage: qdm-send [options]\n"
          "  -c, --connect HOST:PORT   connect to HOST:PORT (default 127.0.0.1:5672)\n"
          "  -l, --listen HOST:PORT    listen instead; the peer attaches a receiving link\n"
          "                            (port 0 picks a free port, printed as a JSON ready line)\n"
          "  -a, --address ADDR        target address, also the message 'to' (default bench)\n"
          "  -m, --messages N          messages to send (default 10000)\n"
          "  -s, --size S              body size in bytes (default 100; >= 8 carries a timestamp)\n"
          "  -p, --presettled          send pre-settled (default: unsettled, count outcomes)\n"
          "  -t, --timeout SEC         give up after SEC seconds (default 60, 0 = never)\n"
          "      --burst N             max messages per event batch before yielding to I/O (default 1000)\n"
          "      --rate R              send at R messages per second, open loop (default 0: as fast as credit allows)\n"
          "      --no-sasl             connect without a SASL layer\n"
          "      --container ID        AMQP container id (default qdm-send-PID)\n");
}

/* Build the message once.  The body is the last section (no footer), so
 * its bytes are the last `size` bytes of the encoding; we verify that
 * rather than trust it, because a wrong offset would silently corrupt
 * every latency figure. */
static void encode_message(sender_t *s) {
  pn_message_t *m = pn_message();
  char *body = qdm_xrealloc(NULL, s->size ? s->size : 1);
  for (size_t i = 0; i < s->size; i++) body[i] = (char)('a' + i % 26);
  pn_message_set_address(m, s->address);
  pn_message_set_durable(m, false);
  /* A binary body with inferred=true encodes as a `data` section, not an
   * `amqp-value` section; routers and brokers treat the two differently. */
  pn_message_set_inferred(m, true);
  pn_data_put_binary(pn_message_body(m), pn_bytes(s->size, body));
  pn_rwbytes_t buf = {0, NULL};
  ssize_t n = pn_message_encode2(m, &buf);
  if (n < 0) {
    fprintf(stderr, "%s: encode error: %s\n", prog, pn_error_text(pn_message_error(m)));
    exit(QDM_EXIT_ERROR);
  }
  s->msg = buf.start;
  s->msg_len = (size_t)n;
  if (s->size > s->msg_len || memcmp(s->msg + s->msg_len - s->size, body, s->size) != 0) {
    fprintf(stderr, "%s: internal error: body is not at the end of the encoded message\n", prog);
    exit(QDM_EXIT_ERROR);
  }
  s->ts_off = s->size >= 8 ? (long)(s->msg_len - s->size) : -1;
  free(body);
  pn_message_free(m);
}

static void pacer_forget_connection(sender_t *s);

static void put_le64(char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (char)(v >> (8 * i));
}

static void print_result(sender_t *s) {
  int64_t end = s->t_last_ns ? s->t_last_ns : qdm_now_ns();
  long long completed = s->presettled ? s->sent : s->settled;
  double secs = s->t_first_ns ? (double)(end - s->t_first_ns) / 1e9 : 0.0;
  double cpu = s->t_first_ns ? qdm_cpu_seconds() - s->cpu_at_first : 0.0;
  printf("{\"role\": \"sender\", \"address\": ");
  qdm_json_string(s->address);
  printf(", \"mode\": \"%s\", \"size\": %zu, \"encoded_size\": %zu, \"expected\": %lld, "
         "\"messages\": %lld, \"sent\": %lld, \"settled\": %lld, "
         "\"accepted\": %lld, \"rejected\": %lld, \"released\": %lld, \"modified\": %lld, \"other\": %lld, "
         "\"seconds\": %.6f, \"msgs_per_sec\": %.1f, "
         "\"t_credit_ns\": %lld, \"t_first_ns\": %lld, \"t_last_ns\": %lld, "
         "\"cpu_seconds\": %.3f, \"timeout\": %s, \"interrupted\": %s, \"error\": %s}\n",
         s->presettled ? "presettled" : "unsettled", s->size, s->msg_len, s->count, completed, s->sent,
         s->settled, s->accepted, s->rejected, s->released, s->modified, s->other, secs,
         secs > 0 ? (double)completed / secs : 0.0, (long long)s->t_credit_ns, (long long)s->t_first_ns,
         (long long)s->t_last_ns, cpu, s->timed_out ? "true" : "false",
         s->interrupted ? "true" : "false", s->error ? "true" : "false");
  fflush(stdout);
}

/* Report, then close gracefully.  The result is printed before the close
 * handshake so a peer that never answers the close cannot lose it; we
 * still wait (bounded) for the handshake because pre-settled data still
 * in proton's buffers is only flushed while the connection lives. */
static void finish(sender_t *s) {
  if (s->done) return;
  s->done = true;
  if (!s->t_last_ns) s->t_last_ns = qdm_now_ns();
  pacer_forget_connection(s);
  print_result(s);
  if (s->link && (pn_link_state(s->link) & PN_LOCAL_ACTIVE)) pn_link_close(s->link);
  if (s->connection) pn_connection_close(s->connection);
  if (s->listener) pn_listener_close(s->listener);
  s->close_deadline_ns = qdm_now_ns() + 10LL * 1000000000LL;
}

/* With --rate: when message number `i` is due. */
static int64_t due_ns(const sender_t *s, long long i) {
  return s->t_rate0_ns + (int64_t)((double)i * 1e9 / s->rate);
}

/* With --rate: how many messages are due by now (at most --messages). */
static long long due_count(sender_t *s) {
  if (s->rate <= 0) return s->count;
  if (!s->t_rate0_ns) return 0;
  long long due = (long long)((double)(qdm_now_ns() - s->t_rate0_ns) * s->rate / 1e9) + 1;
  return due < s->count ? due : s->count;
}

#define PACE_NS 100000 /* 100 µs */

/* With --rate: wake the connection every PACE_NS; its PN_CONNECTION_WAKE sends what fell due.
 * pn_connection_wake is the one proton call that is safe from another thread. */
static void *pace(void *arg) {
  sender_t *s = arg;
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  while (!s->pacer_stop) {
    next.tv_nsec += PACE_NS;
    if (next.tv_nsec >= 1000000000L) {
      next.tv_nsec -= 1000000000L;
      next.tv_sec++;
    }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    pthread_mutex_lock(&s->pacer_lock);
    if (s->pacer_connection) pn_connection_wake(s->pacer_connection);
    pthread_mutex_unlock(&s->pacer_lock);
  }
  return NULL;
}

static void pacer_forget_connection(sender_t *s) {
  if (s->rate <= 0) return;
  pthread_mutex_lock(&s->pacer_lock);
  s->pacer_connection = NULL;
  pthread_mutex_unlock(&s->pacer_lock);
}

static void send_available(sender_t *s) {
  pn_link_t *l = s->link;
  if (s->done || !l || !(pn_link_state(l) & PN_LOCAL_ACTIVE)) return;
  if (!s->t_credit_ns && pn_link_credit(l) > 0) s->t_credit_ns = qdm_now_ns();
  if (s->rate > 0 && !s->t_rate0_ns && s->t_credit_ns) s->t_rate0_ns = s->t_credit_ns;
  long long limit = due_count(s);
  int n = 0;
  while (s->sent < limit && pn_link_credit(l) > 0 && n < s->burst) {
    uint64_t tag = (uint64_t)s->sent;
    pn_delivery_t *d = pn_delivery(l, pn_dtag((const char *)&tag, sizeof(tag)));
    int64_t now = qdm_now_ns();
    int64_t stamp = s->rate > 0 ? due_ns(s, s->sent) : now;
    if (s->ts_off >= 0) put_le64(s->msg + s->ts_off, (uint64_t)stamp);
    if (!s->t_first_ns) {
      s->t_first_ns = now;
      s->cpu_at_first = qdm_cpu_seconds();
    }
    pn_link_send(l, s->msg, s->msg_len);
    pn_link_advance(l);
    if (s->presettled) pn_delivery_settle(d); /* local settle before sending = pre-settled */
    s->sent++;
    n++;
  }
  if (s->sent < limit && pn_link_credit(l) > 0) {
    /* Still credit but we stopped at the burst limit: let the proactor write
     * what we have, then continue on PN_CONNECTION_WAKE.  Without this a peer
     * granting huge credit would make us buffer everything before any I/O. */
    pn_connection_wake(s->connection);
  }
  if (s->sent == s->count) {
    if (pn_link_get_drain(l)) pn_link_drained(l);
    if (s->presettled) finish(s);
  }
}

static void on_outcome(sender_t *s, pn_delivery_t *d) {
  uint64_t state = pn_delivery_remote_state(d);
  switch (state) {
    case PN_ACCEPTED: s->accepted++; break;
    case PN_REJECTED: s->rejected++; break;
    case PN_RELEASED: s->released++; break;
    case PN_MODIFIED: s->modified++; break;
    default:
      /* Non-terminal state (e.g. PN_RECEIVED) and not settled: wait for more. */
      if (!pn_delivery_settled(d)) return;
      s->other++;
      break;
  }
  pn_delivery_settle(d);
  if (++s->settled == s->count) {
    s->t_last_ns = qdm_now_ns();
    finish(s);
  }
}

static void open_link(sender_t *s, pn_connection_t *c) {
  pn_session_t *ssn = pn_session(c);
  pn_session_open(ssn);
  s->link = pn_sender(ssn, "qdm-send");
  pn_terminus_set_address(pn_link_target(s->link), s->address);
  pn_link_set_snd_settle_mode(s->link, s->presettled ? PN_SND_SETTLED : PN_SND_UNSETTLED);
  pn_link_set_rcv_settle_mode(s->link, PN_RCV_FIRST);
  pn_link_open(s->link);
}

/* Everything is closed after completion.  We cannot wait for
 * PN_PROACTOR_INACTIVE: our own housekeeping timeout keeps the proactor active. */
static bool all_closed(sender_t *s) { return s->done && s->open_connections == 0 && !s->listener; }

/* Returns false when the event loop should stop. */
static bool handle(sender_t *s, pn_event_t *e) {
  switch (pn_event_type(e)) {
    case PN_CONNECTION_INIT:
      pn_connection_set_container(pn_event_connection(e), s->container_id);
      s->open_connections++;
      if (!s->ep.listen) {
        s->connection = pn_event_connection(e);
        pn_connection_open(s->connection);
        open_link(s, s->connection);
      }
      break;

    case PN_LISTENER_OPEN:
      printf("{\"event\": \"ready\", \"port\": %d}\n", qdm_listener_port(pn_event_listener(e)));
      fflush(stdout);
      break;

    case PN_LISTENER_CLOSE:
      if (qdm_report_condition(prog, "listener", pn_listener_condition(pn_event_listener(e)))) {
        s->error = true;
        finish(s);
      }
      s->listener = NULL;
      if (all_closed(s)) return false;
      break;

    case PN_LINK_REMOTE_OPEN: {
      pn_link_t *l = pn_event_link(e);
      if (pn_link_state(l) & PN_LOCAL_UNINIT) {
        /* Listen mode: the peer attached a receiving link to us. */
        if (!pn_link_is_sender(l) || s->link) {
          pn_condition_set_name(pn_link_condition(l), "amqp:not-allowed");
          pn_condition_set_description(pn_link_condition(l), "qdm-send serves one receiving link");
          pn_link_close(l);
          break;
        }
        s->link = l;
        s->connection = pn_event_connection(e);
        pn_terminus_copy(pn_link_source(l), pn_link_remote_source(l));
        pn_terminus_copy(pn_link_target(l), pn_link_remote_target(l));
        pn_link_set_snd_settle_mode(l, s->presettled ? PN_SND_SETTLED : PN_SND_UNSETTLED);
        pn_link_open(l);
      } else if (l == s->link && pn_terminus_get_type(pn_link_remote_target(l)) == PN_UNSPECIFIED) {
        /* A null remote target means the attach was refused; a detach follows. */
        fprintf(stderr, "%s: peer refused link to '%s'\n", prog, s->address);
      }
      if (s->rate > 0 && l == s->link && !s->done) {
        pthread_mutex_lock(&s->pacer_lock);
        s->pacer_connection = s->connection;
        pthread_mutex_unlock(&s->pacer_lock);
      }
      send_available(s);
      break;
    }

    case PN_LINK_FLOW:
    case PN_CONNECTION_WAKE:
      send_available(s);
      break;

    case PN_DELIVERY:
      if (!s->presettled) on_outcome(s, pn_event_delivery(e));
      break;

    case PN_LINK_REMOTE_CLOSE:
    case PN_LINK_REMOTE_DETACH: {
      pn_link_t *l = pn_event_link(e);
      bool cond = qdm_report_condition(prog, "link closed", pn_link_remote_condition(l));
      if (l == s->link && !s->done) {
        if (!cond) fprintf(stderr, "%s: peer detached the link before completion\n", prog);
        s->error = true;
        finish(s);
      }
      pn_link_close(l);
      break;
    }

    case PN_TRANSPORT_CLOSED: {
      s->open_connections--;
      pn_transport_t *t = pn_event_transport(e);
      bool cond = qdm_report_condition(prog, "transport", pn_transport_condition(t));
      pn_connection_t *c = pn_event_connection(e);
      if (!s->done && (!s->ep.listen || c == s->connection)) {
        if (!cond) fprintf(stderr, "%s: connection closed before completion\n", prog);
        s->error = true;
        finish(s);
      }
      if (c == s->connection) {
        pacer_forget_connection(s);
        s->connection = NULL;
      }
      /* Connect mode has one connection: once it is gone we are done. */
      if (!s->ep.listen || all_closed(s)) return false;
      break;
    }

    case PN_PROACTOR_TIMEOUT: {
      int64_t now = qdm_now_ns();
      if (!s->done && s->timeout_s > 0 && now - s->t_start_ns > (int64_t)(s->timeout_s * 1e9)) {
        fprintf(stderr, "%s: timeout after %.1fs (sent %lld, settled %lld of %lld)\n", prog, s->timeout_s,
                s->sent, s->settled, s->count);
        s->timed_out = true;
        finish(s);
      } else if (!s->done && qdm_stop_requested) {
        s->interrupted = true;
        finish(s);
      }
      /* The deadline covers a peer that never answers our close. */
      if (all_closed(s) || (s->done && now > s->close_deadline_ns)) return false;
      pn_proactor_set_timeout(s->proactor, QDM_TICK_MS);
      break;
    }

    case PN_PROACTOR_INACTIVE:
      return false;

    default: {
      bool err = false;
      qdm_handle_connection_event(e, &s->ep, s->container_id, &err);
      if (err && !s->done) {
        s->error = true;
        finish(s);
      }
      break;
    }
  }
  return true;
}

int main(int argc, char **argv) {
  sender_t s;
  memset(&s, 0, sizeof(s));
  s.address = "bench";
  s.count = 10000;
  s.size = 100;
  s.timeout_s = 60;
  s.burst = 1000;
  s.ep.sasl = true;
  qdm_parse_hostport("127.0.0.1:5672", &s.ep);
  snprintf(s.container_id, sizeof(s.container_id), "qdm-send-%d", (int)getpid());

  enum { OPT_BURST = 256, OPT_NO_SASL, OPT_CONTAINER, OPT_RATE };
  static const struct option opts[] = {
      {"connect", required_argument, NULL, 'c'},   {"listen", required_argument, NULL, 'l'},
      {"address", required_argument, NULL, 'a'},   {"messages", required_argument, NULL, 'm'},
      {"size", required_argument, NULL, 's'},      {"presettled", no_argument, NULL, 'p'},
      {"timeout", required_argument, NULL, 't'},   {"burst", required_argument, NULL, OPT_BURST},
      {"no-sasl", no_argument, NULL, OPT_NO_SASL}, {"container", required_argument, NULL, OPT_CONTAINER},
      {"rate", required_argument, NULL, OPT_RATE},
      {"help", no_argument, NULL, 'h'},            {NULL, 0, NULL, 0}};
  int opt;
  while ((opt = getopt_long(argc, argv, "c:l:a:m:s:pt:h", opts, NULL)) != -1) {
    switch (opt) {
      case 'c':
      case 'l':
        if (qdm_parse_hostport(optarg, &s.ep) != 0) {
          fprintf(stderr, "%s: bad HOST:PORT '%s'\n", prog, optarg);
          return QDM_EXIT_ERROR;
        }
        s.ep.listen = (opt == 'l');
        break;
      case 'a': s.address = optarg; break;
      case 'm': s.count = qdm_parse_count("--messages", optarg, 1); break;
      case 's': s.size = (size_t)qdm_parse_count("--size", optarg, 0); break;
      case 'p': s.presettled = true; break;
      case 't': s.timeout_s = qdm_parse_seconds("--timeout", optarg); break;
      case OPT_BURST: s.burst = (int)qdm_parse_count("--burst", optarg, 1); break;
      case OPT_NO_SASL: s.ep.sasl = false; break;
      case OPT_RATE: s.rate = (double)qdm_parse_count("--rate", optarg, 0); break;
      case OPT_CONTAINER: snprintf(s.container_id, sizeof(s.container_id), "%s", optarg); break;
      case 'h': usage(stdout); return QDM_EXIT_OK;
      default: usage(stderr); return QDM_EXIT_ERROR;
    }
  }
  if (optind != argc) {
    usage(stderr);
    return QDM_EXIT_ERROR;
  }

  encode_message(&s);
  qdm_install_signal_handlers();
  s.t_start_ns = qdm_now_ns();
  s.proactor = pn_proactor();
  s.listener = qdm_start(s.proactor, &s.ep);
  pn_proactor_set_timeout(s.proactor, QDM_TICK_MS);
  if (s.rate > 0) {
    pthread_mutex_init(&s.pacer_lock, NULL);
    if (pthread_create(&s.pacer, NULL, pace, &s) != 0) {
      fprintf(stderr, "%s: cannot start the pacing thread\n", prog);
      return QDM_EXIT_ERROR;
    }
  }

  bool running = true;
  while (running) {
    pn_event_batch_t *batch = pn_proactor_wait(s.proactor);
    pn_event_t *e;
    while (running && (e = pn_event_batch_next(batch))) running = handle(&s, e);
    pn_proactor_done(s.proactor, batch);
  }
  if (!s.done) finish(&s); /* e.g. proactor went inactive unexpectedly */
  if (s.rate > 0) {
    s.pacer_stop = true;
    pthread_join(s.pacer, NULL);
  }
  pn_proactor_free(s.proactor);
  free(s.msg);

  if (s.error) return QDM_EXIT_ERROR;
  if (s.timed_out || s.interrupted) return QDM_EXIT_TIMEOUT;
  return QDM_EXIT_OK;
}
