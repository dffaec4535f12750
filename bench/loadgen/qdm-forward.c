/*
 * qdm-forward: the least an AMQP router can do in the middle, in C on proton-C's engine.
 *
 * It is qdmesh's router with everything but the data path taken out, and in C: the same
 * loop (epoll, non-blocking sockets read straight into proton's transport and written
 * straight from it, one collector for all connections) and, in outline, the same credit
 * rule (amqp/data_path/credit_return.py: the producer's window of -w messages, a router's
 * linkCapacity, comes back as messages leave, written at once when half a window is owed,
 * at the end of a loop turn once an eighth is), with no routing, annotations, counters or
 * management.  It takes one sending link (the producer) and one receiving link (the
 * consumer) at a time and forwards each message's bytes.  Messages that arrive while the
 * consumer has no credit wait in a ring of the window's size, so memory stays bounded as a
 * router's does.  An unsettled message goes on unsettled; the consumer's outcome and
 * settlement come back to its producer (the outcome's type only: no delivery-failed or
 * annotations), and a consumer that leaves with messages unsettled has them released.
 *
 * bench/run.py --forward runs it where the router runs, built on the router's own proton-C
 * (build-forward.sh): the ratio it reaches is what a router on that engine reaches when it
 * does nothing but forward, with that window, on the host.  It tells how much of the
 * router's distance from direct is the engine's and the host's rather than the router's own.
 *
 * Usage: qdm-forward -l HOST:PORT [-w WINDOW]
 * Prints {"event": "ready", "port": N} once listening, then runs until SIGINT/SIGTERM.
 */
#include "common.h"

#include <proton/condition.h>
#include <proton/delivery.h>
#include <proton/link.h>
#include <proton/sasl.h>
#include <proton/session.h>
#include <proton/terminus.h>

#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_EVENTS 64
#define READ_BUDGET (256 * 1024)

static const char *prog = "qdm-forward";

typedef struct conn_t {
  int fd;
  pn_connection_t *connection;
  pn_transport_t *transport;
  uint32_t interest;
  unsigned written; /* the loop turn it was last written in: once a turn is enough */
  bool closed;
} conn_t;

typedef struct held_t {
  size_t size;
  char *bytes;
  pn_delivery_t *origin; /* the producer's delivery, unsettled; NULL if it came settled */
} held_t;

typedef struct forwarder_t {
  int window;
  int epoll_fd;
  pn_collector_t *collector;
  pn_link_t *in;  /* the producer's link: we receive on it */
  pn_link_t *out; /* the consumer's link: we send on it */
  int owed;       /* credit the producer is owed, not yet given back */
  held_t *ring;   /* messages waiting for the consumer's credit */
  int ring_head, ring_count;
  char *buf; /* one message being forwarded */
  size_t buf_size;
  uint64_t tag;
} forwarder_t;

static void die(const char *what) {
  fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
  exit(QDM_EXIT_ERROR);
}

static conn_t *conn_of(pn_link_t *l) {
  return pn_connection_get_context(pn_session_connection(pn_link_session(l)));
}

static void set_interest(forwarder_t *f, conn_t *c, uint32_t events) {
  if (events == c->interest) return;
  struct epoll_event ev = {.events = events, .data.ptr = c};
  if (epoll_ctl(f->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev) != 0) die("epoll_ctl");
  c->interest = events;
}

/* Writes what the transport has to say, straight from proton's output buffer. */
static void write_out(forwarder_t *f, conn_t *c) {
  if (c->closed) return;
  for (;;) {
    ssize_t pending = pn_transport_pending(c->transport);
    if (pending <= 0) break;
    ssize_t sent = send(c->fd, pn_transport_head(c->transport), (size_t)pending, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
      pn_transport_close_head(c->transport);
      pn_transport_close_tail(c->transport);
      c->closed = true;
      return;
    }
    pn_transport_pop(c->transport, (size_t)sent);
  }
  set_interest(f, c, pn_transport_pending(c->transport) > 0 ? EPOLLIN | EPOLLOUT : EPOLLIN);
}

static void write_once(forwarder_t *f, conn_t *c, unsigned turn) {
  if (c->written == turn) return;
  c->written = turn;
  write_out(f, c);
}

/* Reads what the socket has, straight into proton's input buffer. */
static void read_in(conn_t *c) {
  size_t budget = READ_BUDGET;
  while (budget > 0 && !c->closed) {
    ssize_t capacity = pn_transport_capacity(c->transport);
    if (capacity <= 0) return;
    ssize_t count = recv(c->fd, pn_transport_tail(c->transport), (size_t)capacity, MSG_DONTWAIT);
    if (count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (count <= 0) {
      pn_transport_close_tail(c->transport);
      c->closed = true;
      return;
    }
    pn_transport_process(c->transport, (size_t)count);
    if (count < capacity) return;
    budget = (size_t)count < budget ? budget - (size_t)count : 0;
  }
}

static void give_credit(forwarder_t *f, int at_least, bool write_now) {
  if (!f->in || f->owed <= 0 || f->owed < at_least) return;
  pn_link_flow(f->in, f->owed);
  f->owed = 0;
  /* Mid-turn, as the router does: the producer refills while the rest is forwarded. */
  if (write_now) write_out(f, conn_of(f->in));
}

/* Sends a message on; an unsettled one (origin) stays so until the consumer settles it. The
 * producer is owed its credit back either way, as the router gives it back on forwarding. */
static void send_out(forwarder_t *f, const char *bytes, size_t size, pn_delivery_t *origin) {
  char tag[8];
  memcpy(tag, &f->tag, sizeof(tag));
  f->tag++;
  pn_delivery_t *d = pn_delivery(f->out, pn_dtag(tag, sizeof(tag)));
  pn_link_send(f->out, bytes, size);
  pn_link_advance(f->out);
  if (origin) {
    pn_delivery_set_context(d, origin);
  } else {
    pn_delivery_settle(d);
  }
  f->owed++;
}

/* The consumer's outcome and settlement go back to the producer's delivery. */
static void on_outcome(forwarder_t *f, pn_delivery_t *d) {
  if (!pn_delivery_remote_state(d) && !pn_delivery_settled(d)) return;
  pn_delivery_t *origin = pn_delivery_get_context(d);
  if (origin) {
    pn_delivery_update(origin, pn_delivery_remote_state(d) ? pn_delivery_remote_state(d) : PN_ACCEPTED);
    pn_delivery_settle(origin);
    pn_delivery_set_context(d, NULL);
  }
  if (pn_delivery_settled(d)) pn_delivery_settle(d);
}

/* A consumer leaving with messages unsettled: their producer learns they were released. */
static void release_unsettled(pn_link_t *out) {
  for (pn_delivery_t *d = pn_unsettled_head(out); d; d = pn_unsettled_next(d)) {
    pn_delivery_t *origin = pn_delivery_get_context(d);
    if (!origin) continue;
    pn_delivery_update(origin, PN_RELEASED);
    pn_delivery_settle(origin);
    pn_delivery_set_context(d, NULL);
  }
}

/* The consumer has credit again: send what waits, and owe the producer for each. */
static void drain_ring(forwarder_t *f) {
  while (f->ring_count && f->out && pn_link_credit(f->out) > 0) {
    held_t *h = &f->ring[f->ring_head];
    send_out(f, h->bytes, h->size, h->origin);
    f->ring_head = (f->ring_head + 1) % f->window;
    f->ring_count--;
  }
  give_credit(f, f->window / 2, true);
}

static void on_delivery(forwarder_t *f, pn_delivery_t *d) {
  pn_link_t *l = pn_delivery_link(d);
  if (pn_link_is_sender(l)) {
    on_outcome(f, d);
    return;
  }
  if (l != f->in || !pn_delivery_readable(d) || pn_delivery_partial(d)) return;
  pn_delivery_t *origin = pn_delivery_settled(d) ? NULL : d;
  size_t size = pn_delivery_pending(d);
  if (size > f->buf_size) {
    f->buf = qdm_xrealloc(f->buf, size);
    f->buf_size = size;
  }
  pn_link_recv(l, f->buf, size);
  if (origin) {
    pn_link_advance(l);
  } else {
    pn_delivery_settle(d);
  }
  if (f->out && pn_link_credit(f->out) > 0 && f->ring_count == 0) {
    send_out(f, f->buf, size, origin);
    give_credit(f, f->window / 2, true);
    return;
  }
  /* The producer never has more credit than the ring has room. */
  held_t *h = &f->ring[(f->ring_head + f->ring_count) % f->window];
  h->bytes = qdm_xrealloc(h->bytes, size);
  memcpy(h->bytes, f->buf, size);
  h->size = size;
  h->origin = origin;
  f->ring_count++;
}

static void on_link_open(forwarder_t *f, pn_link_t *l) {
  pn_terminus_copy(pn_link_source(l), pn_link_remote_source(l));
  pn_terminus_copy(pn_link_target(l), pn_link_remote_target(l));
  pn_link_set_snd_settle_mode(l, pn_link_remote_snd_settle_mode(l));
  pn_link_open(l);
  if (pn_link_is_sender(l)) {
    f->out = l;
    drain_ring(f);
  } else {
    f->in = l;
    f->owed = 0;
    pn_link_flow(l, f->window - f->ring_count);
  }
}

static void on_event(forwarder_t *f, pn_event_t *e) {
  switch (pn_event_type(e)) {
    case PN_CONNECTION_REMOTE_OPEN: {
      pn_connection_t *c = pn_event_connection(e);
      if (pn_connection_state(c) & PN_LOCAL_UNINIT) {
        pn_connection_set_container(c, prog);
        pn_connection_open(c);
      }
      break;
    }
    case PN_SESSION_REMOTE_OPEN: {
      pn_session_t *s = pn_event_session(e);
      if (pn_session_state(s) & PN_LOCAL_UNINIT) pn_session_open(s);
      break;
    }
    case PN_LINK_REMOTE_OPEN:
      if (pn_link_state(pn_event_link(e)) & PN_LOCAL_UNINIT) on_link_open(f, pn_event_link(e));
      break;
    case PN_LINK_FLOW:
      if (pn_event_link(e) == f->out) drain_ring(f);
      break;
    case PN_DELIVERY:
      on_delivery(f, pn_event_delivery(e));
      break;
    case PN_LINK_REMOTE_CLOSE:
    case PN_LINK_REMOTE_DETACH: {
      pn_link_t *l = pn_event_link(e);
      if (l == f->in) {
        /* What waits from a producer that left goes on settled: nobody is there to tell. */
        for (int i = 0; i < f->ring_count; i++) f->ring[(f->ring_head + i) % f->window].origin = NULL;
        f->in = NULL;
      }
      if (pn_link_is_sender(l)) release_unsettled(l);
      if (l == f->out) f->out = NULL;
      pn_link_close(l);
      break;
    }
    case PN_SESSION_REMOTE_CLOSE:
      pn_session_close(pn_event_session(e));
      break;
    case PN_CONNECTION_REMOTE_CLOSE:
      pn_connection_close(pn_event_connection(e));
      break;
    default:
      break;
  }
}

static void accept_all(forwarder_t *f, int listen_fd) {
  for (;;) {
    int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK);
    if (fd < 0) return;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    conn_t *c = calloc(1, sizeof(conn_t));
    c->fd = fd;
    c->connection = pn_connection();
    c->transport = pn_transport();
    pn_transport_set_server(c->transport);
    pn_sasl_allowed_mechs(pn_sasl(c->transport), "ANONYMOUS");
    pn_transport_require_auth(c->transport, false);
    pn_connection_set_context(c->connection, c);
    pn_connection_collect(c->connection, f->collector);
    pn_transport_bind(c->transport, c->connection);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    c->interest = EPOLLIN;
    if (epoll_ctl(f->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) die("epoll_ctl");
  }
}

/* A connection that ended stops being watched and used. Its proton objects are kept (a
 * bench run has a handful of connections): events about them may still be queued. */
static void release(forwarder_t *f, conn_t *c) {
  if (c->fd < 0) return;
  if (f->in && conn_of(f->in) == c) f->in = NULL;
  if (f->out && conn_of(f->out) == c) f->out = NULL;
  epoll_ctl(f->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  c->fd = -1;
  c->closed = true;
}

static int listen_on(const qdm_endpoint_t *ep) {
  struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
  struct addrinfo *ai;
  if (getaddrinfo(ep->host[0] ? ep->host : NULL, ep->port, &hints, &ai) != 0) {
    fprintf(stderr, "%s: cannot resolve %s:%s\n", prog, ep->host, ep->port);
    exit(QDM_EXIT_ERROR);
  }
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0) die("socket");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 16) != 0) die("listen");
  freeaddrinfo(ai);
  struct sockaddr_in bound;
  socklen_t len = sizeof(bound);
  getsockname(fd, (struct sockaddr *)&bound, &len);
  printf("{\"event\": \"ready\", \"port\": %d}\n", ntohs(bound.sin_port));
  fflush(stdout);
  return fd;
}

static void usage(void) {
  fprintf(stderr, "usage: %s -l HOST:PORT [-w WINDOW]\n", prog);
  exit(QDM_EXIT_ERROR);
}

int main(int argc, char **argv) {
  forwarder_t f = {.window = 250};
  qdm_endpoint_t ep = {.listen = true};
  const char *listen_at = NULL;
  int opt;
  while ((opt = getopt(argc, argv, "l:w:h")) != -1) {
    switch (opt) {
      case 'l': listen_at = optarg; break;
      case 'w': f.window = (int)qdm_parse_count("window", optarg, 1); break;
      default: usage();
    }
  }
  if (!listen_at || qdm_parse_hostport(listen_at, &ep) != 0) usage();
  f.ring = calloc((size_t)f.window, sizeof(held_t));
  f.collector = pn_collector();
  f.epoll_fd = epoll_create1(0);
  qdm_install_signal_handlers();
  int listen_fd = listen_on(&ep);
  struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
  if (epoll_ctl(f.epoll_fd, EPOLL_CTL_ADD, listen_fd, &lev) != 0) die("epoll_ctl");

  struct epoll_event ready[MAX_EVENTS];
  conn_t *touched[MAX_EVENTS];
  for (unsigned turn = 1; !qdm_stop_requested; turn++) {
    int n = epoll_wait(f.epoll_fd, ready, MAX_EVENTS, QDM_TICK_MS);
    if (n < 0 && errno != EINTR) die("epoll_wait");
    int count = 0;
    for (int i = 0; i < n; i++) {
      conn_t *c = ready[i].data.ptr;
      if (!c) {
        accept_all(&f, listen_fd);
        continue;
      }
      if (ready[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) read_in(c);
      touched[count++] = c;
    }
    pn_event_t *e;
    while ((e = pn_collector_peek(f.collector))) {
      on_event(&f, e);
      pn_collector_pop(f.collector);
    }
    give_credit(&f, f.window / 8, false);
    /* Output is owed by the connections read from and by the two links' (a forwarded
     * message, credit, an outcome): each written once. */
    for (int i = 0; i < count; i++) write_once(&f, touched[i], turn);
    if (f.out) write_once(&f, conn_of(f.out), turn);
    if (f.in) write_once(&f, conn_of(f.in), turn);
    for (int i = 0; i < count; i++)
      if (touched[i]->closed || pn_transport_closed(touched[i]->transport)) release(&f, touched[i]);
  }
  close(listen_fd);
  return QDM_EXIT_OK;
}
