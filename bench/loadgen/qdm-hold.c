/*
 * qdm-hold: opens many idle AMQP connections and links to a router and holds them.
 *
 * What bench/memory.py and tests/router/test_scale.py measure a router with: C
 * connections, each with L receiving links (one session), attached to one address or
 * each to its own (--distinct). Connections are opened at most --pace at a time (not
 * yet answered by the peer's open), so a listener's accept queue is not flooded.
 *
 * Prints {"event": "ready", ...} once every connection is open and every link
 * attached, then holds them (proton answers the router's heartbeats) until
 * SIGINT/SIGTERM or --hold seconds, closes them and prints one JSON result line.
 *
 * Exit codes: 0 held and closed, 1 error (a refused link, a connection closed by the
 * peer, bad usage), 2 --timeout before ready.
 */
#include "common.h"

#include <proton/condition.h>
#include <proton/link.h>
#include <proton/session.h>
#include <proton/terminus.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct holder_t {
  qdm_endpoint_t ep;
  const char *address;
  bool distinct; /* each link its own address: ADDRESS/<connection>.<link> */
  bool senders;  /* sending links instead of receiving ones */
  long connections, links_per_connection, pace, credit;
  double timeout_s, hold_s;
  char container_id[128];

  pn_proactor_t *proactor;
  long started, inited, opened, attached, closed_transports;
  pn_connection_t **conns; /* by index, in the order the proactor made them */
  long links_wanted;
  int64_t t_start_ns, t_ready_ns, close_deadline_ns;
  bool ready, closing, error, timed_out;
} holder_t;

static const char *prog = "qdm-hold";

static void usage(FILE *out) {
  fprintf(out,
          "usage: qdm-hold [options]\n"
          "  -c, --connect HOST:PORT   the router (default 127.0.0.1:5672)\n"
          "  -n, --connections C       connections to open (default 1)\n"
          "  -L, --links L             links per connection, in one session (default 0)\n"
          "  -a, --address ADDR        the links' address (default hold)\n"
          "  -d, --distinct            each link its own address, ADDR/<connection>.<link>\n"
          "  -s, --senders             sending links (default receiving links)\n"
          "  -w, --credit W            credit each receiving link grants (default 0)\n"
          "  -p, --pace P              connections opening at once, at most (default 200)\n"
          "  -t, --timeout SEC         give up if not ready after SEC (default 120, 0 = never)\n"
          "      --hold SEC            close everything after SEC once ready (default 0 = until signalled)\n"
          "      --no-sasl             connect without a SASL layer\n"
          "      --container ID        container id prefix (default qdm-hold-PID)\n"
          "Prints {\"event\": \"ready\", ...} once all is open and attached, then one JSON result line\n"
          "after SIGINT/SIGTERM (or --hold).\n");
}

static double since_start(holder_t *h) { return (double)(qdm_now_ns() - h->t_start_ns) / 1e9; }

static void print_result(holder_t *h) {
  printf("{\"role\": \"holder\", \"connections\": %ld, \"links\": %ld, \"opened\": %ld, \"attached\": %ld, "
         "\"ready_seconds\": %.3f, \"cpu_seconds\": %.3f, \"timeout\": %s, \"error\": %s}\n",
         h->connections, h->links_wanted, h->opened, h->attached,
         h->t_ready_ns ? (double)(h->t_ready_ns - h->t_start_ns) / 1e9 : -1.0, qdm_cpu_seconds(),
         h->timed_out ? "true" : "false", h->error ? "true" : "false");
  fflush(stdout);
}

static void start_connections(holder_t *h) {
  char addr[PN_MAX_ADDR];
  pn_proactor_addr(addr, sizeof(addr), h->ep.host, h->ep.port);
  while (!h->closing && h->started < h->connections && h->started - h->opened < h->pace) {
    pn_proactor_connect2(h->proactor, NULL, NULL, addr);
    h->started++;
  }
}

static void check_ready(holder_t *h) {
  if (h->ready || h->opened < h->connections || h->attached < h->links_wanted) return;
  h->ready = true;
  h->t_ready_ns = qdm_now_ns();
  printf("{\"event\": \"ready\", \"connections\": %ld, \"links\": %ld, \"seconds\": %.3f}\n", h->opened,
         h->attached, (double)(h->t_ready_ns - h->t_start_ns) / 1e9);
  fflush(stdout);
}

static void close_all(holder_t *h) {
  if (h->closing) return;
  h->closing = true;
  /* A connection is closed in its own event batch: each gets a wake and closes on it. */
  for (long i = 0; i < h->inited; i++)
    if (h->conns[i]) pn_connection_wake(h->conns[i]);
  h->close_deadline_ns = qdm_now_ns() + 10LL * 1000000000LL;
}

static void open_links(holder_t *h, pn_connection_t *c, long index) {
  if (h->links_per_connection == 0) return;
  pn_session_t *ssn = pn_session(c);
  /* Many links' attaches in one session: an unlimited incoming window keeps any
   * message that does arrive from stalling the session. */
  pn_session_set_incoming_capacity(ssn, 0);
  pn_session_open(ssn);
  char name[64], address[512];
  for (long i = 0; i < h->links_per_connection; i++) {
    snprintf(name, sizeof(name), "hold-%ld.%ld", index, i);
    pn_link_t *l = h->senders ? pn_sender(ssn, name) : pn_receiver(ssn, name);
    const char *where = h->address;
    if (h->distinct) {
      snprintf(address, sizeof(address), "%s/%ld.%ld", h->address, index, i);
      where = address;
    }
    pn_terminus_set_address(h->senders ? pn_link_target(l) : pn_link_source(l), where);
    pn_link_open(l);
    if (!h->senders && h->credit > 0) pn_link_flow(l, (int)h->credit);
  }
}

static bool handle(holder_t *h, pn_event_t *e) {
  switch (pn_event_type(e)) {
    case PN_CONNECTION_INIT: {
      pn_connection_t *c = pn_event_connection(e);
      long index = h->inited++;
      char id[160];
      snprintf(id, sizeof(id), "%s.%ld", h->container_id, index);
      pn_connection_set_container(c, id);
      h->conns[index] = c;
      pn_connection_set_context(c, (void *)(intptr_t)(index + 1));
      pn_connection_open(c);
      open_links(h, c, index);
      break;
    }

    case PN_CONNECTION_REMOTE_OPEN:
      h->opened++;
      start_connections(h);
      check_ready(h);
      break;

    case PN_CONNECTION_WAKE:
      pn_connection_close(pn_event_connection(e));
      break;

    case PN_LINK_REMOTE_OPEN: {
      pn_link_t *l = pn_event_link(e);
      pn_terminus_t *far = h->senders ? pn_link_remote_target(l) : pn_link_remote_source(l);
      if (pn_terminus_get_type(far) == PN_UNSPECIFIED) {
        fprintf(stderr, "%s: the router refused link %s\n", prog, pn_link_name(l));
        h->error = true;
        close_all(h);
        break;
      }
      h->attached++;
      check_ready(h);
      break;
    }

    case PN_LINK_REMOTE_CLOSE:
    case PN_LINK_REMOTE_DETACH: {
      pn_link_t *l = pn_event_link(e);
      if (!h->closing) {
        if (!qdm_report_condition(prog, "link closed", pn_link_remote_condition(l)))
          fprintf(stderr, "%s: the router detached link %s\n", prog, pn_link_name(l));
        h->error = true;
        close_all(h);
      }
      pn_link_close(l);
      break;
    }

    case PN_CONNECTION_REMOTE_CLOSE:
      if (!h->closing) {
        if (!qdm_report_condition(prog, "connection closed", pn_connection_remote_condition(pn_event_connection(e))))
          fprintf(stderr, "%s: the router closed a connection\n", prog);
        h->error = true;
        close_all(h);
      }
      pn_connection_close(pn_event_connection(e));
      break;

    case PN_TRANSPORT_CLOSED: {
      pn_connection_t *c = pn_event_connection(e);
      long index = (long)(intptr_t)pn_connection_get_context(c) - 1;
      if (index >= 0 && index < h->inited) h->conns[index] = NULL;
      h->closed_transports++;
      if (!h->closing) {
        if (!qdm_report_condition(prog, "transport", pn_transport_condition(pn_event_transport(e))))
          fprintf(stderr, "%s: a connection dropped\n", prog);
        h->error = true;
        close_all(h);
      }
      if (h->closing && h->closed_transports >= h->started) return false;
      break;
    }

    case PN_PROACTOR_TIMEOUT: {
      int64_t now = qdm_now_ns();
      if (!h->closing) {
        if (!h->ready && h->timeout_s > 0 && since_start(h) > h->timeout_s) {
          fprintf(stderr, "%s: not ready after %.1fs: %ld of %ld connections open, %ld of %ld links attached\n",
                  prog, h->timeout_s, h->opened, h->connections, h->attached, h->links_wanted);
          h->timed_out = true;
          close_all(h);
        } else if (qdm_stop_requested) {
          close_all(h);
        } else if (h->ready && h->hold_s > 0 && (double)(now - h->t_ready_ns) / 1e9 > h->hold_s) {
          close_all(h);
        }
      }
      if (h->closing && (h->closed_transports >= h->started || now > h->close_deadline_ns)) return false;
      pn_proactor_set_timeout(h->proactor, QDM_TICK_MS);
      break;
    }

    case PN_PROACTOR_INACTIVE:
      return false;

    default:
      qdm_handle_connection_event(e, &h->ep, h->container_id, &h->error);
      break;
  }
  return true;
}

int main(int argc, char **argv) {
  holder_t h;
  memset(&h, 0, sizeof(h));
  h.address = "hold";
  h.connections = 1;
  h.pace = 200;
  h.timeout_s = 120;
  h.ep.sasl = true;
  qdm_parse_hostport("127.0.0.1:5672", &h.ep);
  snprintf(h.container_id, sizeof(h.container_id), "qdm-hold-%d", (int)getpid());

  enum { OPT_NO_SASL = 256, OPT_CONTAINER, OPT_HOLD };
  static const struct option opts[] = {
      {"connect", required_argument, NULL, 'c'},   {"connections", required_argument, NULL, 'n'},
      {"links", required_argument, NULL, 'L'},     {"address", required_argument, NULL, 'a'},
      {"distinct", no_argument, NULL, 'd'},        {"senders", no_argument, NULL, 's'},
      {"credit", required_argument, NULL, 'w'},    {"pace", required_argument, NULL, 'p'},
      {"timeout", required_argument, NULL, 't'},   {"hold", required_argument, NULL, OPT_HOLD},
      {"no-sasl", no_argument, NULL, OPT_NO_SASL}, {"container", required_argument, NULL, OPT_CONTAINER},
      {"help", no_argument, NULL, 'h'},            {NULL, 0, NULL, 0}};
  int opt;
  while ((opt = getopt_long(argc, argv, "c:n:L:a:dsw:p:t:h", opts, NULL)) != -1) {
    switch (opt) {
      case 'c':
        if (qdm_parse_hostport(optarg, &h.ep) != 0) {
          fprintf(stderr, "%s: bad HOST:PORT '%s'\n", prog, optarg);
          return QDM_EXIT_ERROR;
        }
        break;
      case 'n': h.connections = (long)qdm_parse_count("--connections", optarg, 1); break;
      case 'L': h.links_per_connection = (long)qdm_parse_count("--links", optarg, 0); break;
      case 'a': h.address = optarg; break;
      case 'd': h.distinct = true; break;
      case 's': h.senders = true; break;
      case 'w': h.credit = (long)qdm_parse_count("--credit", optarg, 0); break;
      case 'p': h.pace = (long)qdm_parse_count("--pace", optarg, 1); break;
      case 't': h.timeout_s = qdm_parse_seconds("--timeout", optarg); break;
      case OPT_HOLD: h.hold_s = qdm_parse_seconds("--hold", optarg); break;
      case OPT_NO_SASL: h.ep.sasl = false; break;
      case OPT_CONTAINER: snprintf(h.container_id, sizeof(h.container_id), "%s", optarg); break;
      case 'h': usage(stdout); return QDM_EXIT_OK;
      default: usage(stderr); return QDM_EXIT_ERROR;
    }
  }
  if (optind != argc) {
    usage(stderr);
    return QDM_EXIT_ERROR;
  }
  h.links_wanted = h.connections * h.links_per_connection;
  h.conns = qdm_xrealloc(NULL, (size_t)h.connections * sizeof(pn_connection_t *));

  qdm_install_signal_handlers();
  h.t_start_ns = qdm_now_ns();
  h.proactor = pn_proactor();
  start_connections(&h);
  pn_proactor_set_timeout(h.proactor, QDM_TICK_MS);

  bool running = true;
  while (running) {
    pn_event_batch_t *batch = pn_proactor_wait(h.proactor);
    pn_event_t *e;
    while (running && (e = pn_event_batch_next(batch))) running = handle(&h, e);
    pn_proactor_done(h.proactor, batch);
  }
  print_result(&h);
  pn_proactor_free(h.proactor);
  free(h.conns);
  if (h.timed_out) return QDM_EXIT_TIMEOUT;
  return h.error ? QDM_EXIT_ERROR : QDM_EXIT_OK;
}
