/* Record codec: one struct ct_record <-> bytes (FORMAT.md, "Records").
 *
 * Every record is a type byte, the time as a zigzag varint delta from the
 * previous record of the frame, then its fields.  Code addresses are zigzag
 * deltas from the previous code address (c->ip), data addresses from the
 * previous data address (c->addr).  No allocation, no libc calls that are
 * not async-signal-safe. */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "container.h"

/* ---- varints --------------------------------------------------------------- */

static inline uint8_t *put_v(uint8_t *o, uint64_t v)
{
	while (v >= 0x80) {
		*o++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*o++ = (uint8_t)v;
	return o;
}

static inline uint64_t zz(uint64_t d)   /* d is a two's complement delta */
{
	return (d << 1) ^ (uint64_t)((int64_t)d >> 63);
}

static inline uint64_t unzz(uint64_t v)
{
	return (v >> 1) ^ (0 - (v & 1));
}

static inline uint8_t *put_zz(uint8_t *o, uint64_t now, uint64_t prev)
{
	return put_v(o, zz(now - prev));
}

/* Decoder state: a cursor that fails (ok = 0) instead of reading past end.
 * roomy (a constant where it is set, so that the compiler drops the
 * checks): the whole record and 8 bytes more are known to be there. */
struct rd {
	const uint8_t *p, *end;
	int ok;
	bool roomy;
};

/* The loop for varints of two bytes or more (and for the end of the
 * input): the value and its bytes in *n, 0 when it is cut short or longer
 * than 64 bits.  (Values in and out, no pointer to the caller's state: the
 * state of the inlined fast paths stays in registers.) */
static __attribute__((noinline)) uint64_t get_v_long(const uint8_t *p, const uint8_t *end,
                                                     size_t *n)
{
	uint64_t v = 0;
	*n = 0;
	for (unsigned shift = 0, i = 0; shift < 64; shift += 7, i++) {
		if (p + i >= end)
			return 0;
		uint8_t b = p[i];
		if (shift == 63 && b > 1)           /* more than 64 bits */
			return 0;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*n = i + 1;
			return v;
		}
	}
	return 0;                                   /* 11th byte: overlong */
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* A varint of 2..8 bytes from one 8-byte load, without a loop: the first
 * clear continuation bit ends it; the 7-bit groups are then packed
 * together in three steps (pairs, quads, the two halves).  0 bytes (and v
 * untouched) when the varint is longer or fewer than 8 bytes are left. */
static inline size_t get_v_word(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
	uint64_t x;
	if (end - p < 8)
		return 0;
	memcpy(&x, p, 8);
	uint64_t stop = ~x & 0x8080808080808080ull;
	if (!stop)
		return 0;
	unsigned bits = (unsigned)__builtin_ctzll(stop) + 1;   /* 8 x bytes */
	if (bits < 64)
		x &= (1ull << bits) - 1;
	x = (x & 0x007f007f007f007full) | (x & 0x7f007f007f007f00ull) >> 1;
	x = (x & 0x00003fff00003fffull) | (x & 0x3fff00003fff0000ull) >> 2;
	x = (x & 0x000000000fffffffull) | (x & 0x0fffffff00000000ull) >> 4;
	*v = x;
	return bits / 8;
}
#else
static inline size_t get_v_word(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
	(void)p, (void)end, (void)v;
	return 0;
}
#endif

/* One-byte varints (most deltas of a frame) on a straight path, those up
 * to 8 bytes from one load, longer ones (and the end of the input) in a
 * loop. */
static inline uint64_t get_v(struct rd *r)
{
	const uint8_t *p = r->p;
	if (__builtin_expect((r->roomy || p < r->end) && *p < 0x80, 1)) {
		r->p = p + 1;
		return *p;
	}
	if (r->roomy && p[1] < 0x80) {     /* two bytes: the usual time delta */
		r->p = p + 2;
		return (p[0] & 0x7fu) | (uint64_t)p[1] << 7;
	}
	uint64_t v;
	size_t n = get_v_word(r->p, r->roomy ? r->p + 8 : r->end, &v);
	if (__builtin_expect(n == 0, 0)) {
		v = get_v_long(r->p, r->end, &n);
		if (!n)
			r->ok = 0;
	}
	r->p += n;
	return v;
}

static inline uint32_t get_v32(struct rd *r)
{
	uint64_t v = get_v(r);
	if (v > UINT32_MAX)
		r->ok = 0;
	return (uint32_t)v;
}

static inline uint8_t get_u8(struct rd *r)
{
	if (!r->roomy && r->p >= r->end) {
		r->ok = 0;
		return 0;
	}
	return *r->p++;
}

static inline __attribute__((always_inline)) uint64_t get_zz(struct rd *r, uint64_t prev)
{
	return prev + unzz(get_v(r));
}

/* ---- codec ------------------------------------------------------------------ */

void ct_codec_reset(struct ct_codec *c)
{
	memset(c, 0, sizeof *c);
}

/* SAMPLE presence byte (FORMAT.md) */
#define SP_EXT        0x01u /* an extension byte follows */
#define SP_LEN        0x02u /* len changed: u8 follows */
#define SP_KIND_SHIFT 2    /* bits 2-3: kind 0..2, or 3: kind byte follows */
#define SP_KIND_ESCAPE 3u
#define SP_ADDR_SHIFT 4    /* bits 4-5: delta base of addr (0 = most recent) */
#define SP_IP_HIT     0x40u /* ip equals a recent ip: its slot index follows */
#define SP_RESERVED   0x80
#define IP_SLOTS      8
/* the older addresses of the delta bases (SP_ADDR_SHIFT: 2 bits, 4 bases) */
#define ADDR_OLD      3
_Static_assert(IP_SLOTS % 2 == 0, "slot_use moves the old ips a pair at a time");
_Static_assert(ADDR_OLD % 2 == 1 &&
               sizeof ((struct ct_codec *)0)->addr_old == ADDR_OLD * sizeof(uint64_t) &&
               sizeof ((struct ct_codec *)0)->ip_old == (IP_SLOTS - 1) * sizeof(uint64_t),
               "slot_use moves the old addresses a pair at a time: an odd count");
/* Short SAMPLE record (version 8, FORMAT.md): its type byte says it all
 * but the time delta and the address delta.  The usual record of a full
 * trace: a recent ip (its code slot), the address a delta from data slot
 * 0, len, cpu, period and flags those of the state, no data_src or
 * weight, kind 0..2. */
#define SS_MARK       0x80u /* the type byte of a short SAMPLE */
#define SS_KIND       0x03u /* bits 0-1: kind 0..2 (3 is invalid) */
#define SS_IP_SHIFT   2     /* bits 2-4: the code slot of the ip */
#define SS_TIME_SAME  0x20u /* the time is the previous record's: no delta follows */
#define SS_RESERVED   0x40u
/* SAMPLE extension byte */
#define SX_CPU      0x01   /* cpu changed: varint follows */
#define SX_PERIOD   0x02   /* period changed: varint follows */
#define SX_FLAGS    0x04   /* flags changed: u8 follows */
#define SX_DATA_SRC 0x08   /* data_src != 0: varint follows */
#define SX_WEIGHT   0x10   /* weight != 0: varint follows */
#define SX_KNOWN    0x1f

/* Delta bases: slot 0 is *cur, slots 1..3 are old[0..2]. */
static inline uint64_t slot_get(uint64_t cur, const uint64_t *old, unsigned k)
{
	return k ? old[k - 1] : cur;
}

/* After using slot k for value v: v moves to the front, slot k is dropped
 * (old holds nold slots: slot k = nold is the last one).  The last slot,
 * the usual one of a value that is new, moves the whole table at once. */
static inline void slot_use(uint64_t *cur, uint64_t *old, unsigned nold, unsigned k, uint64_t v)
{
	if (k == nold) {
		/* nold is a constant (odd: IP_SLOTS - 1 and ADDR_OLD, asserted
		 * above): the move a pair at a time from the top, which the
		 * compiler makes into a few 16-byte moves (a loop of one at a
		 * time or a memmove became a call, a copy through a buffer
		 * stored the buffer too) */
		for (unsigned j = nold - 1; j >= 2; j -= 2) {
			uint64_t pair[2];
			memcpy(pair, old + j - 2, sizeof pair);
			memcpy(old + j - 1, pair, sizeof pair);
		}
		old[0] = *cur;
	} else if (k) {
		for (unsigned j = k - 1; j > 0; j--)
			old[j] = old[j - 1];
		old[0] = *cur;
	}
	*cur = v;
}

/* Bytes of the varint of x, by the position of its highest bit (a table:
 * the division by 7 was a visible part of the SAMPLE encoding). */
static const uint8_t vlen_of_bits[64] = {
	1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3,
	4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6,
	7, 7, 7, 7, 7, 7, 7, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 10,
};

static inline unsigned vlen(uint64_t x)
{
	return vlen_of_bits[63 - __builtin_clzll(x | 1)];
}

#define ALLOC_OLD_ADDR 0x80    /* ALLOC kind byte: old_addr follows */

/* One-byte varints inline, the loop for the rest. */
static inline uint8_t *put_v_fast(uint8_t *o, uint64_t v)
{
	if (__builtin_expect(v < 0x80, 1)) {
		*o = (uint8_t)v;
		return o + 1;
	}
	return put_v(o, v);
}

/* The delta base of a data address whose delta from the most recent one
 * (*d) takes two bytes or more: the older slot with the smallest delta if
 * its varint is shorter (the smallest zigzag value has the shortest
 * varint: one test of lengths, not one per slot), else slot 0; its delta
 * in *d. */
static inline unsigned addr_slot(const struct ct_codec *c, uint64_t addr, uint64_t *d)
{
	uint64_t best = zz(addr - c->addr_old[0]);
	unsigned ka = 1;
	for (unsigned k = 2; k < 4; k++) {
		uint64_t dk = zz(addr - c->addr_old[k - 1]);
		if (dk < best) {
			best = dk;
			ka = k;
		}
	}
	if (vlen(best) >= vlen(*d))
		return 0;
	*d = best;
	return ka;
}

/* The code slot of ip (IP_SLOTS: none), the search unrolled. */
static inline unsigned ip_slot(const struct ct_codec *c, uint64_t ip)
{
	const uint64_t *old = c->ip_old;
	return ip == c->ip ? 0 : old[0] == ip ? 1 : old[1] == ip ? 2 : old[2] == ip ? 3 :
	       old[3] == ip ? 4 : old[4] == ip ? 5 : old[5] == ip ? 6 : old[6] == ip ? 7 : IP_SLOTS;
}

/* The SAMPLE record after its type and time, with its data address's
 * delta d from slot ka (addr_slot) and its ip's code slot ki (ip_slot):
 * the generic encoding (FORMAT.md). */
static __attribute__((noinline)) uint8_t *encode_sample_rest(struct ct_codec *c, const struct ct_sample *s,
                                                             uint8_t *o, uint64_t d, unsigned ka,
                                                             unsigned ki)
{
	/* the extension byte: nothing to say in the usual record (one test) */
	uint8_t ext = 0;
	if (((s->cpu ^ c->cpu) | (s->period ^ c->period) | (s->flags ^ c->flags) | s->data_src |
	     s->weight) != 0)
		ext = (uint8_t)((s->cpu != c->cpu ? SX_CPU : 0) | (s->period != c->period ? SX_PERIOD : 0) |
		                (s->flags != c->flags ? SX_FLAGS : 0) | (s->data_src ? SX_DATA_SRC : 0) |
		                (s->weight ? SX_WEIGHT : 0));
	/* code address: a recent one (slot index), else a delta */
	uint64_t ip = s->ip;
	unsigned kind = s->kind;
	uint8_t pres = (uint8_t)((ext ? SP_EXT : 0) | (s->len != c->len ? SP_LEN : 0) |
		(kind < SP_KIND_ESCAPE ? kind : SP_KIND_ESCAPE) << SP_KIND_SHIFT |
		ka << SP_ADDR_SHIFT | (ki < IP_SLOTS ? SP_IP_HIT : 0));
	*o++ = pres;
	if (ki < IP_SLOTS) {
		*o++ = (uint8_t)ki;
	} else {
		o = put_v(o, zz(ip - c->ip));
		ki = IP_SLOTS - 1;
	}
	o = put_v_fast(o, d);
	/* move the used slots to the front (slot_use) */
	slot_use(&c->ip, c->ip_old, IP_SLOTS - 1, ki, ip);
	slot_use(&c->addr, c->addr_old, ADDR_OLD, ka, s->addr);
	if (pres & SP_LEN) { *o++ = s->len; c->len = s->len; }
	if (kind >= SP_KIND_ESCAPE) *o++ = (uint8_t)kind;
	c->kind = (uint8_t)kind;
	if (ext != 0) {
		*o++ = ext;
		if (ext & SX_CPU) { o = put_v(o, s->cpu); c->cpu = s->cpu; }
		if (ext & SX_PERIOD) { o = put_v(o, s->period); c->period = s->period; }
		if (ext & SX_FLAGS) { *o++ = s->flags; c->flags = s->flags; }
		if (ext & SX_DATA_SRC) o = put_v(o, s->data_src);
		if (ext & SX_WEIGHT) o = put_v(o, s->weight);
	}
	return o;
}

/* The type and time of a record (all types). */
static inline uint8_t *encode_head(struct ct_codec *c, const struct ct_record *r, uint8_t *o)
{
	*o++ = r->type;
	o = put_v_fast(o, zz(r->time - c->time));
	c->time = r->time;
	return o;
}

/* The SAMPLE record r (the bulk of a full trace), type and time included:
 * the usual record of a full trace (a recent ip, the address nearest data
 * slot 0, the state's len, cpu, period and flags, no data_src or weight,
 * a kind without its own byte) as a short SAMPLE on a straight path, any
 * other as a SAMPLE.  Inline in both callers (a call per record was a
 * tenth of the run encoder's instructions), the rest apart (its registers
 * were spilled on the straight path). */
static inline __attribute__((always_inline)) uint8_t *
encode_sample(struct ct_codec *c, const struct ct_record *r, uint8_t *o)
{
	const struct ct_sample *s = &r->u.sample;
	/* data address: slot 0 unless another slot's delta is shorter
	 * (addr_slot) */
	uint64_t addr = s->addr;
	uint64_t d = zz(addr - c->addr);
	unsigned ka = d >= 0x80 ? addr_slot(c, addr, &d) : 0;
	unsigned kind = s->kind;
	unsigned ki = ip_slot(c, s->ip);
	if (__builtin_expect(ki >= IP_SLOTS || ka != 0 || kind >= SP_KIND_ESCAPE ||
	                     ((s->period ^ c->period) | s->data_src | s->weight | (s->cpu ^ c->cpu) |
	                      (s->len ^ c->len) | (s->flags ^ c->flags)) != 0, 0))
		return encode_sample_rest(c, s, encode_head(c, r, o), d, ka, ki);
	uint64_t dt = zz(r->time - c->time);
	*o++ = (uint8_t)(SS_MARK | (dt ? 0 : SS_TIME_SAME) | ki << SS_IP_SHIFT | kind);
	if (dt)
		o = put_v_fast(o, dt);
	o = put_v_fast(o, d);
	c->time = r->time;
	slot_use(&c->ip, c->ip_old, IP_SLOTS - 1, ki, s->ip);
	c->addr = addr;
	c->kind = (uint8_t)kind;
	return o;
}

/* The fields of the records other than SAMPLE, after type and time (apart:
 * the SAMPLE path then keeps its few registers). */
static __attribute__((noinline)) uint8_t *encode_other(struct ct_codec *c, const struct ct_record *r,
                                                       uint8_t *o)
{
	switch (r->type) {
	case CT_REC_WP_ARM: {
		const struct ct_wp_arm *a = &r->u.arm;
		unsigned n = a->nwp > CT_WP_MAX ? CT_WP_MAX : a->nwp;
		o = put_v(o, a->publisher);
		o = put_zz(o, a->pub_time, r->time);
		o = put_zz(o, a->pub_addr, c->addr);
		c->addr = a->pub_addr;
		*o++ = a->pub_len;
		*o++ = (uint8_t)n;
		for (unsigned i = 0; i < n; i++) {
			o = put_zz(o, a->wp_addr[i], c->addr);
			c->addr = a->wp_addr[i];
			*o++ = a->wp_len[i];
		}
		break;
	}
	case CT_REC_WP_HIT: {
		const struct ct_wp_hit *h = &r->u.hit;
		o = put_zz(o, h->ip, c->ip);
		o = put_zz(o, h->addr, c->addr);
		c->ip = h->ip;
		c->addr = h->addr;
		o = put_v(o, h->cpu);
		*o++ = h->reg;
		*o++ = h->len;
		*o++ = h->kind;
		break;
	}
	case CT_REC_ALLOC: {
		const struct ct_alloc *a = &r->u.alloc;
		o = put_zz(o, a->addr, c->addr);
		c->addr = a->addr;
		o = put_v(o, a->size);
		o = put_v(o, a->callsite);
		*o++ = (uint8_t)((a->kind & 0x7f) | (a->old_addr ? ALLOC_OLD_ADDR : 0));
		if (a->old_addr)
			o = put_zz(o, a->old_addr, a->addr);
		break;
	}
	case CT_REC_FREE:
		o = put_zz(o, r->u.free.addr, c->addr);
		c->addr = r->u.free.addr;
		o = put_v(o, r->u.free.size);
		*o++ = r->u.free.kind;
		break;
	case CT_REC_CALLSITE: {
		const struct ct_callsite *cs = &r->u.callsite;
		unsigned d = cs->depth > CT_CALLSITE_MAX_DEPTH ? CT_CALLSITE_MAX_DEPTH : cs->depth;
		o = put_v(o, cs->id);
		*o++ = (uint8_t)d;
		for (unsigned i = 0; i < d; i++)
			o = i ? put_zz(o, cs->pc[i], cs->pc[i - 1]) : put_v(o, cs->pc[0]);
		break;
	}
	case CT_REC_THREAD_START: {
		const struct ct_thread_start *t = &r->u.start;
		o = put_v(o, t->stack_lo);
		o = put_zz(o, t->stack_hi, t->stack_lo);
		o = put_v(o, t->fs_base);
		o = put_v(o, t->tls_lo);
		o = put_zz(o, t->tls_hi, t->tls_lo);
		break;
	}
	case CT_REC_THREAD_END:
		o = put_v(o, zz((uint64_t)(int64_t)r->u.end.status));
		break;
	case CT_REC_MARKER: {
		size_t n = strnlen(r->u.marker.name, CT_MARKER_NAME_MAX);
		*o++ = r->u.marker.kind;
		*o++ = (uint8_t)n;
		memcpy(o, r->u.marker.name, n);
		o += n;
		break;
	}
	case CT_REC_LOST:
		*o++ = r->u.lost.reason;
		o = put_v(o, r->u.lost.count);
		break;
	case CT_REC_SKIPPED:
		*o++ = r->u.skipped.reason;
		o = put_v(o, r->u.skipped.count);
		break;
	case CT_REC_FUNC_ENTER:
		o = put_zz(o, r->u.func.addr, c->ip);
		c->ip = r->u.func.addr;
		break;
	case CT_REC_FUNC_EXIT:
		o = put_v(o, r->u.func.addr);
		break;
	case CT_REC_OWNER_XFER: {
		const struct ct_owner_xfer *x = &r->u.oxfer;
		o = put_zz(o, x->ip, c->ip);
		c->ip = x->ip;
		o = put_zz(o, x->addr, c->addr);
		c->addr = x->addr;
		o = put_v(o, x->src);
		o = put_v(o, x->windows);
		o = put_v(o, x->prior);
		*o++ = x->len;
		*o++ = x->kind;
		*o++ = x->flags;
		break;
	}
	case CT_REC_OWNER_WIN:
		o = put_zz(o, r->u.owin.addr, c->addr);
		c->addr = r->u.owin.addr;
		*o++ = r->u.owin.status;
		break;
	}
	return o;
}

size_t ct_encode_record(struct ct_codec *c, const struct ct_record *r, uint8_t *out)
{
	if (r->type == 0 || r->type > CT_REC_TYPE_MAX)
		return 0;             /* unknown type: nothing written, state kept */
	if (__builtin_expect(r->type == CT_REC_SAMPLE, 1))
		return (size_t)(encode_sample(c, r, out) - out);
	return (size_t)(encode_other(c, r, encode_head(c, r, out)) - out);
}

size_t ct_encode_samples(struct ct_codec *c, const void *recs, size_t stride, size_t n,
                         uint8_t *out, size_t room, size_t *taken)
{
	const uint8_t *p = recs;
	uint8_t *o = out;
	size_t k = 0;
	if (room >= CT_RECORD_MAX_BYTES) {
		const uint8_t *last = out + (room - CT_RECORD_MAX_BYTES);   /* the last start with room */
		for (; k < n && o <= last; k++, p += stride) {
			const struct ct_record *r = (const struct ct_record *)p;
			o = encode_sample(c, r, o);
		}
	}
	*taken = k;
	return (size_t)(o - out);
}

/* A decoded SAMPLE into the codec state and r (its len, cpu, period and
 * flags already in the state; data_src and weight 0). */
static inline __attribute__((always_inline)) void
sample_commit(struct ct_codec *c, struct ct_record *r, uint64_t time, unsigned ki, uint64_t ip,
              unsigned ka, uint64_t addr, unsigned kind)
{
	c->time = time;
	slot_use(&c->ip, c->ip_old, IP_SLOTS - 1, ki, ip);
	slot_use(&c->addr, c->addr_old, ADDR_OLD, ka, addr);
	c->kind = (uint8_t)kind;
	r->type = CT_REC_SAMPLE;
	r->time = time;
	r->u.sample = (struct ct_sample){ .ip = ip, .addr = addr, .period = c->period,
		.cpu = c->cpu, .len = c->len, .kind = (uint8_t)kind, .flags = c->flags };
}

/* The SAMPLE record (the bulk of every trace): its fields into locals,
 * checked, then committed to the codec state and to r; nothing is written
 * when the record is malformed. */
static inline __attribute__((always_inline)) size_t
decode_sample_in(struct ct_codec *c, const uint8_t *p, const uint8_t *end, struct ct_record *r,
                 bool roomy)
{
	struct rd d = { p + 1, end, 1, roomy };
	uint64_t time = get_zz(&d, c->time);
	uint8_t pres = get_u8(&d);
	unsigned ka = (pres >> SP_ADDR_SHIFT) & 3, ki;
	uint64_t ip;
	if (pres & SP_RESERVED)
		return 0;
	if (pres & SP_IP_HIT) {
		ki = get_u8(&d);
		if (ki >= IP_SLOTS)
			return 0;
		ip = slot_get(c->ip, c->ip_old, ki);
	} else {
		ip = get_zz(&d, c->ip);
		ki = IP_SLOTS - 1;
	}
	uint64_t addr = get_zz(&d, slot_get(c->addr, c->addr_old, ka));
	uint8_t len = c->len, kind = (pres >> SP_KIND_SHIFT) & 3, flags = c->flags;
	uint32_t cpu = c->cpu, weight = 0;
	uint64_t period = c->period, data_src = 0;
	if (pres & SP_LEN)
		len = get_u8(&d);
	if (kind == SP_KIND_ESCAPE) {
		kind = get_u8(&d);
		if (kind < SP_KIND_ESCAPE)     /* not canonical */
			return 0;
	}
	if (__builtin_expect(pres & SP_EXT, 0)) {
		uint8_t ext = get_u8(&d);
		if (ext & ~SX_KNOWN)
			return 0;
		if (ext & SX_CPU) cpu = get_v32(&d);
		if (ext & SX_PERIOD) period = get_v(&d);
		if (ext & SX_FLAGS) flags = get_u8(&d);
		if (ext & SX_DATA_SRC) data_src = get_v(&d);
		if (ext & SX_WEIGHT) weight = get_v32(&d);
	}
	if (!d.ok)
		return 0;
	c->len = len;
	c->cpu = cpu;
	c->period = period;
	c->flags = flags;
	sample_commit(c, r, time, ki, ip, ka, addr, kind);
	r->u.sample.data_src = data_src;
	r->u.sample.weight = weight;
	return (size_t)(d.p - p);
}

/* The short SAMPLE record (version 8; SS_*), as decode_sample_in. */
static inline __attribute__((always_inline)) size_t
decode_short_in(struct ct_codec *c, const uint8_t *p, const uint8_t *end, struct ct_record *r,
                bool roomy)
{
	struct rd d = { p + 1, end, 1, roomy };
	unsigned b = p[0], kind = b & SS_KIND, ki = (b >> SS_IP_SHIFT) & 7;
	if (b & SS_RESERVED || kind == SP_KIND_ESCAPE)
		return 0;
	uint64_t time = b & SS_TIME_SAME ? c->time : get_zz(&d, c->time);
	uint64_t addr = get_zz(&d, c->addr);
	if (!d.ok)
		return 0;
	sample_commit(c, r, time, ki, slot_get(c->ip, c->ip_old, ki), 0, addr, kind);
	return (size_t)(d.p - p);
}

/* The most bytes a SAMPLE record takes (FORMAT.md: type, time, presence,
 * ip, addr, len, kind, extension, cpu, period, flags, data_src, weight),
 * and the 8 that a varint's one load may read beyond a field. */
#define SAMPLE_ROOM (1 + 10 + 1 + 10 + 10 + 1 + 1 + 1 + 5 + 10 + 1 + 10 + 5 + 8)

static inline __attribute__((always_inline)) size_t
decode_sample(struct ct_codec *c, const uint8_t *p, const uint8_t *end, struct ct_record *r)
{
	if (__builtin_expect(end - p >= SAMPLE_ROOM, 1))
		return decode_sample_in(c, p, end, r, true);
	return decode_sample_in(c, p, end, r, false);
}

static inline __attribute__((always_inline)) size_t
decode_short(struct ct_codec *c, const uint8_t *p, const uint8_t *end, struct ct_record *r)
{
	if (__builtin_expect(end - p >= SAMPLE_ROOM, 1))
		return decode_short_in(c, p, end, r, true);
	return decode_short_in(c, p, end, r, false);
}

/* Every type but SAMPLE (decode_other), roomy as in decode_sample_in. */
static inline __attribute__((always_inline)) size_t
decode_other_in(struct ct_codec *c, const uint8_t *p, const uint8_t *end, struct ct_record *r,
                bool roomy)
{
	struct rd d = { p, end, 1, roomy };
	struct ct_codec n = *c;       /* committed only on success */
	r->type = get_u8(&d);
	r->time = get_zz(&d, n.time);
	n.time = r->time;

	/* Only the member of the union that the type uses is written (all of
	 * it, zeros where the encoding leaves a field out). */
	switch (r->type) {
	case CT_REC_WP_ARM: {
		struct ct_wp_arm *a = &r->u.arm;
		memset(a, 0, sizeof *a);
		a->publisher = get_v32(&d);
		a->pub_time = get_zz(&d, r->time);
		a->pub_addr = n.addr = get_zz(&d, n.addr);
		a->pub_len = get_u8(&d);
		a->nwp = get_u8(&d);
		if (a->nwp > CT_WP_MAX)
			return 0;
		for (unsigned i = 0; i < a->nwp && d.ok; i++) {
			a->wp_addr[i] = n.addr = get_zz(&d, n.addr);
			a->wp_len[i] = get_u8(&d);
		}
		break;
	}
	case CT_REC_WP_HIT: {
		struct ct_wp_hit *h = &r->u.hit;
		memset(h, 0, sizeof *h);
		h->ip = n.ip = get_zz(&d, n.ip);
		h->addr = n.addr = get_zz(&d, n.addr);
		h->cpu = get_v32(&d);
		h->reg = get_u8(&d);
		h->len = get_u8(&d);
		h->kind = get_u8(&d);
		break;
	}
	case CT_REC_ALLOC: {
		struct ct_alloc *a = &r->u.alloc;
		memset(a, 0, sizeof *a);
		a->addr = n.addr = get_zz(&d, n.addr);
		a->size = get_v(&d);
		a->callsite = get_v32(&d);
		uint8_t k = get_u8(&d);
		a->kind = k & 0x7f;
		if (k & ALLOC_OLD_ADDR) {
			a->old_addr = get_zz(&d, a->addr);
			if (a->old_addr == 0)      /* not canonical: would not round-trip */
				return 0;
		}
		break;
	}
	case CT_REC_FREE:
		memset(&r->u.free, 0, sizeof r->u.free);
		r->u.free.addr = n.addr = get_zz(&d, n.addr);
		r->u.free.size = get_v(&d);
		r->u.free.kind = get_u8(&d);
		break;
	case CT_REC_CALLSITE: {
		struct ct_callsite *cs = &r->u.callsite;
		memset(cs, 0, sizeof *cs);
		cs->id = get_v32(&d);
		cs->depth = get_u8(&d);
		if (cs->depth > CT_CALLSITE_MAX_DEPTH)
			return 0;
		for (unsigned i = 0; i < cs->depth && d.ok; i++)
			cs->pc[i] = i ? get_zz(&d, cs->pc[i - 1]) : get_v(&d);
		break;
	}
	case CT_REC_THREAD_START: {
		struct ct_thread_start *t = &r->u.start;
		memset(t, 0, sizeof *t);
		t->stack_lo = get_v(&d);
		t->stack_hi = get_zz(&d, t->stack_lo);
		t->fs_base = get_v(&d);
		t->tls_lo = get_v(&d);
		t->tls_hi = get_zz(&d, t->tls_lo);
		break;
	}
	case CT_REC_THREAD_END: {
		memset(&r->u.end, 0, sizeof r->u.end);
		int64_t st = (int64_t)unzz(get_v(&d));
		if (st < INT32_MIN || st > INT32_MAX)
			return 0;
		r->u.end.status = (int32_t)st;
		break;
	}
	case CT_REC_MARKER: {
		memset(&r->u.marker, 0, sizeof r->u.marker);
		r->u.marker.kind = get_u8(&d);
		uint8_t len = get_u8(&d);
		if (!d.ok || len > CT_MARKER_NAME_MAX || (size_t)(d.end - d.p) < len)
			return 0;
		if (memchr(d.p, 0, len))
			return 0;
		memcpy(r->u.marker.name, d.p, len);
		r->u.marker.name[len] = 0;
		d.p += len;
		break;
	}
	case CT_REC_LOST:
		memset(&r->u.lost, 0, sizeof r->u.lost);
		r->u.lost.reason = get_u8(&d);
		r->u.lost.count = get_v(&d);
		break;
	case CT_REC_SKIPPED:
		memset(&r->u.skipped, 0, sizeof r->u.skipped);
		r->u.skipped.reason = get_u8(&d);
		r->u.skipped.count = get_v(&d);
		break;
	case CT_REC_FUNC_ENTER:
		memset(&r->u.func, 0, sizeof r->u.func);
		r->u.func.addr = n.ip = get_zz(&d, n.ip);
		break;
	case CT_REC_FUNC_EXIT:
		memset(&r->u.func, 0, sizeof r->u.func);
		r->u.func.addr = get_v(&d);
		break;
	case CT_REC_OWNER_XFER: {
		struct ct_owner_xfer *x = &r->u.oxfer;
		memset(x, 0, sizeof *x);
		x->ip = n.ip = get_zz(&d, n.ip);
		x->addr = n.addr = get_zz(&d, n.addr);
		x->src = get_v32(&d);
		x->windows = get_v32(&d);
		x->prior = get_v(&d);
		x->len = get_u8(&d);
		x->kind = get_u8(&d);
		x->flags = get_u8(&d);
		/* what no monitor writes: no window, an empty or over-long access,
		 * an unknown kind or flag */
		if (!x->windows || !x->len || x->len > 128 || x->kind > CT_ACCESS_ATOMIC ||
		    (x->flags & ~CT_OWNER_TRUE))
			return 0;
		break;
	}
	case CT_REC_OWNER_WIN:
		memset(&r->u.owin, 0, sizeof r->u.owin);
		r->u.owin.addr = n.addr = get_zz(&d, n.addr);
		r->u.owin.status = get_u8(&d);
		if (r->u.owin.status > CT_OWNER_OPEN_MAX)
			return 0;
		break;
	default:
		return 0;
	}
	if (!d.ok)
		return 0;
	*c = n;
	return (size_t)(d.p - p);
}

/* Every type but SAMPLE (ct_decode_record), out of the SAMPLE loop's way:
 * without a check of the end for each byte where the longest record (a
 * CALLSITE, 182 bytes; at most CT_RECORD_MAX_BYTES) and a varint's load
 * of 8 bytes past it are there. */
static __attribute__((noinline)) size_t decode_other(struct ct_codec *c, const uint8_t *p,
                                                     const uint8_t *end, struct ct_record *r)
{
	if (end - p >= CT_RECORD_MAX_BYTES + 8)
		return decode_other_in(c, p, end, r, true);
	return decode_other_in(c, p, end, r, false);
}

static inline __attribute__((always_inline)) size_t
decode_one(struct ct_codec *c, const uint8_t *p, const uint8_t *end, struct ct_record *r)
{
	if (p >= end)
		return 0;
	if (__builtin_expect(*p & SS_MARK, 1))
		return decode_short(c, p, end, r);
	if (__builtin_expect(*p == CT_REC_SAMPLE, 1))
		return decode_sample(c, p, end, r);
	return decode_other(c, p, end, r);
}

size_t ct_decode_record(struct ct_codec *c, const uint8_t *p, const uint8_t *end,
                        struct ct_record *r)
{
	return decode_one(c, p, end, r);
}

#define MEMBER_BYTES(m) (offsetof(struct ct_record, u) + sizeof ((struct ct_record *)0)->u.m)
#define PACKED(m) ((MEMBER_BYTES(m) + _Alignof(struct ct_record) - 1) / _Alignof(struct ct_record) \
                   * _Alignof(struct ct_record))
const uint8_t cti_packed_bytes[CT_REC_TYPE_MAX + 1] = {
	[CT_REC_SAMPLE] = PACKED(sample), [CT_REC_WP_ARM] = PACKED(arm),
	[CT_REC_WP_HIT] = PACKED(hit), [CT_REC_ALLOC] = PACKED(alloc),
	[CT_REC_FREE] = PACKED(free), [CT_REC_CALLSITE] = PACKED(callsite),
	[CT_REC_THREAD_START] = PACKED(start), [CT_REC_THREAD_END] = PACKED(end),
	[CT_REC_MARKER] = PACKED(marker), [CT_REC_LOST] = PACKED(lost),
	[CT_REC_FUNC_ENTER] = PACKED(func), [CT_REC_FUNC_EXIT] = PACKED(func),
	[CT_REC_SKIPPED] = PACKED(skipped),
	[CT_REC_OWNER_XFER] = PACKED(oxfer), [CT_REC_OWNER_WIN] = PACKED(owin),
};

/* A varint of at most 5 bytes at p (the bytes are there): its end, or
 * NULL when it is longer (the generic get_v takes it). */
static inline const uint8_t *get_v5(const uint8_t *p, uint64_t *v)
{
	uint64_t b = p[0];
	if (b < 0x80) {
		*v = b;
		return p + 1;
	}
	/* unrolled: a loop here cost a third of the decoding; each byte is
	 * tested before it is added (the last one needs no mask) */
	uint64_t x = b & 0x7f;
	if ((b = p[1]) < 0x80) {
		*v = x | b << 7;
		return p + 2;
	}
	x |= (b & 0x7f) << 7;
	if ((b = p[2]) < 0x80) {
		*v = x | b << 14;
		return p + 3;
	}
	x |= (b & 0x7f) << 14;
	if ((b = p[3]) < 0x80) {
		*v = x | b << 21;
		return p + 4;
	}
	x |= (b & 0x7f) << 21;
	b = p[4];
	*v = x | (b & 0x7f) << 28;
	return b < 0x80 ? p + 5 : NULL;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* get_v5 without a branch on the length, from one 8-byte load (the bytes
 * are there), as get_v_word does up to 8 bytes in more steps: for the
 * address deltas of a sampled trace, whose lengths vary from one record
 * to the next where get_v5's branches were mispredicted.  Where the
 * lengths repeat (the time and ip deltas, a full trace's address deltas)
 * get_v5 is quicker. */
static inline const uint8_t *get_v5_flat(const uint8_t *p, uint64_t *v)
{
	uint64_t x;
	memcpy(&x, p, sizeof x);
	uint64_t stop = ~x & 0x8080808080ull;
	if (!stop)
		return NULL;
	unsigned bits = (unsigned)__builtin_ctzll(stop) + 1;    /* 8 x bytes */
	x &= (1ull << bits) - 1;
	*v = (x & 0x7f) | (x & 0x7f00) >> 1 | (x & 0x7f0000) >> 2 | (x & 0x7f000000) >> 3 |
	     (x & 0x7f00000000) >> 4;
	return p + bits / 8;
}
#else
#define get_v5_flat get_v5
#endif

/* The fast path of cti_decode_packed: up to n SAMPLE records of the usual
 * shape (short ones, or no extension byte, kind 0..2, a recent ip's slot below IP_SLOTS,
 * varints of at most 5 bytes, the whole record in reach) into out, one
 * after another (packed), with the codec's scalars in registers.  It
 * stops before the first record of any other shape or type, which
 * decode_one then takes (every record this path takes, decode_one would
 * take the same way).  Returns the records decoded.  flat_addr: the
 * address deltas by get_v5_flat. */
static inline __attribute__((always_inline)) uint32_t
decode_sample_run_with(struct ct_codec *c, const uint8_t **pp, const uint8_t *end,
                       uint32_t thread, uint32_t n, uint8_t *out, bool flat_addr)
{
	const uint8_t *p = *pp;
	uint64_t time = c->time, ip = c->ip, addr = c->addr;
	uint8_t len = c->len, kind = c->kind;
	/* what every record of the run shares (type, thread, period, data_src,
	 * weight, cpu, flags): copied as a block, the fields that change
	 * written over it (fewer stores than field by field) */
	struct ct_record same;
	memset(&same, 0, PACKED(sample));
	same.type = CT_REC_SAMPLE;
	same.thread = thread;
	same.u.sample.period = c->period;
	same.u.sample.cpu = c->cpu;
	same.u.sample.flags = c->flags;
	/* the loop's bounds as pointers: the last start of a whole record in
	 * reach, the end of the room for n records (fewer registers) */
	if (end - p < SAMPLE_ROOM)
		return 0;
	const uint8_t *last = end - SAMPLE_ROOM;
	struct ct_record *r = (void *)out, *rend = (void *)(out + (size_t)n * PACKED(sample));
	for (; r < rend && p <= last && (*p == CT_REC_SAMPLE || *p & SS_MARK);
	     r = (void *)((uint8_t *)r + PACKED(sample))) {
		uint64_t v;
		const uint8_t *q = p + 1;
		uint64_t t = time;
		/* a short SAMPLE: the presence byte of the same SAMPLE */
		uint8_t pres = (uint8_t)((*p & SS_KIND) << SP_KIND_SHIFT | SP_IP_HIT);
		if (*p & SS_MARK) {
			if (*p & SS_RESERVED)
				break;
			if (!(*p & SS_TIME_SAME)) {
				if (!(q = get_v5(q, &v)))
					break;
				t += unzz(v);
			}
		} else {
			if (!(q = get_v5(q, &v)))
				break;
			t += unzz(v);
			pres = *q++;
		}
		unsigned k = (pres >> SP_KIND_SHIFT) & 3;
		if (pres & (SP_RESERVED | SP_EXT) || k == SP_KIND_ESCAPE)
			break;
		unsigned ki = IP_SLOTS - 1;
		uint64_t nip;
		if (*p & SS_MARK) {
			ki = (*p >> SS_IP_SHIFT) & 7;
			nip = slot_get(ip, c->ip_old, ki);
		} else if (pres & SP_IP_HIT) {
			ki = *q++;
			if (ki >= IP_SLOTS)
				break;
			nip = slot_get(ip, c->ip_old, ki);
		} else {
			if (!(q = get_v5(q, &v)))
				break;
			nip = ip + unzz(v);
		}
		unsigned ka = (pres >> SP_ADDR_SHIFT) & 3;
		if (!(q = flat_addr ? get_v5_flat(q, &v) : get_v5(q, &v)))
			break;
		uint64_t naddr = slot_get(addr, c->addr_old, ka) + unzz(v);
		if (pres & SP_LEN)
			len = *q++;
		kind = (uint8_t)k;
		time = t;
		slot_use(&ip, c->ip_old, IP_SLOTS - 1, ki, nip);
		slot_use(&addr, c->addr_old, ADDR_OLD, ka, naddr);
		memcpy(r, &same, PACKED(sample));
		r->time = t;
		r->u.sample.ip = nip;
		r->u.sample.addr = naddr;
		r->u.sample.len = len;
		r->u.sample.kind = kind;
		p = q;
	}
	c->time = time;
	c->ip = ip;
	c->addr = addr;
	c->len = len;
	c->kind = kind;
	*pp = p;
	return (uint32_t)(((uint8_t *)r - out) / PACKED(sample));
}

/* decode_sample_run_with, the address deltas without branches where the
 * run starts with a long SAMPLE record: a sampled trace's records are
 * long, a full trace's mostly short (a choice a run, not a test a
 * record: that cost most of what get_v5_flat saves). */
static uint32_t decode_sample_run(struct ct_codec *c, const uint8_t **pp, const uint8_t *end,
                                  uint32_t thread, uint32_t n, uint8_t *out)
{
	if (*pp < end && **pp == CT_REC_SAMPLE)
		return decode_sample_run_with(c, pp, end, thread, n, out, true);
	return decode_sample_run_with(c, pp, end, thread, n, out, false);
}

uint32_t cti_decode_packed(struct ct_codec *c, const uint8_t **pp, const uint8_t *end,
                           uint32_t thread, uint32_t n, uint8_t *out, size_t cap, size_t *used)
{
	/* the state in a local: the stores into the records (uint8_t type)
	 * could alias it and would reload it after every record */
	struct ct_codec st = *c;
	const uint8_t *p = *pp;
	size_t at = 0;
	uint32_t i = 0;
	while (i < n && cap - at >= sizeof(struct ct_record)) {
		/* as many samples as keep a whole struct's room after their start */
		size_t room = (cap - at - sizeof(struct ct_record)) / PACKED(sample) + 1;
		uint32_t k = decode_sample_run(&st, &p, end, thread, room < n - i ? (uint32_t)room : n - i,
		                               out + at);
		i += k;
		at += (size_t)k * PACKED(sample);
		if (i == n || cap - at < sizeof(struct ct_record))
			break;
		struct ct_record *r = (struct ct_record *)(void *)(out + at);
		size_t len = decode_one(&st, p, end, r);
		if (!len)
			break;
		r->thread = thread;
		at += cti_packed_bytes[r->type];
		p += len;
		i++;
	}
	*c = st;
	*pp = p;
	*used = at;
	return i;
}

/* ---- fixed-layout structures (little-endian, FORMAT.md) ------------------- */

static void put16(uint8_t *o, uint16_t v) { o[0] = (uint8_t)v; o[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *o, uint32_t v) { put16(o, (uint16_t)v); put16(o + 2, (uint16_t)(v >> 16)); }
static void put64(uint8_t *o, uint64_t v) { put32(o, (uint32_t)v); put32(o + 4, (uint32_t)(v >> 32)); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const uint8_t *p) { return get16(p) | (uint32_t)get16(p + 2) << 16; }
static uint64_t get64(const uint8_t *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }

void ct_header_encode(const struct ct_header *h, uint8_t out[CT_HEADER_BYTES])
{
	put16(out + 0, h->version);
	put16(out + 2, h->min_version);
	put32(out + 4, 0);
	put64(out + 8, h->features);
	put64(out + 16, h->created_ns);
}

int ct_header_decode(const void *vp, size_t len, struct ct_header *h)
{
	const uint8_t *p = vp;
	if (len < CT_HEADER_BYTES)
		return -1;
	memset(h, 0, sizeof *h);
	h->version = get16(p + 0);
	h->min_version = get16(p + 2);
	h->features = get64(p + 8);
	h->created_ns = get64(p + 16);
	return 0;
}

void ct_thread_info_encode(const struct ct_thread_info *ti, uint8_t out[CT_THREAD_INFO_BYTES])
{
	put32(out + 0, ti->index);
	put32(out + 4, ti->parent);
	put32(out + 8, (uint32_t)ti->tid);
	put32(out + 12, (uint32_t)ti->pid);
	put64(out + 16, ti->start_ns);
	memset(out + 24, 0, 16);
	memcpy(out + 24, ti->name, strnlen(ti->name, 15));
}

void ct_counts_encode(uint32_t index, uint32_t flags, const struct ct_counts *c,
                      uint8_t out[CT_COUNTS_BYTES])
{
	put32(out + 0, index);
	put32(out + 4, flags);
	put64(out + 8, c->produced);
	put64(out + 16, c->buffer_full);
	put64(out + 24, c->added);
	put64(out + 32, c->write_error);
}

int ct_counts_decode(const void *vp, size_t len, uint32_t *index, uint32_t *flags,
                     struct ct_counts *c)
{
	const uint8_t *p = vp;
	if (len < CT_COUNTS_BYTES)
		return -1;
	*index = get32(p + 0);
	*flags = get32(p + 4);
	c->produced = get64(p + 8);
	c->buffer_full = get64(p + 16);
	c->added = get64(p + 24);
	c->write_error = get64(p + 32);
	return 0;
}

int ct_thread_info_decode(const void *vp, size_t len, struct ct_thread_info *ti)
{
	const uint8_t *p = vp;
	if (len < CT_THREAD_INFO_BYTES)
		return -1;
	memset(ti, 0, sizeof *ti);
	ti->index = get32(p + 0);
	ti->parent = get32(p + 4);
	ti->tid = (int32_t)get32(p + 8);
	ti->pid = (int32_t)get32(p + 12);
	ti->start_ns = get64(p + 16);
	memcpy(ti->name, p + 24, 15);   /* name[15] stays NUL */
	return 0;
}
