/* The router's proton shim: the data path's proton calls, several per cffi call.
 *
 * Every call from Python into proton through cffi releases and re-takes the GIL and saves
 * errno; at about twenty calls per routed message that was a fifth of the router's CPU
 * (callgrind, bench/HISTORY.md). These functions make the same proton calls
 * as the router's Python code did, in the same order, a message's worth at a time.
 *
 * Proton is the instance python-qpid-proton loaded (its cffi module exports every pn_*
 * symbol): qd_shim_init finds the functions there with dlsym, so this module links against
 * no proton library of its own and cannot end up with a second copy.
 *
 * QD_* result codes and QD_SETTLED are #defined by proton_shim_build.py, from the Python
 * module that the fallback shares (proton_shim.py). */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

typedef struct { size_t size; const char *start; } qd_bytes_t;  /* pn_bytes_t */

static void *(*p_collector_peek)(void *);
static int (*p_collector_pop)(void *);
static int (*p_event_type)(void *);
static void *(*p_event_delivery)(void *);
static void *(*p_incref)(void *);
static int (*p_decref)(void *);
static void *(*p_delivery_link)(void *);
static _Bool (*p_link_is_sender)(void *);
static _Bool (*p_delivery_partial)(void *);
static size_t (*p_delivery_pending)(void *);
static ssize_t (*p_link_recv)(void *, char *, size_t);
static ssize_t (*p_link_send)(void *, const char *, size_t);
static _Bool (*p_link_advance)(void *);
static void *(*p_link_current)(void *);
static void *(*p_delivery)(void *, qd_bytes_t);
static void (*p_delivery_settle)(void *);
static _Bool (*p_delivery_settled)(void *);
static uint64_t (*p_delivery_remote_state)(void *);
static void (*p_delivery_update)(void *, uint64_t);
static ssize_t (*p_transport_capacity)(void *);
static char *(*p_transport_tail)(void *);
static int (*p_transport_process)(void *, size_t);
static int (*p_transport_close_tail)(void *);
static ssize_t (*p_transport_pending)(void *);
static const char *(*p_transport_head)(void *);
static void (*p_transport_pop)(void *, size_t);
static int (*p_transport_close_head)(void *);

static int delivery_event = -1;
static int transport_event = -1;

#define FIND(var, name) \
    do { *(void **)(&var) = dlsym(proton, name); if (!var) return -1; } while (0)

/* 0 when every function was found in the already loaded library at path; -1 for a missing
 * symbol, -2 when that library is not loaded. */
int qd_shim_init(const char *path, int delivery_type, int transport_type)
{
    void *proton = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (!proton) return -2;
    FIND(p_collector_peek, "pn_collector_peek");
    FIND(p_collector_pop, "pn_collector_pop");
    FIND(p_event_type, "pn_event_type");
    FIND(p_event_delivery, "pn_event_delivery");
    FIND(p_incref, "pn_incref");
    FIND(p_decref, "pn_decref");
    FIND(p_delivery_link, "pn_delivery_link");
    FIND(p_link_is_sender, "pn_link_is_sender");
    FIND(p_delivery_partial, "pn_delivery_partial");
    FIND(p_delivery_pending, "pn_delivery_pending");
    FIND(p_link_recv, "pn_link_recv");
    FIND(p_link_send, "pn_link_send");
    FIND(p_link_advance, "pn_link_advance");
    FIND(p_link_current, "pn_link_current");
    FIND(p_delivery, "pn_delivery");
    FIND(p_delivery_settle, "pn_delivery_settle");
    FIND(p_delivery_settled, "pn_delivery_settled");
    FIND(p_delivery_remote_state, "pn_delivery_remote_state");
    FIND(p_delivery_update, "pn_delivery_update");
    FIND(p_transport_capacity, "pn_transport_capacity");
    FIND(p_transport_tail, "pn_transport_tail");
    FIND(p_transport_process, "pn_transport_process");
    FIND(p_transport_close_tail, "pn_transport_close_tail");
    FIND(p_transport_pending, "pn_transport_pending");
    FIND(p_transport_head, "pn_transport_head");
    FIND(p_transport_pop, "pn_transport_pop");
    FIND(p_transport_close_head, "pn_transport_close_head");
    delivery_event = delivery_type;
    transport_event = transport_type;
    return 0;
}

/* Receiving links whose messages wait unread for a consumer's credit
 * (amqp/waiting_producers.py): the events of their unread deliveries are dropped, since the
 * router reads those deliveries when the link resumes. In Python each such event cost a
 * dispatch, and, frequent while PyPy's JIT recorded its trace, could make the JIT take
 * that path for the loop's main one and every message's path a bridge. Few links wait at
 * a time; past QD_MAX_WAITING the router still gets their events, and ignores them. */
#define QD_MAX_WAITING 64
static void *waiting_links[QD_MAX_WAITING];
static int waiting_count = 0;

/* Marks link as waiting (on) or not. 0, or -1 when too many links wait already. */
int qd_link_waiting(void *link, int on)
{
    for (int i = 0; i < waiting_count; i++) {
        if (waiting_links[i] == link) {
            if (!on) waiting_links[i] = waiting_links[--waiting_count];
            return 0;
        }
    }
    if (!on) return 0;
    if (waiting_count == QD_MAX_WAITING) return -1;
    waiting_links[waiting_count++] = link;
    return 0;
}

/* A delivery not yet read (bytes buffered, or more to come) on a waiting link. A delivery
 * the router read before its link began to wait has neither, and its event (the producer
 * settling it) still goes to the router. */
static int unread_on_waiting_link(void *link, void *delivery)
{
    for (int i = 0; i < waiting_count; i++) {
        if (waiting_links[i] == link)
            return p_delivery_pending(delivery) > 0 || p_delivery_partial(delivery);
    }
    return 0;
}

/* Releases the held events of the previous batch, then takes up to max events off the
 * collector. Each taken event is held (a reference, so its delivery, link or connection
 * stays valid, as it would at the head of the collector) until the next call. Transport
 * events are dropped: the router does nothing with them. For delivery events, objects[i]
 * is the delivery, links[i] its link's address (the router's key for the link:
 * pointer_key), and kinds[i] is QD_INCOMING_DELIVERY when the link receives (a message or a
 * producer's update), so that only the others, updates of what the router sent, are looked
 * up among its outgoing deliveries; for the other events, objects[i] is the event and
 * links[i] 0. */
int qd_collect(void *collector, void **held, int held_count, int *kinds, void **objects,
               intptr_t *links, int max)
{
    for (int i = 0; i < held_count; i++) p_decref(held[i]);
    int count = 0;
    void *event;
    while (count < max && (event = p_collector_peek(collector)) != NULL) {
        int kind = p_event_type(event);
        if (kind == transport_event) {
            p_collector_pop(collector);
            continue;
        }
        void *delivery = NULL;
        void *link = NULL;
        if (kind == delivery_event) {
            delivery = p_event_delivery(event);
            link = p_delivery_link(delivery);
            if (waiting_count > 0 && unread_on_waiting_link(link, delivery)) {
                p_collector_pop(collector);
                continue;
            }
        }
        p_incref(event);
        p_collector_pop(collector);
        held[count] = event;
        kinds[count] = kind;
        if (kind == delivery_event) {
            objects[count] = delivery;
            links[count] = (intptr_t)link;
            if (!p_link_is_sender(link)) kinds[count] = QD_INCOMING_DELIVERY;
        } else {
            objects[count] = event;
            links[count] = 0;
        }
        count++;
    }
    return count;
}

/* Whether a message starts the way one without a message-annotations section (so without
 * router annotations) does: with its properties, or an empty header and then its properties.
 * Most messages start so, and the router then needs no search for its annotations. */
static int starts_without_annotations(const char *message, ssize_t size)
{
    if (size >= 3 && memcmp(message, "\0Ss", 3) == 0) return 1;
    return size >= 7 && memcmp(message, "\0SpE\0Ss", 7) == 0;
}

/* Reads a complete incoming message of at most capacity bytes into buffer and advances
 * the link: its size, plus QD_NO_ANNOTATIONS when it starts without a message-annotations
 * section, plus QD_TAKEN_SETTLED when its producer had settled it (then it is settled here:
 * one call fewer per pre-settled message; settling again is harmless); or QD_PARTIAL (more
 * to come), QD_EMPTY (nothing buffered), QD_LARGE (over capacity; nothing read),
 * QD_ABORTED (the producer aborted it: read past and settled). */
int64_t qd_take(void *link, void *delivery, char *buffer, size_t capacity)
{
    if (p_delivery_partial(delivery)) return QD_PARTIAL;
    size_t size = p_delivery_pending(delivery);
    if (size == 0) return QD_EMPTY;
    if (size > capacity) return QD_LARGE;
    ssize_t count = p_link_recv(link, buffer, size);
    p_link_advance(link);
    if (count < 0) {
        p_delivery_settle(delivery);
        return QD_ABORTED;
    }
    int64_t result = count;
    if (starts_without_annotations(buffer, count)) result |= QD_NO_ANNOTATIONS;
    if (p_delivery_settled(delivery)) {
        p_delivery_settle(delivery);
        result |= QD_TAKEN_SETTLED;
    }
    return result;
}

/* Sends one unsettled message on link, tagged with tag's 8 bytes; its new delivery. */
void *qd_send(void *link, uint64_t tag, const char *payload, size_t size)
{
    qd_bytes_t bytes = {sizeof tag, (const char *)&tag};
    void *delivery = p_delivery(link, bytes);  /* proton copies the tag */
    p_link_send(link, payload, size);
    p_link_advance(link);
    return delivery;
}

/* qd_send, the delivery as its address: PyPy keys deliveries by int (proton_shim.py). */
intptr_t qd_send_keyed(void *link, uint64_t tag, const char *payload, size_t size)
{
    return (intptr_t)qd_send(link, tag, payload, size);
}

/* A receiving link's current delivery (its oldest unread one; NULL when none), and its
 * address in *key: PyPy keys deliveries by int (proton_shim.py), and an int made of a
 * pointer in Python costs it an allocation. */
void *qd_current(void *link, intptr_t *key)
{
    void *delivery = p_link_current(link);
    *key = (intptr_t)delivery;
    return delivery;
}

/* Sends one message pre-settled. Tags need be unique only among unsettled deliveries. */
void qd_send_settled(void *link, const char *payload, size_t size)
{
    qd_bytes_t bytes = {1, "s"};
    void *delivery = p_delivery(link, bytes);
    p_link_send(link, payload, size);
    p_delivery_settle(delivery);  /* also advances: the new delivery is the current one */
}

/* A consumer's update of an outgoing delivery: its outcome, plus QD_SETTLED when the
 * consumer settled. An accepted and settled delivery is settled here too (the common
 * case); any other is left to the caller, who may need its outcome's details first. */
uint64_t qd_consumer_update(void *delivery, uint64_t accepted)
{
    uint64_t state = p_delivery_remote_state(delivery);
    if (!p_delivery_settled(delivery)) return state;
    if (state == accepted) p_delivery_settle(delivery);
    return state | QD_SETTLED;
}

/* Gives an incoming delivery its outcome and settles it. */
void qd_finish(void *delivery, uint64_t outcome)
{
    p_delivery_update(delivery, outcome);
    p_delivery_settle(delivery);
}

/* Moves what the (non-blocking) socket fd has into the transport, straight into proton's
 * input buffer, until the socket is empty or budget bytes were read: QD_IO_OPEN, or
 * QD_INPUT_OVER once the socket's input ended or failed (the transport's tail is closed
 * then) or the transport takes no more input. Reading in place saves a copy of every byte
 * received (pn_transport_push copies). */
int qd_read(void *transport, int fd, size_t budget)
{
    while (budget > 0) {
        ssize_t capacity = p_transport_capacity(transport);
        if (capacity < 0) return QD_INPUT_OVER;
        if (capacity == 0) return QD_IO_OPEN;
        ssize_t count = recv(fd, p_transport_tail(transport), (size_t)capacity, MSG_DONTWAIT);
        if (count < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return QD_IO_OPEN;
            count = 0;  /* a reset or other failure ends the input like an orderly close */
        }
        if (count == 0) {
            p_transport_close_tail(transport);
            return QD_INPUT_OVER;
        }
        p_transport_process(transport, (size_t)count);
        if (count < capacity) return QD_IO_OPEN;
        budget = (size_t)count < budget ? budget - (size_t)count : 0;
    }
    return QD_IO_OPEN;
}

/* Sends what the transport has to say to the (non-blocking) socket fd, straight from
 * proton's output buffer (pn_transport_peek would copy it first): QD_IO_OPEN when all of it
 * went, QD_WOULD_BLOCK when the socket pushed back, QD_OUTPUT_FAILED when sending failed
 * (the transport is closed both ways then: nothing more can pass). */
int qd_write(void *transport, int fd)
{
    for (;;) {
        ssize_t pending = p_transport_pending(transport);
        if (pending <= 0) return QD_IO_OPEN;
        ssize_t sent = send(fd, p_transport_head(transport), (size_t)pending,
                            MSG_DONTWAIT | MSG_NOSIGNAL);
        if (sent < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return QD_WOULD_BLOCK;
            p_transport_close_head(transport);
            p_transport_close_tail(transport);
            return QD_OUTPUT_FAILED;
        }
        p_transport_pop(transport, (size_t)sent);
        if (sent < pending) return QD_WOULD_BLOCK;
    }
}

/* Below this line cffi generates each function's CPython wrapper, which releases the GIL
 * around the call and saves errno after it. These functions take microseconds and never
 * block (the sockets are non-blocking); other threads (host-name lookups, the console) get
 * the GIL while the loop waits in epoll, as before; and the router reads no errno through
 * cffi (qd_read and qd_write return codes). The GIL's release and re-take alone
 * cost CPython about 250 instructions a call, 2 (pre-settled) to 4 (unsettled) calls per
 * message. So these wrappers keep the GIL. PyPy calls the functions directly: no change. */
#undef Py_BEGIN_ALLOW_THREADS
#define Py_BEGIN_ALLOW_THREADS {
#undef Py_END_ALLOW_THREADS
#define Py_END_ALLOW_THREADS }
#undef _cffi_restore_errno
#define _cffi_restore_errno() ((void)0)
#undef _cffi_save_errno
#define _cffi_save_errno() ((void)0)
