/*
 * The minimal AMQP section walker of qdm-recv (see body_walk.h).
 */
#include "body_walk.h"

#include <string.h>

typedef struct cursor_t {
  const unsigned char *p;
  size_t n, pos;
} cursor_t;

static uint32_t get_be32(const unsigned char *p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* Skip one (non-described) value whose format code is `code`; the value
 * bytes are returned through val/vlen (for variable-width: the payload). */
static int skip_value(cursor_t *c, unsigned code, const unsigned char **val, size_t *vlen) {
  size_t width, len;
  switch (code >> 4) {
    case 0x4: width = 0; break;
    case 0x5: width = 1; break;
    case 0x6: width = 2; break;
    case 0x7: width = 4; break;
    case 0x8: width = 8; break;
    case 0x9: width = 16; break;
    case 0xa: case 0xc: case 0xe: /* 1-byte size prefix */
      if (c->pos + 1 > c->n) return -1;
      len = c->p[c->pos++];
      goto variable;
    case 0xb: case 0xd: case 0xf: /* 4-byte size prefix */
      if (c->pos + 4 > c->n) return -1;
      len = get_be32(c->p + c->pos);
      c->pos += 4;
      goto variable;
    default: return -1;
  }
  if (c->pos + width > c->n) return -1;
  *val = c->p + c->pos;
  *vlen = width;
  c->pos += width;
  return 0;
variable:
  if (len > c->n - c->pos) return -1;
  *val = c->p + c->pos;
  *vlen = len;
  c->pos += len;
  return 0;
}

/* Descriptor codes of the sections we care about. */
#define DESC_DATA 0x75
#define DESC_UNKNOWN 0xffffffffu

/* Read one section: descriptor code plus the described value. */
static int read_section(cursor_t *c, uint64_t *desc, unsigned *code, const unsigned char **val,
                        size_t *vlen) {
  if (c->pos + 2 > c->n || c->p[c->pos] != 0x00) return -1;
  c->pos++;
  unsigned dcode = c->p[c->pos++];
  const unsigned char *dv;
  size_t dlen;
  if (skip_value(c, dcode, &dv, &dlen) != 0) return -1;
  if (dcode == 0x53) *desc = dv[0];                      /* smallulong */
  else if (dcode == 0x44) *desc = 0;                     /* ulong0 */
  else if (dcode == 0x80) {                              /* ulong */
    *desc = 0;
    for (int i = 0; i < 8; i++) *desc = (*desc << 8) | dv[i];
  } else if ((dcode == 0xa3 || dcode == 0xb3) && dlen == 16 && memcmp(dv, "amqp:data:binary", 16) == 0)
    *desc = DESC_DATA;                                   /* symbolic descriptor */
  else *desc = DESC_UNKNOWN;
  if (c->pos + 1 > c->n) return -1;
  *code = c->p[c->pos++];
  return skip_value(c, *code, val, vlen);
}

/* Find the first `data` section. Returns 0 found, 1 body is not data, -1 malformed. */
int qdm_find_data_body(const char *msg, size_t n, const unsigned char **body, size_t *blen) {
  cursor_t c = {(const unsigned char *)msg, n, 0};
  while (c.pos < c.n) {
    uint64_t desc;
    unsigned code;
    if (read_section(&c, &desc, &code, body, blen) != 0) return -1;
    if (desc == DESC_DATA && (code == 0xa0 || code == 0xb0)) return 0;
    if (desc == 0x76 || desc == 0x77) return 1; /* amqp-sequence / amqp-value body */
  }
  return 1; /* no body at all */
}

int64_t qdm_get_le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return (int64_t)v;
}
