/* Record codec: every record type round-trips exactly, edge values
 * included; malformed bytes are refused without reading past the end. */
#include <stdlib.h>

#include "check.h"
#include "commtrace.h"
#include "container.h"

static struct ct_record recs[64];
static size_t nrecs;

static struct ct_record *add(uint8_t type, uint64_t time)
{
	struct ct_record *r = &recs[nrecs++];
	memset(r, 0, sizeof *r);
	r->type = type;
	r->time = time;
	return r;
}

static void build(void)
{
	struct ct_record *r;
	nrecs = 0;
	r = add(CT_REC_SAMPLE, 1000);
	r->u.sample = (struct ct_sample){ .ip = 0x401000, .addr = 0x7fff0000, .period = 10007,
		.cpu = 3, .len = 8, .kind = CT_ACCESS_STORE, .flags = CT_SAMPLE_EXACT };
	r = add(CT_REC_SAMPLE, 999);                       /* time goes back */
	r->u.sample = (struct ct_sample){ .ip = 0x400000, .addr = 0x1000, .period = 10007,
		.cpu = 3, .len = 8, .kind = CT_ACCESS_STORE, .flags = CT_SAMPLE_EXACT };
	r = add(CT_REC_SAMPLE, UINT64_MAX);
	r->u.sample = (struct ct_sample){ .ip = UINT64_MAX, .addr = UINT64_MAX, .period = UINT64_MAX,
		.data_src = UINT64_MAX, .weight = UINT32_MAX, .cpu = UINT32_MAX, .len = 255, .kind = 255,
		.flags = 0xff };
	r = add(CT_REC_SAMPLE, 0);
	r->u.sample = (struct ct_sample){ 0 };
	r = add(CT_REC_SAMPLE, 5);
	r->u.sample = (struct ct_sample){ .ip = 1, .addr = UINT64_MAX - 1, .period = 1, .data_src = 0x1234,
		.cpu = 0, .len = 1, .kind = CT_ACCESS_ATOMIC, .flags = CT_SAMPLE_RECONSTRUCTED | CT_SAMPLE_PREV_INSN };
	r = add(CT_REC_WP_ARM, 6);
	r->u.arm = (struct ct_wp_arm){ .pub_time = 1, .pub_addr = 0x601040, .publisher = 7, .pub_len = 4,
		.nwp = CT_WP_MAX, .wp_len = { 1, 2, 4, 8 },
		.wp_addr = { 0x601040, 0x601048, 0, UINT64_MAX } };
	r = add(CT_REC_WP_ARM, 7);
	r->u.arm = (struct ct_wp_arm){ .pub_time = UINT64_MAX, .pub_addr = 0, .publisher = UINT32_MAX,
		.nwp = 1, .wp_len = { 8 }, .wp_addr = { 0x10 } };
	r = add(CT_REC_WP_HIT, 8);
	r->u.hit = (struct ct_wp_hit){ .ip = 0x401234, .addr = 0x601048, .cpu = 2, .reg = 1, .len = 8,
		.kind = CT_ACCESS_LOAD };
	r = add(CT_REC_WP_HIT, 8);
	r->u.hit = (struct ct_wp_hit){ .ip = 0, .addr = UINT64_MAX, .cpu = UINT32_MAX, .reg = 255,
		.len = 255, .kind = 255 };
	r = add(CT_REC_CALLSITE, 9);
	r->u.callsite.id = UINT32_MAX;
	r->u.callsite.depth = CT_CALLSITE_MAX_DEPTH;
	for (int i = 0; i < CT_CALLSITE_MAX_DEPTH; i++)
		r->u.callsite.pc[i] = i & 1 ? UINT64_MAX - (uint64_t)i : 0x400000 + 16 * (uint64_t)i;
	r = add(CT_REC_CALLSITE, 9);
	r->u.callsite.id = 0;
	r->u.callsite.depth = 1;
	r->u.callsite.pc[0] = UINT64_MAX;
	r = add(CT_REC_ALLOC, 10);
	r->u.alloc = (struct ct_alloc){ .addr = 0x5555000, .size = 4096, .callsite = 1,
		.kind = CT_ALLOC_MALLOC };
	r = add(CT_REC_ALLOC, 11);
	r->u.alloc = (struct ct_alloc){ .addr = UINT64_MAX, .size = UINT64_MAX, .old_addr = 1,
		.callsite = UINT32_MAX, .kind = CT_ALLOC_REALLOC };
	r = add(CT_REC_ALLOC, 11);
	r->u.alloc = (struct ct_alloc){ .addr = 0, .size = 0, .old_addr = UINT64_MAX,
		.kind = CT_ALLOC_MMAP };
	r = add(CT_REC_FREE, 12);
	r->u.free = (struct ct_free){ .addr = 0x5555000, .size = 0, .kind = 0 };
	r = add(CT_REC_FREE, 12);
	r->u.free = (struct ct_free){ .addr = UINT64_MAX, .size = UINT64_MAX, .kind = 1 };
	r = add(CT_REC_THREAD_START, 13);
	r->u.start = (struct ct_thread_start){ .stack_lo = 0x7f0000000000, .stack_hi = 0x7f0000800000,
		.fs_base = 0x7f0000900000, .tls_lo = UINT64_MAX, .tls_hi = 0 };
	r = add(CT_REC_THREAD_END, 14);
	r->u.end.status = INT32_MIN;
	r = add(CT_REC_THREAD_END, 14);
	r->u.end.status = INT32_MAX;
	r = add(CT_REC_THREAD_END, 14);
	r->u.end.status = -1;
	r = add(CT_REC_MARKER, 15);
	r->u.marker.kind = CT_MARK_REGION_BEGIN;
	memset(r->u.marker.name, 'x', CT_MARKER_NAME_MAX);  /* 63 chars, NUL after */
	r->u.marker.name[0] = 'A';
	r->u.marker.name[CT_MARKER_NAME_MAX - 1] = 'Z';
	r = add(CT_REC_MARKER, 15);
	r->u.marker.kind = CT_MARK_PHASE;                  /* empty name */
	r = add(CT_REC_LOST, 16);
	r->u.lost = (struct ct_lost){ .reason = CT_LOST_BUFFER_FULL, .count = UINT64_MAX };
	r = add(CT_REC_SKIPPED, 17);
	r->u.skipped = (struct ct_skipped){ .reason = CT_SKIP_KERNEL, .count = 42 };
	r = add(CT_REC_FUNC_ENTER, 18);
	r->u.func.addr = 0x401000;
	r = add(CT_REC_FUNC_EXIT, 19);
	r->u.func.addr = 0;
	r = add(CT_REC_FUNC_ENTER, 20);
	r->u.func.addr = 0;
	r = add(CT_REC_FUNC_EXIT, 21);
	r->u.func.addr = UINT64_MAX;
	r = add(CT_REC_OWNER_WIN, 22);
	r->u.owin = (struct ct_owner_win){ .addr = 0x601040, .status = CT_OWNER_OPENED };
	r = add(CT_REC_OWNER_XFER, 23);
	r->u.oxfer = (struct ct_owner_xfer){ .ip = 0x401000, .addr = 0x601048, .prior = UINT64_MAX,
		.src = UINT32_MAX, .windows = UINT32_MAX, .len = 128, .kind = CT_ACCESS_ATOMIC,
		.flags = CT_OWNER_TRUE };
	r = add(CT_REC_OWNER_XFER, 23);
	r->u.oxfer = (struct ct_owner_xfer){ .ip = 0, .addr = UINT64_MAX, .prior = 0, .src = 0,
		.windows = 1, .len = 1, .kind = CT_ACCESS_LOAD };
	r = add(CT_REC_OWNER_WIN, 24);
	r->u.owin = (struct ct_owner_win){ .addr = 0, .status = CT_OWNER_OPEN_MAX };
	r = add(CT_REC_SAMPLE, 0);                       /* after everything: state reused */
	r->u.sample = (struct ct_sample){ .ip = 0x401000, .addr = 0x7fff0000, .period = 10007,
		.cpu = 3, .len = 8, .kind = CT_ACCESS_STORE, .flags = CT_SAMPLE_EXACT, .weight = 77 };
}

static uint8_t buf[64 * CT_RECORD_MAX_BYTES];
static size_t buflen, ends[64];

static void encode_all(void)
{
	struct ct_codec c;
	ct_codec_reset(&c);
	buflen = 0;
	for (size_t i = 0; i < nrecs; i++) {
		size_t n = ct_encode_record(&c, &recs[i], buf + buflen);
		CHECK(n > 0 && n <= CT_RECORD_MAX_BYTES);
		buflen += n;
		ends[i] = buflen;
	}
}

static void test_roundtrip_every_type(void)
{
	bool seen[CT_REC_TYPE_MAX + 1] = { 0 };
	build();
	encode_all();
	struct ct_codec c;
	ct_codec_reset(&c);
	const uint8_t *p = buf, *end = buf + buflen;
	for (size_t i = 0; i < nrecs; i++) {
		struct ct_record r;
		memset(&r, 0, sizeof r);
		r.thread = 1234;
		size_t n = ct_decode_record(&c, p, end, &r);
		CHECK_EQ_U(n, ends[i] - (size_t)(p - buf));
		CHECK_EQ_U(r.thread, 1234);            /* left unchanged */
		r.thread = 0;
		if (memcmp(&r, &recs[i], sizeof r)) {
			printf("record %zu (%s) differs\n", i, ct_rec_type_name(recs[i].type));
			CHECK(!"record round-trips");
		}
		seen[r.type] = true;
		p += n;
	}
	CHECK(p == end);
	for (int t = 1; t <= CT_REC_TYPE_MAX; t++)
		CHECK(seen[t]);
}

/* Decoding any prefix of a valid record fails cleanly; run under ASAN with
 * the bytes copied to an exact-size heap buffer so any over-read shows. */
static void test_truncated_records(void)
{
	build();
	encode_all();
	size_t start = 0;
	for (size_t i = 0; i < nrecs; i++) {
		/* decode state as it is before record i */
		struct ct_codec c;
		ct_codec_reset(&c);
		struct ct_record r;
		const uint8_t *p = buf;
		for (size_t k = 0; k < i; k++)
			p += ct_decode_record(&c, p, buf + buflen, &r);
		CHECK(p == buf + start);
		size_t len = ends[i] - start;
		for (size_t cut = 0; cut < len; cut++) {
			uint8_t *h = malloc(cut ? cut : 1);
			memcpy(h, buf + start, cut);
			struct ct_codec c2 = c;
			CHECK_EQ_U(ct_decode_record(&c2, h, h + cut, &r), 0);
			CHECK(!memcmp(&c2, &c, sizeof c));   /* state untouched on failure */
			free(h);
		}
		start = ends[i];
	}
}

static size_t dec1(const uint8_t *b, size_t n)
{
	struct ct_codec c;
	struct ct_record r;
	ct_codec_reset(&c);
	uint8_t *h = malloc(n ? n : 1);
	memcpy(h, b, n);
	size_t got = ct_decode_record(&c, h, h + n, &r);
	free(h);
	return got;
}

static void test_malformed_records(void)
{
	/* unknown types */
	CHECK_EQ_U(dec1((const uint8_t[]){ 0, 0 }, 2), 0);
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_TYPE_MAX + 1, 0, 0, 0 }, 4), 0);
	CHECK_EQ_U(dec1((const uint8_t[]){ 0xff, 0, 0, 0 }, 4), 0);
	/* overlong varint: 11 continuation bytes; 10th byte > 1 */
	uint8_t ol[16] = { CT_REC_LOST };
	memset(ol + 1, 0x80, 11);
	ol[12] = 0;
	CHECK_EQ_U(dec1(ol, 13), 0);
	uint8_t ov[12] = { CT_REC_LOST, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 1 };
	CHECK_EQ_U(dec1(ov, 12), 0);
	/* the largest valid varint is accepted */
	uint8_t mx[13] = { CT_REC_LOST, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 1, 0 };
	CHECK_EQ_U(dec1(mx, 13), 13);
	/* callsite depth too large */
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_CALLSITE, 0, 1, CT_CALLSITE_MAX_DEPTH + 1, 0, 0, 0, 0, 0, 0, 0,
	                                   0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }, 22), 0);
	/* marker name too long, or with a NUL inside */
	uint8_t mk[80] = { CT_REC_MARKER, 0, 0, CT_MARKER_NAME_MAX + 1 };
	memset(mk + 4, 'a', 70);
	CHECK_EQ_U(dec1(mk, 80), 0);
	mk[3] = 3;
	CHECK_EQ_U(dec1(mk, 7), 7);
	mk[5] = 0;
	CHECK_EQ_U(dec1(mk, 7), 0);
	/* sample kind escape (presence bits 2-3 = 3) with a kind that fits the bits */
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_SAMPLE, 0, 0x0c, 0, 0, 1 }, 6), 0);
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_SAMPLE, 0, 0x0c, 0, 0, 3 }, 6), 6);
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_SAMPLE, 0, 0x38, 0, 0 }, 5), 5);
	/* reserved presence bit 7; ip slot index out of range */
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_SAMPLE, 0, 0x80, 0, 0 }, 5), 0);
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_SAMPLE, 0, 0x40, 7, 0 }, 5), 5);
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_SAMPLE, 0, 0x40, 8, 0 }, 5), 0);
	/* short samples (v8): the reserved bit, kind 3, cut short; valid ones
	 * (time delta 0 written or not, code slot 7, kind 2) */
	CHECK_EQ_U(dec1((const uint8_t[]){ 0x80 | 0x40, 0, 0 }, 3), 0);
	CHECK_EQ_U(dec1((const uint8_t[]){ 0x80 | 0x20 | 3, 0 }, 2), 0);
	CHECK_EQ_U(dec1((const uint8_t[]){ 0x80, 0 }, 2), 0);
	CHECK_EQ_U(dec1((const uint8_t[]){ 0x80 | 0x20 }, 1), 0);
	CHECK_EQ_U(dec1((const uint8_t[]){ 0x80, 0, 0 }, 3), 3);
	CHECK_EQ_U(dec1((const uint8_t[]){ 0x80 | 0x20 | 7 << 2 | 2, 0x81, 0x01 }, 3), 3);
	/* sample extension byte with reserved bits */
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_SAMPLE, 0, 0x01, 0, 0, 0x20 }, 6), 0);
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_SAMPLE, 0, 0x01, 0, 0, 0x00 }, 6), 6);
	/* line monitor records (v4): no window, an empty or over-long access,
	 * an unknown kind or flag, an unknown window status; then valid ones
	 * (type, time, ip, addr, src, windows, prior, len, kind, flags) */
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_OWNER_XFER, 0, 0, 0, 1, 0, 0, 8, 0, 1 }, 10), 0);
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_OWNER_XFER, 0, 0, 0, 1, 1, 0, 0, 0, 1 }, 10), 0);
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_OWNER_XFER, 0, 0, 0, 1, 1, 0, 129, 0, 1 }, 10), 0);
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_OWNER_XFER, 0, 0, 0, 1, 1, 0, 8, 3, 1 }, 10), 0);
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_OWNER_XFER, 0, 0, 0, 1, 1, 0, 8, 0, 2 }, 10), 0);
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_OWNER_XFER, 0, 0, 0, 1, 1, 0, 8, 0, 1 }, 10), 10);
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_OWNER_XFER, 0, 0, 0, 1, 1, 0, 128, 2, 0 }, 10), 10);
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_OWNER_XFER, 0, 0, 0, 1, 1, 0, 8, 0 }, 9), 0);
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_OWNER_WIN, 0, 0, CT_OWNER_OPEN_MAX + 1 }, 4), 0);
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_OWNER_WIN, 0, 0, CT_OWNER_OPEN_MAX }, 4), 4);
	/* nwp > CT_WP_MAX */
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_WP_ARM, 0, 0, 0, 0, 8, CT_WP_MAX + 1, 0, 8, 0, 8, 0, 8,
	                                   0, 8, 0, 8 }, 17), 0);
	/* u32 field above UINT32_MAX (cpu of a hit) */
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_WP_HIT, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0, 0 }, 12), 0);
	/* thread end status outside int32 */
	CHECK_EQ_U(dec1((const uint8_t[]){ CT_REC_THREAD_END, 0, 0x80, 0x80, 0x80, 0x80, 0x10 }, 7), 0);
	/* empty input */
	CHECK_EQ_U(dec1((const uint8_t[]){ 0 }, 0), 0);
	/* encoder refuses unknown types without writing state */
	struct ct_codec c;
	struct ct_record r = { .type = 0, .time = 5 };
	ct_codec_reset(&c);
	CHECK_EQ_U(ct_encode_record(&c, &r, buf), 0);
	r.type = CT_REC_TYPE_MAX + 1;
	CHECK_EQ_U(ct_encode_record(&c, &r, buf), 0);
	CHECK_EQ_U(c.time, 0);
}

/* Random records (within the codec's documented ranges) round-trip. */
static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
	return check_xorshift(&rng);
}

static uint64_t rval(void)
{
	switch (rnd() % 4) {
	case 0: return rnd();
	case 1: return rnd() & 0xff;
	case 2: return UINT64_MAX - (rnd() & 3);
	default: return 0x400000 + (rnd() & 0xfffff);
	}
}

static void random_record(struct ct_record *r)
{
	memset(r, 0, sizeof *r);
	r->type = (uint8_t)(1 + rnd() % CT_REC_TYPE_MAX);
	r->time = rval();
	switch (r->type) {
	case CT_REC_SAMPLE:
		r->u.sample = (struct ct_sample){ rval(), rval(), rval(), rval(), (uint32_t)rval(),
			(uint32_t)rval(), (uint8_t)rnd(), (uint8_t)rnd(), (uint8_t)rnd() };
		break;
	case CT_REC_WP_ARM:
		r->u.arm.pub_time = rval();
		r->u.arm.pub_addr = rval();
		r->u.arm.publisher = (uint32_t)rval();
		r->u.arm.pub_len = (uint8_t)rnd();
		r->u.arm.nwp = (uint8_t)(rnd() % (CT_WP_MAX + 1));
		for (int i = 0; i < r->u.arm.nwp; i++) {
			r->u.arm.wp_addr[i] = rval();
			r->u.arm.wp_len[i] = (uint8_t)rnd();
		}
		break;
	case CT_REC_WP_HIT:
		r->u.hit = (struct ct_wp_hit){ rval(), rval(), (uint32_t)rval(), (uint8_t)rnd(),
			(uint8_t)rnd(), (uint8_t)rnd() };
		break;
	case CT_REC_ALLOC:
		r->u.alloc = (struct ct_alloc){ rval(), rval(), rnd() & 1 ? rval() : 0, (uint32_t)rval(),
			(uint8_t)(rnd() & 0x7f) };
		break;
	case CT_REC_FREE:
		r->u.free = (struct ct_free){ rval(), rval(), (uint8_t)rnd() };
		break;
	case CT_REC_CALLSITE:
		r->u.callsite.id = (uint32_t)rval();
		r->u.callsite.depth = (uint8_t)(rnd() % (CT_CALLSITE_MAX_DEPTH + 1));
		for (int i = 0; i < r->u.callsite.depth; i++)
			r->u.callsite.pc[i] = rval();
		break;
	case CT_REC_THREAD_START:
		r->u.start = (struct ct_thread_start){ rval(), rval(), rval(), rval(), rval() };
		break;
	case CT_REC_THREAD_END:
		r->u.end.status = (int32_t)rnd();
		break;
	case CT_REC_MARKER: {
		r->u.marker.kind = (uint8_t)rnd();
		int n = (int)(rnd() % (CT_MARKER_NAME_MAX + 1));
		for (int i = 0; i < n; i++)
			r->u.marker.name[i] = (char)(1 + rnd() % 255);
		break;
	}
	case CT_REC_LOST:
		r->u.lost = (struct ct_lost){ (uint8_t)rnd(), rval() };
		break;
	case CT_REC_SKIPPED:
		r->u.skipped = (struct ct_skipped){ (uint8_t)rnd(), rval() };
		break;
	case CT_REC_OWNER_XFER:                     /* the values a decoder accepts */
		r->u.oxfer = (struct ct_owner_xfer){ rval(), rval(), rval(), (uint32_t)rval(),
			1 + (uint32_t)(rnd() % UINT32_MAX), (uint8_t)(1 + rnd() % 128),
			(uint8_t)(rnd() % 3), (uint8_t)(rnd() & CT_OWNER_TRUE) };
		break;
	case CT_REC_OWNER_WIN:
		r->u.owin = (struct ct_owner_win){ rval(), (uint8_t)(rnd() % (CT_OWNER_OPEN_MAX + 1)) };
		break;
	default:
		r->u.func.addr = rval();
	}
}

static void test_random_roundtrip(void)
{
	static uint8_t big[4096 * CT_RECORD_MAX_BYTES];
	static struct ct_record in[4096];
	struct ct_codec c;
	size_t len = 0;
	ct_codec_reset(&c);
	for (int i = 0; i < 4096; i++) {
		random_record(&in[i]);
		size_t n = ct_encode_record(&c, &in[i], big + len);
		CHECK(n > 0 && n <= CT_RECORD_MAX_BYTES);
		len += n;
	}
	ct_codec_reset(&c);
	const uint8_t *p = big;
	for (int i = 0; i < 4096; i++) {
		struct ct_record r;
		memset(&r, 0, sizeof r);             /* the decoder writes one union member */
		size_t n = ct_decode_record(&c, p, big + len, &r);
		CHECK(n > 0);
		if (!n)
			return;
		r.thread = 0;
		CHECK(!memcmp(&r, &in[i], sizeof r));
		p += n;
	}
	CHECK(p == big + len);
}

/* ct_encode_samples (a run of SAMPLE records, the recorder's writer) writes
 * the bytes that ct_encode_record writes record by record, with the codec
 * in the same state after; it takes records while CT_RECORD_MAX_BYTES of
 * room remain, and none with less. */
static void test_encode_samples_run(void)
{
	enum { N = 3000 };
	static uint8_t one[N * CT_RECORD_MAX_BYTES], run[N * CT_RECORD_MAX_BYTES];
	static struct ct_record in[N];
	uint64_t ips[5] = { 0x401000, 0x401008, 0x401010, 0x7f0000001234, 0x401000 - 4096 };
	for (int i = 0; i < N; i++) {
		memset(&in[i], 0, sizeof in[i]);
		in[i].type = CT_REC_SAMPLE;
		in[i].time = 1000 + (uint64_t)i * (rnd() % 3) - (rnd() % 8 == 0 ? 2000 : 0);
		if (rnd() % 4) {             /* mostly the usual full-trace record */
			in[i].u.sample = (struct ct_sample){ .ip = ips[rnd() % 5],
				.addr = 0x7f1200000000 + (rnd() & 0xffff), .period = 1,
				.len = (uint8_t)(1u << (rnd() % 4)), .kind = (uint8_t)(rnd() % 3),
				.flags = CT_SAMPLE_EXACT, .cpu = (uint32_t)(rnd() % 2) };
		} else {
			random_record(&in[i]);
			in[i].type = CT_REC_SAMPLE;
		}
	}
	struct ct_codec c1, c2;
	ct_codec_reset(&c1);
	ct_codec_reset(&c2);
	size_t l1 = 0;
	for (int i = 0; i < N; i++)
		l1 += ct_encode_record(&c1, &in[i], one + l1);
	size_t l2 = 0, k = 0;
	while (k < N) {                      /* runs of 1 to 64 records */
		size_t n = 1 + rnd() % 64, taken;
		if (n > N - k)
			n = N - k;
		l2 += ct_encode_samples(&c2, &in[k], sizeof in[k], n, run + l2, sizeof run - l2, &taken);
		CHECK_EQ_U(taken, n);
		k += n;
	}
	CHECK_EQ_U(l2, l1);
	CHECK(!memcmp(one, run, l1));
	CHECK(!memcmp(&c1, &c2, sizeof c1));
	/* room: none below CT_RECORD_MAX_BYTES, then one record per such room */
	size_t taken = 99;
	CHECK_EQ_U(ct_encode_samples(&c2, in, sizeof in[0], 4, run, CT_RECORD_MAX_BYTES - 1, &taken), 0);
	CHECK_EQ_U(taken, 0);
	size_t got = ct_encode_samples(&c2, in, sizeof in[0], 4, run, CT_RECORD_MAX_BYTES, &taken);
	CHECK(taken == 1 && got > 0 && got <= CT_RECORD_MAX_BYTES);
}

/* Samples drawing ips and addresses from small sets exercise the recent-ip
 * table (hits, misses, evictions) and the data address slots. */
static void test_slots_roundtrip(void)
{
	enum { N = 20000 };
	static uint8_t big[N * 40];
	static struct ct_record in[N];
	uint64_t ips[12], bases[6];
	for (int i = 0; i < 12; i++)
		ips[i] = i == 11 ? UINT64_MAX : 0x401000 + rnd() % 0x1000;
	for (int i = 0; i < 6; i++)
		bases[i] = rnd();
	struct ct_codec c;
	size_t len = 0;
	ct_codec_reset(&c);
	for (int i = 0; i < N; i++) {
		memset(&in[i], 0, sizeof in[i]);
		in[i].type = CT_REC_SAMPLE;
		in[i].time = (uint64_t)i * 1000;
		in[i].u.sample.ip = ips[rnd() % (i < N / 2 ? 6 : 12)];
		in[i].u.sample.addr = bases[rnd() % 6] + (rnd() & 0xfff);
		in[i].u.sample.len = 8;
		len += ct_encode_record(&c, &in[i], big + len);
	}
	ct_codec_reset(&c);
	const uint8_t *p = big;
	for (int i = 0; i < N; i++) {
		struct ct_record r;
		memset(&r, 0, sizeof r);
		size_t n = ct_decode_record(&c, p, big + len, &r);
		CHECK(n > 0 && !memcmp(&r, &in[i], sizeof r));
		if (check_case_failed) {
			printf("at record %d\n", i);
			return;
		}
		p += n;
	}
	printf("small sets: %.2f raw bytes per sample\n", (double)len / N);
}

/* A full trace of every access (period 1, same cpu, small steps) costs a
 * few raw bytes per record. */
static void test_full_trace_raw_size(void)
{
	struct ct_codec c;
	struct ct_record r = { .type = CT_REC_SAMPLE };
	uint8_t o[CT_RECORD_MAX_BYTES];
	size_t total = 0;
	ct_codec_reset(&c);
	r.u.sample = (struct ct_sample){ .ip = 0x401000, .addr = 0x7f0000001000, .period = 1, .cpu = 2,
		.len = 8, .flags = CT_SAMPLE_EXACT };
	for (int i = 0; i < 100000; i++) {
		r.time += 3 + (rnd() & 7);
		r.u.sample.ip = 0x401000 + (rnd() % 64) * 4;
		r.u.sample.addr = 0x7f0000001000 + (uint64_t)(i % 4096) * 8 + (rnd() & 0x3f0);
		r.u.sample.kind = (uint8_t)(i & 1);
		total += ct_encode_record(&c, &r, o);
	}
	double per = (double)total / 100000;
	printf("full trace: %.2f raw bytes per access\n", per);
	CHECK(per >= 4 && per <= 8);
}

/* Random bytes: the decoder consumes at most what it was given, and what
 * it accepts encodes back to the same bytes' meaning. */
static void test_random_bytes(void)
{
	unsigned accepted = 0;
	for (int round = 0; round < 20000; round++) {
		size_t n = 1 + rnd() % 40;
		uint8_t *b = malloc(n);
		for (size_t i = 0; i < n; i++)
			b[i] = (uint8_t)rnd();
		b[0] = (uint8_t)(1 + b[0] % (CT_REC_TYPE_MAX + 2));
		struct ct_codec c, c2;
		struct ct_record r, back;
		memset(&r, 0, sizeof r);
		memset(&back, 0, sizeof back);
		ct_codec_reset(&c);
		size_t got = ct_decode_record(&c, b, b + n, &r);
		CHECK(got <= n);
		if (got) {
			uint8_t o[CT_RECORD_MAX_BYTES];
			accepted++;
			ct_codec_reset(&c2);
			size_t m = ct_encode_record(&c2, &r, o);
			ct_codec_reset(&c2);
			CHECK(m > 0 && ct_decode_record(&c2, o, o + m, &back) == m);
			back.thread = r.thread;
			CHECK(!memcmp(&back, &r, sizeof r));
		}
		free(b);
	}
	CHECK(accepted > 100);
}

static void test_names(void)
{
	CHECK_STR(ct_rec_type_name(CT_REC_SAMPLE), "sample");
	CHECK_STR(ct_rec_type_name(CT_REC_SKIPPED), "skipped");
	CHECK_STR(ct_rec_type_name(CT_REC_OWNER_XFER), "owner_xfer");
	CHECK_STR(ct_rec_type_name(CT_REC_OWNER_WIN), "owner_win");
	CHECK(ct_rec_type_name(0) == NULL);
	CHECK(ct_rec_type_name(CT_REC_TYPE_MAX + 1) == NULL);
	for (int t = 1; t <= CT_REC_TYPE_MAX; t++)
		CHECK_EQ_U(ct_rec_type_from_name(ct_rec_type_name((unsigned)t)), t);
	CHECK(ct_rec_type_from_name("nope") == -1);
	CHECK(ct_rec_type_from_name(NULL) == -1);
	CHECK_STR(ct_access_kind_name(CT_ACCESS_ATOMIC), "atomic");
	CHECK(ct_access_kind_name(3) == NULL);
	CHECK_STR(ct_lost_reason_name(CT_LOST_WP_SETUP), "wp_setup");
	CHECK(ct_lost_reason_name(0) == NULL && ct_lost_reason_name(99) == NULL);
	CHECK_STR(ct_skip_reason_name(CT_SKIP_KERNEL), "kernel");
	CHECK(ct_skip_reason_name(CT_SKIP_REASON_MAX + 1) == NULL);
	CHECK_STR(ct_section_name(CT_SEC_SUMMARY), "summary");
	CHECK(ct_section_name(CT_SEC_MAX + 1) == NULL);
}

static void test_fixed_layouts(void)
{
	struct ct_header h = { .version = 1, .min_version = 1, .features = 0x8000000000000021ull,
		.created_ns = 0x0102030405060708ull }, h2;
	uint8_t b[CT_THREAD_INFO_BYTES];
	ct_header_encode(&h, b);
	CHECK(b[0] == 1 && b[1] == 0 && b[2] == 1 && b[4] == 0 && b[8] == 0x21 && b[15] == 0x80 &&
	      b[16] == 8 && b[23] == 1);
	CHECK(ct_header_decode(b, CT_HEADER_BYTES - 1, &h2) < 0);
	CHECK(ct_header_decode(b, CT_HEADER_BYTES, &h2) == 0);
	CHECK(!memcmp(&h, &h2, sizeof h) || (h2.version == h.version && h2.features == h.features &&
	      h2.created_ns == h.created_ns && h2.min_version == h.min_version));
	struct ct_thread_info ti = { .index = 5, .parent = UINT32_MAX, .tid = -2, .pid = 1234,
		.start_ns = 99 }, ti2;
	memcpy(ti.name, "a-very-long-name", 16);         /* not terminated: 15 bytes kept */
	ct_thread_info_encode(&ti, b);
	CHECK(b[0] == 5 && b[4] == 0xff && b[8] == 0xfe && b[16] == 99 && b[24] == 'a' && b[39] == 0);
	CHECK(ct_thread_info_decode(b, CT_THREAD_INFO_BYTES - 1, &ti2) < 0);
	CHECK(ct_thread_info_decode(b, CT_THREAD_INFO_BYTES, &ti2) == 0);
	CHECK_EQ_U(ti2.index, 5);
	CHECK_EQ_U(ti2.parent, UINT32_MAX);
	CHECK(ti2.tid == -2 && ti2.pid == 1234 && ti2.start_ns == 99);
	CHECK_STR(ti2.name, "a-very-long-nam");
}

static void test_kv(void)
{
	char b[64], v[32];
	struct ct_kv kv;
	ct_kv_init(&kv, b, sizeof b);
	ct_kv_add(&kv, "cpu.model", "%s", "Xeon\nFake");
	ct_kv_add(&kv, "a=b", "%d", 42);
	ct_kv_add(&kv, "line", "%d", 64);
	CHECK(!kv.overflow);
	CHECK_STR(b, "cpu.model=Xeon Fake\na_b=42\nline=64\n");
	ct_kv_add(&kv, "line", "%d", 128);
	CHECK(ct_kv_get(b, kv.len, "line", v, sizeof v));
	CHECK_STR(v, "128");                               /* the last wins */
	CHECK(ct_kv_get(b, kv.len, "cpu.model", v, 5));
	CHECK_STR(v, "Xeon");                              /* truncated to cap */
	CHECK(!ct_kv_get(b, kv.len, "cpu", v, sizeof v));
	CHECK(!ct_kv_get(b, kv.len, "missing", v, sizeof v));
	size_t before = kv.len;
	ct_kv_add(&kv, "toolong", "%s", "0123456789012345678901234567890123456789");
	CHECK(kv.overflow);
	CHECK_EQ_U(kv.len, before);
	CHECK_EQ_U(strlen(b), before);
}

/* Varints of every length (1..10 bytes, at each length's edges), decoded
 * from an exact-size buffer (the bytewise path at the end of the input)
 * and followed by slack (the 8-byte load path), give the value back. */
static void test_varint_lengths(void)
{
	for (unsigned bits = 0; bits <= 64; bits++) {
		uint64_t edge = bits == 64 ? UINT64_MAX : (1ull << bits);
		uint64_t vals[3] = { edge - 1, edge, edge + 1 };
		for (int k = 0; k < 3; k++) {
			struct ct_record in = { .type = CT_REC_LOST }, out;
			in.u.lost = (struct ct_lost){ 1, vals[k] };
			uint8_t o[CT_RECORD_MAX_BYTES];
			struct ct_codec c;
			ct_codec_reset(&c);
			size_t n = ct_encode_record(&c, &in, o);
			for (size_t slack = 0; slack <= 16; slack += 16) {
				uint8_t *h = calloc(1, n + slack);
				memcpy(h, o, n);
				memset(&out, 0, sizeof out);
				ct_codec_reset(&c);
				CHECK_EQ_U(ct_decode_record(&c, h, h + n + slack, &out), n);
				CHECK_EQ_U(out.u.lost.count, vals[k]);
				free(h);
			}
		}
	}
}

/* A delta whose varint takes 1 to 10 bytes, either sign. */
static uint64_t any_delta(void)
{
	unsigned bits = (unsigned)(rnd() % 64);
	uint64_t d = (rnd() & ((1ull << bits) - 1)) | 1ull << bits;
	return rnd() & 1 ? d : 0 - d;
}

/* A sample of one of the shapes the encoder makes: mostly the usual one
 * (recent ips and data addresses, one-byte steps), else long deltas,
 * changed length, cpu, period or flags, data_src and weight, kinds past
 * 2. */
static void shaped_sample(struct ct_record *r, const struct ct_record *prev, const uint64_t *ips)
{
	const struct ct_sample *p = &prev->u.sample;
	memset(r, 0, sizeof *r);
	r->type = CT_REC_SAMPLE;
	struct ct_sample *s = &r->u.sample;
	*s = (struct ct_sample){ .ip = ips[rnd() % 4], .addr = p->addr + 8 * (rnd() % 4),
		.period = p->period, .cpu = p->cpu, .len = p->len, .kind = (uint8_t)(rnd() % 3),
		.flags = p->flags };
	r->time = prev->time + rnd() % 100;
	switch (rnd() % 8) {
	case 0: r->time = prev->time + any_delta(); break;
	case 1: s->ip = p->ip + any_delta(); break;
	case 2: s->addr = p->addr + any_delta(); break;
	case 3: s->len = (uint8_t)rnd(); s->kind = (uint8_t)rnd(); break;
	case 4: s->cpu = (uint32_t)rnd(); s->period = rval(); s->flags = (uint8_t)rnd(); break;
	case 5: s->data_src = rval(); s->weight = (uint32_t)rnd(); break;
	default: break;
	}
}

/* cti_decode_packed (the replay's loop: runs of usual samples on a path of
 * their own, every other record one at a time) gives what ct_decode_record
 * gives, in one call or in chunks, and stops at the same record when one is
 * malformed. */
static void test_packed_decode(void)
{
	enum { N = 20000 };
	static uint8_t buf[N * CT_RECORD_MAX_BYTES];
	static struct ct_record in[N];
	static size_t at[N + 1];
	static uint8_t out[N * sizeof(struct ct_record)];
	uint64_t ips[4] = { 0x401000, 0x401010, 0x7f0000002000, UINT64_MAX };
	struct ct_codec c;
	ct_codec_reset(&c);
	size_t len = 0;
	for (int i = 0; i < N; i++) {
		if (i && rnd() % 16)
			shaped_sample(&in[i], &in[i - 1], ips);
		else
			random_record(&in[i]);
		if (in[i].type != CT_REC_SAMPLE && i + 1 < N) {   /* the next sample's base */
			in[i + 1] = in[i];
			in[i + 1].type = CT_REC_SAMPLE;
			in[i + 1].u.sample = (struct ct_sample){ .ip = ips[0], .len = 8 };
		}
		at[i] = len;
		len += ct_encode_record(&c, &in[i], buf + len);
	}
	at[N] = len;
	for (int chunked = 0; chunked < 2; chunked++) {
		ct_codec_reset(&c);
		const uint8_t *p = buf;
		size_t used = 0;
		for (uint32_t got = 0; got < N;) {
			uint32_t n = chunked ? 1 + (uint32_t)(rnd() % 40) : N;
			if (n > N - got)
				n = N - got;
			size_t u;
			uint32_t k = cti_decode_packed(&c, &p, buf + len, 5, n, out + used, sizeof out - used, &u);
			CHECK_EQ_U(k, n);
			if (k != n)
				return;
			got += k;
			used += u;
		}
		CHECK(p == buf + len);
		const uint8_t *o = out;
		for (int i = 0; i < N && !check_case_failed; i++) {
			const struct ct_record *r = (const void *)o;
			struct ct_record want = in[i];
			want.thread = 5;
			CHECK(r->type == want.type && r->thread == 5 && r->time == want.time);
			if (r->type == CT_REC_SAMPLE) {
				const struct ct_sample *a = &r->u.sample, *b = &want.u.sample;
				CHECK(a->ip == b->ip && a->addr == b->addr && a->period == b->period &&
				      a->data_src == b->data_src && a->weight == b->weight &&
				      a->cpu == b->cpu && a->len == b->len && a->kind == b->kind &&
				      a->flags == b->flags);
			} else {
				CHECK(!memcmp(r, &want, cti_packed_bytes[r->type]));
			}
			if (check_case_failed)
				printf("chunked %d: record %d (type %u)\n", chunked, i, in[i].type);
			o += cti_packed_bytes[r->type];
		}
	}
	/* a reserved bit in the presence byte of a sample among usual ones */
	int bad = N / 2;
	while (buf[at[bad]] != CT_REC_SAMPLE || in[bad - 1].type != CT_REC_SAMPLE)
		bad++;                            /* (a SAMPLE, not a short one) */
	size_t pres = at[bad] + 1;
	while (buf[pres] & 0x80)          /* past the time */
		pres++;
	buf[pres + 1] |= 0x80;
	ct_codec_reset(&c);
	const uint8_t *p = buf;
	size_t u;
	CHECK_EQ_U(cti_decode_packed(&c, &p, buf + len, 0, N, out, sizeof out, &u), bad);
	CHECK(p == buf + at[bad]);
}

/* A sampled trace's run (long SAMPLE records: a new ip each) whose address
 * deltas take every varint length, 1 to 10 bytes, at both ends of each
 * length and either sign, decodes through cti_decode_packed (the
 * address deltas of up to 5 bytes without a branch on their length,
 * longer ones a record at a time) to the records encoded. */
static void test_packed_addr_lengths(void)
{
	enum { N = 1 + 10 * 4 };
	struct ct_record in[N];
	static uint8_t buf[N * CT_RECORD_MAX_BYTES];
	static uint8_t out[N * sizeof(struct ct_record)];
	in[0] = (struct ct_record){ .type = CT_REC_SAMPLE, .time = 1000 };
	in[0].u.sample = (struct ct_sample){ .ip = 0x400000, .addr = 0x10000000, .period = 1,
	                                     .len = 8 };
	for (int i = 1; i < N; i++) {
		unsigned bytes = 1 + (unsigned)(i - 1) / 4;
		/* the smallest and largest zigzag values of that length */
		uint64_t lo = bytes == 1 ? 0 : 1ull << (7 * (bytes - 1));
		uint64_t hi = bytes == 10 ? UINT64_MAX : (1ull << (7 * bytes)) - 1;
		uint64_t z[4] = { lo, lo + 1, hi - 1, hi };
		uint64_t zz = z[(i - 1) % 4];
		in[i] = in[i - 1];
		in[i].time += 10;
		in[i].u.sample.ip += 0x1000;
		in[i].u.sample.addr += (zz >> 1) ^ (0 - (zz & 1));
	}
	struct ct_codec c;
	ct_codec_reset(&c);
	size_t len = 0;
	for (int i = 0; i < N; i++)
		len += ct_encode_record(&c, &in[i], buf + len);
	CHECK_EQ_U(buf[0], CT_REC_SAMPLE);                 /* a long record */
	ct_codec_reset(&c);
	const uint8_t *p = buf;
	size_t used;
	CHECK_EQ_U(cti_decode_packed(&c, &p, buf + len, 2, N, out, sizeof out, &used), N);
	CHECK(p == buf + len);
	const uint8_t *o = out;
	for (int i = 0; i < N && !check_case_failed; i++) {
		const struct ct_record *r = (const void *)o;
		CHECK(r->type == CT_REC_SAMPLE && r->thread == 2 && r->time == in[i].time &&
		      r->u.sample.ip == in[i].u.sample.ip && r->u.sample.addr == in[i].u.sample.addr &&
		      r->u.sample.len == 8 && r->u.sample.period == 1);
		if (check_case_failed)
			printf("record %d: addr 0x%llx, want 0x%llx\n", i,
			       (unsigned long long)r->u.sample.addr,
			       (unsigned long long)in[i].u.sample.addr);
		o += cti_packed_bytes[CT_REC_SAMPLE];
	}
}

/* The recent-ip table's bytes, hand-built: 8 ips fill slots 0-7 (each a
 * miss: a zigzag delta); the oldest is then a hit in the last slot (index
 * 7), a new ip a miss that evicts the oldest one, which is a miss again. */
static void test_ip_slot_bytes(void)
{
	struct ct_codec c;
	struct ct_record r = { .type = CT_REC_SAMPLE };
	uint8_t o[CT_RECORD_MAX_BYTES];
	ct_codec_reset(&c);
	for (uint64_t i = 0; i < 8; i++) {
		r.u.sample.ip = 0x1000 + 16 * i;
		size_t n = ct_encode_record(&c, &r, o);
		/* type, time 0, presence (no hit), zz(+0x1000 or +16), addr 0 */
		const uint8_t first[] = { CT_REC_SAMPLE, 0, 0, 0x80, 0x40, 0 };
		const uint8_t next[] = { CT_REC_SAMPLE, 0, 0, 0x20, 0 };
		CHECK(i ? n == sizeof next && !memcmp(o, next, n) : n == sizeof first && !memcmp(o, first, n));
	}
	/* (a hit with the state's len, cpu, period and flags: a short SAMPLE,
	 * time 0, code slot 7, kind 0, address delta 0) */
	const uint8_t hit7[] = { 0x80 | 0x20 | 7 << 2, 0 };
	r.u.sample.ip = 0x1000;
	CHECK(ct_encode_record(&c, &r, o) == sizeof hit7 && !memcmp(o, hit7, sizeof hit7));
	const uint8_t miss[] = { CT_REC_SAMPLE, 0, 0, 0x80, 0x40, 0 };     /* zz(+0x1000) */
	r.u.sample.ip = 0x2000;
	CHECK(ct_encode_record(&c, &r, o) == sizeof miss && !memcmp(o, miss, sizeof miss));
	/* the table now: 0x1000, 0x1070, ..., 0x1020 (0x1010 evicted) */
	r.u.sample.ip = 0x1020;
	CHECK(ct_encode_record(&c, &r, o) == sizeof hit7 && !memcmp(o, hit7, sizeof hit7));
	const uint8_t gone[] = { CT_REC_SAMPLE, 0, 0, 0x1f, 0 };            /* zz(-16) = 31 */
	r.u.sample.ip = 0x1010;
	CHECK(ct_encode_record(&c, &r, o) == sizeof gone && !memcmp(o, gone, sizeof gone));
}

/* Short SAMPLE records (v8), hand-built: a sample with the state's len,
 * cpu, period and flags, a recent ip and its address nearest data slot 0
 * is its type byte (0x80, 0x20: the same time, code slot << 2, kind) and
 * the deltas of its time (unless the same) and address; any other stays a
 * SAMPLE.  Each decodes back, one at a time and in a packed run. */
static void test_short_sample_bytes(void)
{
	struct ct_sample base = { .ip = 0x1000, .addr = 0x2000, .period = 1, .cpu = 1, .len = 8,
	                          .flags = CT_SAMPLE_EXACT };
	struct ct_record in[6];
	for (int i = 0; i < 6; i++)
		in[i] = (struct ct_record){ .type = CT_REC_SAMPLE, .time = 100, .u.sample = base };
	in[1].u.sample.addr = 0x2008;                     /* short: same time, kind 1 */
	in[1].u.sample.kind = CT_ACCESS_STORE;
	in[2].u.sample.addr = 0x2010;                     /* short: time +30 */
	in[2].time = 130;
	in[3].u.sample.ip = 0x1100;                       /* a new ip: a SAMPLE */
	in[3].u.sample.addr = 0x2018;
	in[3].time = 130;
	in[4].u.sample.addr = 0x2020;                     /* the old ip, code slot 1 */
	in[4].time = 130;
	in[5].u.sample.addr = 0x2028;                     /* another len: a SAMPLE */
	in[5].u.sample.len = 4;
	in[5].time = 130;
	const uint8_t want1[] = { 0x80 | 0x20 | 1, 16 }, want2[] = { 0x80, 60, 16 },
	              want4[] = { 0x80 | 0x20 | 1 << 2, 16 };
	struct ct_codec c;
	ct_codec_reset(&c);
	uint8_t buf[6 * CT_RECORD_MAX_BYTES];
	size_t at[7] = { 0 };
	for (int i = 0; i < 6; i++)
		at[i + 1] = at[i] + ct_encode_record(&c, &in[i], buf + at[i]);
	CHECK(buf[at[0]] == CT_REC_SAMPLE && buf[at[3]] == CT_REC_SAMPLE && buf[at[5]] == CT_REC_SAMPLE);
	CHECK(at[2] - at[1] == sizeof want1 && !memcmp(buf + at[1], want1, sizeof want1));
	CHECK(at[3] - at[2] == sizeof want2 && !memcmp(buf + at[2], want2, sizeof want2));
	CHECK(at[5] - at[4] == sizeof want4 && !memcmp(buf + at[4], want4, sizeof want4));
	ct_codec_reset(&c);
	for (int i = 0; i < 6; i++) {
		struct ct_record r;
		CHECK_EQ_U(ct_decode_record(&c, buf + at[i], buf + at[6], &r), at[i + 1] - at[i]);
		CHECK(r.time == in[i].time && !memcmp(&r.u.sample, &in[i].u.sample, sizeof r.u.sample));
	}
	ct_codec_reset(&c);
	const uint8_t *p = buf;
	static uint8_t out[6 * sizeof(struct ct_record)];
	size_t used;
	CHECK_EQ_U(cti_decode_packed(&c, &p, buf + at[6], 0, 6, out, sizeof out, &used), 6);
	for (size_t i = 0, o = 0; i < 6; o += cti_packed_bytes[CT_REC_SAMPLE], i++) {
		const struct ct_record *r = (const void *)(out + o);
		CHECK(r->type == CT_REC_SAMPLE && r->time == in[i].time &&
		      !memcmp(&r->u.sample, &in[i].u.sample, sizeof r->u.sample));
	}
}

int main(void)
{
	RUN(test_roundtrip_every_type);
	RUN(test_truncated_records);
	RUN(test_malformed_records);
	RUN(test_varint_lengths);
	RUN(test_random_roundtrip);
	RUN(test_slots_roundtrip);
	RUN(test_encode_samples_run);
	RUN(test_ip_slot_bytes);
	RUN(test_short_sample_bytes);
	RUN(test_packed_decode);
	RUN(test_packed_addr_lengths);
	RUN(test_random_bytes);
	RUN(test_full_trace_raw_size);
	RUN(test_names);
	RUN(test_fixed_layouts);
	RUN(test_kv);
	return check_summary();
}
