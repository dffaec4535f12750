/*
 * qdm-relay: a byte relay, the cheapest possible process between two AMQP peers.
 *
 * It accepts TCP connections and pairs each with a new connection to a target, copying
 * bytes both ways without looking at them.  bench/run.py --relay puts it between the
 * sender and a listening receiver: the ratio it reaches is what a third process on the
 * same cores costs when it does no AMQP work at all, the ceiling for any router there.
 *
 * Usage: qdm-relay -l HOST:PORT -t HOST:PORT
 * Prints {"event": "ready", "port": N} once listening (PORT 0 picks one), then runs until
 * SIGINT/SIGTERM.  Plain sockets and epoll; no proton.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUF_SIZE (256 * 1024)
#define MAX_EVENTS 64
#define CLOSED ((void *)-1) /* an event of a pair closed earlier in the same batch */

/* One side of a pair: its socket and the bytes read from it, not yet written to the peer. */
typedef struct side_t {
  int fd;
  char *buf;
  size_t start, end;
  struct side_t *peer;
  int closed_in;     /* read EOF or an error: nothing more will arrive from this side */
  int dead_out;      /* hung up, or a write failed: nothing more can be written to it */
  int registered;    /* in the epoll set */
  uint32_t interest; /* the epoll events registered for fd */
} side_t;

static volatile sig_atomic_t stop;

static void on_signal(int sig) { (void)sig; stop = 1; }

static void die(const char *what) {
  fprintf(stderr, "qdm-relay: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void split_hostport(const char *s, char *host, size_t hlen, char *port, size_t plen) {
  const char *colon = strrchr(s, ':');
  if (!colon) {
    fprintf(stderr, "qdm-relay: expected HOST:PORT, got '%s'\n", s);
    exit(1);
  }
  snprintf(host, hlen, "%.*s", (int)(colon - s), s);
  snprintf(port, plen, "%s", colon + 1);
}

static int open_socket(const char *hostport, int listening) {
  char host[256], port[32];
  split_hostport(hostport, host, sizeof host, port, sizeof port);
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
  if (listening) hints.ai_flags = AI_PASSIVE;
  struct addrinfo *res;
  int rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
  if (rc) {
    fprintf(stderr, "qdm-relay: %s: %s\n", hostport, gai_strerror(rc));
    exit(1);
  }
  int fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
  if (fd < 0) die("socket");
  int one = 1;
  if (listening) {
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, res->ai_addr, res->ai_addrlen) || listen(fd, 16)) die(hostport);
  } else {
    if (connect(fd, res->ai_addr, res->ai_addrlen)) die(hostport);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  freeaddrinfo(res);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

static int pending(const side_t *s) { return s->start != s->end; }

/* All this side will send has been read and written on (or dropped: its peer is gone). */
static int finished(const side_t *s) { return s->closed_in && !pending(s); }

/* Listen for reading while this side's buffer is empty, for writing while its peer's is not.
 * A side that hung up wakes epoll whatever it is asked for, so while there is nothing to do
 * with it (its bytes wait for the peer) it leaves the set, instead of waking the loop without
 * end. */
static void update_interest(int ep, side_t *s) {
  uint32_t want = 0;
  if (!s->closed_in && !pending(s)) want |= EPOLLIN;
  if (pending(s->peer) && !s->dead_out) want |= EPOLLOUT;
  if (s->dead_out && !want) {
    if (s->registered) epoll_ctl(ep, EPOLL_CTL_DEL, s->fd, NULL);
    s->registered = 0;
    return;
  }
  if (s->registered && want == s->interest) return; /* the common case: no syscall */
  struct epoll_event ev = {.events = want, .data.ptr = s};
  epoll_ctl(ep, s->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s->fd, &ev);
  s->registered = 1;
  s->interest = want;
}

static void close_pair(int ep, side_t *s) {
  side_t *p = s->peer;
  if (s->registered) epoll_ctl(ep, EPOLL_CTL_DEL, s->fd, NULL);
  if (p->registered) epoll_ctl(ep, EPOLL_CTL_DEL, p->fd, NULL);
  close(s->fd);
  close(p->fd);
  free(s->buf);
  free(p->buf);
  free(s < p ? s : p); /* the two sides were allocated together */
}

/* Nothing more can be written to s: what waits for it is dropped, and so is what its peer
 * sends from now on (read to its end all the same, so closing it resets nothing). */
static void cannot_write(side_t *s) {
  s->dead_out = 1;
  s->peer->start = s->peer->end = 0;
}

/* Write what `from` holds to its peer; once all is written and `from` has ended, say so. */
static void flush(side_t *from) {
  side_t *to = from->peer;
  while (pending(from) && !to->dead_out) {
    ssize_t n = write(to->fd, from->buf + from->start, from->end - from->start);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) return;
      cannot_write(to);
    } else {
      from->start += (size_t)n;
    }
  }
  from->start = from->end = 0;
  if (from->closed_in && !to->dead_out) shutdown(to->fd, SHUT_WR);
}

static void on_readable(side_t *s) {
  if (pending(s) || s->closed_in) return; /* earlier bytes first; a hang-up can wake us */
  ssize_t n = read(s->fd, s->buf, BUF_SIZE);
  if (n > 0) {
    if (s->peer->dead_out) return; /* nowhere to go */
    s->start = 0;
    s->end = (size_t)n;
    flush(s);
  } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
    s->closed_in = 1;
    if (!s->peer->dead_out) shutdown(s->peer->fd, SHUT_WR);
  }
}

static void accept_pair(int ep, int listener, const char *target) {
  int a = accept(listener, NULL, NULL);
  if (a < 0) return;
  int one = 1;
  setsockopt(a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  fcntl(a, F_SETFL, fcntl(a, F_GETFL) | O_NONBLOCK);
  int b = open_socket(target, 0);
  side_t *pair = calloc(2, sizeof(side_t));
  if (!pair) die("calloc");
  pair[0] = (side_t){.fd = a, .buf = malloc(BUF_SIZE), .peer = &pair[1], .interest = EPOLLIN, .registered = 1};
  pair[1] = (side_t){.fd = b, .buf = malloc(BUF_SIZE), .peer = &pair[0], .interest = EPOLLIN, .registered = 1};
  if (!pair[0].buf || !pair[1].buf) die("malloc");
  for (int i = 0; i < 2; i++) {
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &pair[i]};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, pair[i].fd, &ev)) die("epoll_ctl");
  }
}

int main(int argc, char **argv) {
  const char *listen_at = NULL, *target = NULL;
  int opt;
  while ((opt = getopt(argc, argv, "l:t:h")) != -1) {
    if (opt == 'l') listen_at = optarg;
    else if (opt == 't') target = optarg;
    else {
      fprintf(stderr, "usage: qdm-relay -l HOST:PORT -t HOST:PORT\n");
      return opt == 'h' ? 0 : 1;
    }
  }
  if (!listen_at || !target) {
    fprintf(stderr, "qdm-relay: both -l HOST:PORT (listen) and -t HOST:PORT (target) are needed\n");
    return 1;
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGPIPE, SIG_IGN);
  int listener = open_socket(listen_at, 1);
  struct sockaddr_storage addr;
  socklen_t len = sizeof addr;
  getsockname(listener, (struct sockaddr *)&addr, &len);
  int port = ntohs(addr.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&addr)->sin6_port
                                              : ((struct sockaddr_in *)&addr)->sin_port);
  int ep = epoll_create1(0);
  if (ep < 0) die("epoll_create1");
  struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
  epoll_ctl(ep, EPOLL_CTL_ADD, listener, &lev);
  printf("{\"event\": \"ready\", \"port\": %d}\n", port);
  fflush(stdout);

  struct epoll_event events[MAX_EVENTS];
  while (!stop) {
    int n = epoll_wait(ep, events, MAX_EVENTS, 100);
    for (int i = 0; i < n; i++) {
      side_t *s = events[i].data.ptr;
      if (s == CLOSED) continue;
      if (!s) {
        accept_pair(ep, listener, target);
        continue;
      }
      uint32_t ev = events[i].events;
      if (ev & EPOLLOUT) flush(s->peer);
      if (ev & (EPOLLHUP | EPOLLERR)) cannot_write(s);
      if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_readable(s);
      if (finished(s) && finished(s->peer)) {
        side_t *peer = s->peer;
        close_pair(ep, s);
        /* The pair's other side may still have an event in this batch: drop it. */
        for (int j = i + 1; j < n; j++)
          if (events[j].data.ptr == peer || events[j].data.ptr == s) events[j].data.ptr = CLOSED;
        continue;
      }
      update_interest(ep, s);
      update_interest(ep, s->peer);
    }
  }
  return 0;
}
