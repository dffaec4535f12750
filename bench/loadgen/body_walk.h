/*
 * Finding a message's body without decoding it, for qdm-recv.
 *
 * Decoding every message with pn_message_decode would cost more than
 * everything else the receiver does, so only the section structure is
 * walked.  Every AMQP encoding's size follows from the high nibble of its
 * format code, which keeps this tiny.
 */
#ifndef QDM_LOADGEN_BODY_WALK_H
#define QDM_LOADGEN_BODY_WALK_H

#include <stddef.h>
#include <stdint.h>

/* Find the first `data` section of the encoded message msg[0..n).
 * Returns 0 found (body/blen set), 1 the body is not data (or absent), -1 malformed. */
int qdm_find_data_body(const char *msg, size_t n, const unsigned char **body, size_t *blen);

/* The little-endian int64 at p: qdm-send's timestamp in the body's first 8 bytes. */
int64_t qdm_get_le64(const unsigned char *p);

#endif
