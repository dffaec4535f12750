/* Shared helpers for qdm-send and qdm-recv; see common.h. */
#include "common.h"

#include <proton/condition.h>
#include <proton/listener.h>
#include <proton/netaddr.h>
#include <proton/sasl.h>
#include <proton/session.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <time.h>

volatile sig_atomic_t qdm_stop_requested = 0;

static void on_stop_signal(int sig) {
  (void)sig;
  qdm_stop_requested = 1; /* only async-signal-safe work here */
}

void qdm_install_signal_handlers(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

int64_t qdm_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void *qdm_xrealloc(void *p, size_t size) {
  void *q = realloc(p, size ? size : 1);
  if (!q) {
    fprintf(stderr, "out of memory (%zu bytes)\n", size);
    exit(QDM_EXIT_ERROR);
  }
  return q;
}

double qdm_cpu_seconds(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int qdm_parse_hostport(const char *s, qdm_endpoint_t *ep) {
  const char *colon = strrchr(s, ':');
  if (!colon || colon[1] == '\0') return -1;
  size_t hlen = (size_t)(colon - s);
  /* Strip IPv6 brackets: proton's address syntax wants the bare host. */
  if (hlen >= 2 && s[0] == '[' && s[hlen - 1] == ']') {
    s++;
    hlen -= 2;
  }
  if (hlen >= sizeof(ep->host) || strlen(colon + 1) >= sizeof(ep->port)) return -1;
  memcpy(ep->host, s, hlen);
  ep->host[hlen] = '\0';
  strcpy(ep->port, colon + 1);
  return 0;
}

long long qdm_parse_count(const char *what, const char *s, long long min) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || !end || *end != '\0' || v < min) {
    fprintf(stderr, "invalid %s: '%s' (expected an integer >= %lld)\n", what, s, min);
    exit(QDM_EXIT_ERROR);
  }
  return v;
}

double qdm_parse_seconds(const char *what, const char *s) {
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || !end || *end != '\0' || v < 0) {
    fprintf(stderr, "invalid %s: '%s' (expected seconds >= 0)\n", what, s);
    exit(QDM_EXIT_ERROR);
  }
  return v;
}

pn_listener_t *qdm_start(pn_proactor_t *proactor, const qdm_endpoint_t *ep) {
  char addr[PN_MAX_ADDR];
  pn_proactor_addr(addr, sizeof(addr), ep->host, ep->port);
  if (ep->listen) {
    pn_listener_t *l = pn_listener();
    pn_proactor_listen(proactor, l, addr, 16);
    return l;
  }
  pn_proactor_connect2(proactor, NULL, NULL, addr);
  return NULL;
}

bool qdm_report_condition(const char *prog, const char *what, pn_condition_t *cond) {
  if (!cond || !pn_condition_is_set(cond)) return false;
  fprintf(stderr, "%s: %s: %s: %s\n", prog, what, pn_condition_get_name(cond),
          pn_condition_get_description(cond) ? pn_condition_get_description(cond) : "");
  return true;
}

int qdm_listener_port(pn_listener_t *listener) {
  const pn_netaddr_t *na = pn_listener_addr(listener);
  for (; na; na = pn_netaddr_next(na)) {
    const struct sockaddr *sa = pn_netaddr_sockaddr(na);
    if (sa && sa->sa_family == AF_INET) return ntohs(((const struct sockaddr_in *)sa)->sin_port);
    if (sa && sa->sa_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
  }
  return -1;
}

void qdm_json_string(const char *s) {
  putchar('"');
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      putchar('\\');
      putchar(c);
    } else if (c < 0x20) {
      printf("\\u%04x", c);
    } else {
      putchar(c);
    }
  }
  putchar('"');
}

bool qdm_handle_connection_event(pn_event_t *e, const qdm_endpoint_t *ep, const char *container_id,
                                 bool *error) {
  switch (pn_event_type(e)) {
    case PN_LISTENER_ACCEPT:
      pn_listener_accept2(pn_event_listener(e), NULL, NULL);
      return true;

    case PN_CONNECTION_INIT:
      pn_connection_set_container(pn_event_connection(e), container_id);
      return true;

    case PN_CONNECTION_BOUND: {
      pn_transport_t *t = pn_event_transport(e);
      if (ep->listen) {
        /* Direct baseline: behave like an open router listener, so accept
         * SASL ANONYMOUS or a bare AMQP header (proton auto-detects). */
        pn_transport_require_auth(t, false);
        pn_sasl_allowed_mechs(pn_sasl(t), "ANONYMOUS");
      } else if (ep->sasl) {
        /* qdrouterd listeners configured with saslMechanisms: ANONYMOUS
         * expect a SASL layer; proton clients only add one on request. */
        pn_sasl_allowed_mechs(pn_sasl(t), "ANONYMOUS");
      }
      return true;
    }

    case PN_CONNECTION_REMOTE_OPEN: {
      pn_connection_t *c = pn_event_connection(e);
      if (pn_connection_state(c) & PN_LOCAL_UNINIT) pn_connection_open(c);
      return true;
    }

    case PN_SESSION_REMOTE_OPEN: {
      pn_session_t *s = pn_event_session(e);
      if (pn_session_state(s) & PN_LOCAL_UNINIT) pn_session_open(s);
      return true;
    }

    case PN_CONNECTION_REMOTE_CLOSE: {
      pn_connection_t *c = pn_event_connection(e);
      if (qdm_report_condition(container_id, "connection closed", pn_connection_remote_condition(c)))
        *error = true;
      pn_connection_close(c);
      return true;
    }

    case PN_SESSION_REMOTE_CLOSE: {
      pn_session_t *s = pn_event_session(e);
      if (qdm_report_condition(container_id, "session closed", pn_session_remote_condition(s)))
        *error = true;
      pn_session_close(s);
      return true;
    }

    default:
      return false;
  }
}
