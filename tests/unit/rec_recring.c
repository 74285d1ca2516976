/* Record ring of the runtime (record/common/recring.c). */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

#include "check.h"
#include "recring.h"

static struct ct_record rec(uint64_t time)
{
	struct ct_record r;
	memset(&r, 0, sizeof r);
	r.type = CT_REC_SAMPLE;
	r.time = time;
	return r;
}

static _Alignas(64) uint8_t mem8[8 * RECRING_UNIT + 16];
static _Alignas(64) uint8_t mem4[4 * RECRING_UNIT + 8];

static void test_fifo(void)
{
	uint8_t *mem = mem8;
	struct recring r;
	memset(mem, 0, sizeof mem8);
	recring_init(&r, mem, 8);
	struct ct_record out;
	CHECK_EQ_U(recring_pop(&r, &out), 0);
	for (uint64_t i = 0; i < 5; i++) {
		struct ct_record in = rec(i);
		uint32_t fill = 0;
		CHECK(recring_push(&r, &in, &fill) == 0);
		CHECK_EQ_U(fill, i + 1);
	}
	CHECK_EQ_U(recring_used(&r), 5);
	for (uint64_t i = 0; i < 5; i++) {
		CHECK_EQ_U(recring_pop(&r, &out), 1);
		CHECK_EQ_U(out.time, i);
	}
	CHECK_EQ_U(recring_pop(&r, &out), 0);
	CHECK_EQ_U(recring_used(&r), 0);
}

static void test_full_counts_losses(void)
{
	uint8_t *mem = mem4;
	struct recring r;
	memset(mem, 0, sizeof mem4);
	recring_init(&r, mem, 4);
	struct ct_record in = rec(1), out;
	for (int i = 0; i < 4; i++)
		CHECK(recring_push(&r, &in, NULL) == 0);
	uint32_t fill = 99;
	CHECK(recring_push(&r, &in, &fill) == -1);
	CHECK_EQ_U(fill, 4);            /* first loss: wake the consumer */
	CHECK(recring_push(&r, &in, &fill) == -1);
	CHECK_EQ_U(fill, 0);            /* already told */
	CHECK_EQ_U(recring_take_lost(&r), 2);
	CHECK_EQ_U(recring_take_lost(&r), 0);
	CHECK_EQ_U(recring_pop(&r, &out), 1);
	CHECK(recring_push(&r, &in, NULL) == 0);   /* space again */
	recring_return_lost(&r, 3);
	CHECK_EQ_U(recring_take_lost(&r), 3);
	CHECK_EQ_U(atomic_load(&r.lost_total), 2);
}

/* A reserved but uncommitted slot (a push interrupted by a handler that
 * pushes too) stops the consumer until it is committed: stream order is
 * reservation order. */
static void test_interrupted_push(void)
{
	uint8_t *mem = mem8;
	struct recring r;
	memset(mem, 0, sizeof mem8);
	recring_init(&r, mem, 8);
	struct ct_record *outer = recring_reserve_type(&r, CT_REC_SAMPLE, NULL);
	CHECK(outer != NULL);
	struct ct_record inner = rec(2), out;
	CHECK(recring_push(&r, &inner, NULL) == 0);
	CHECK_EQ_U(recring_pop(&r, &out), 0);
	outer->type = CT_REC_SAMPLE;
	outer->time = 1;
	recring_commit(&r, outer);
	CHECK_EQ_U(recring_pop(&r, &out), 1);
	CHECK_EQ_U(out.time, 1);
	CHECK_EQ_U(recring_pop(&r, &out), 1);
	CHECK_EQ_U(out.time, 2);
}

/* One producer plus its signal handler (a timer pushing from the handler)
 * against one consumer thread: every record pushed is popped exactly once,
 * and each source's records come out in order. */
static struct recring g_ring;
static _Atomic uint64_t g_next_sig = 1;
static _Atomic int g_done;
static uint64_t g_pushed_main, g_pushed_sig;

static void on_alarm(int sig)
{
	(void)sig;
	struct ct_record r = rec(atomic_fetch_add(&g_next_sig, 1) | (1ull << 63));
	if (recring_push(&g_ring, &r, NULL) == 0)
		g_pushed_sig++;
}

static void *consumer(void *arg)
{
	uint64_t *got = arg;
	uint64_t last_main = 0, last_sig = 0;
	struct ct_record out;
	for (;;) {
		int done = atomic_load(&g_done);
		while (recring_pop(&g_ring, &out)) {
			if (out.time >> 63) {
				uint64_t v = out.time & ~(1ull << 63);
				if (v <= last_sig)
					got[2]++;      /* order violation */
				last_sig = v;
				got[1]++;
			} else {
				if (out.time <= last_main)
					got[2]++;
				last_main = out.time;
				got[0]++;
			}
		}
		if (done)
			return NULL;
	}
}

/* A ring of cap units on the heap, for the concurrent tests (free the
 * memory returned). */
static void *ring_alloc(struct recring *r, uint32_t cap)
{
	void *mem = aligned_alloc(64, recring_bytes(cap) + 64);
	memset(mem, 0, recring_bytes(cap));
	recring_init(r, mem, cap);
	return mem;
}

static void test_concurrent(void)
{
	void *mem = ring_alloc(&g_ring, 256);
	uint64_t got[3] = { 0, 0, 0 };
	/* The consumer is created with SIGALRM blocked: the process-directed
	 * timer signal must reach the producer thread only (the ring has one
	 * producer; a handler run in the consumer would be a second one). */
	sigset_t alrm, old;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &alrm, &old);
	pthread_t th;
	pthread_create(&th, NULL, consumer, got);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	signal(SIGALRM, on_alarm);
	struct itimerval it = { { 0, 100 }, { 0, 100 } };
	setitimer(ITIMER_REAL, &it, NULL);
	for (uint64_t i = 1; i <= 2000000; i++) {
		struct ct_record r = rec(i);
		if (recring_push(&g_ring, &r, NULL) == 0)
			g_pushed_main++;
	}
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	signal(SIGALRM, SIG_DFL);
	atomic_store(&g_done, 1);
	pthread_join(th, NULL);
	CHECK_EQ_U(got[0], g_pushed_main);
	CHECK_EQ_U(got[1], g_pushed_sig);
	CHECK_EQ_U(got[2], 0);
	CHECK_EQ_U(g_pushed_main + g_pushed_sig + atomic_load(&g_ring.lost_total),
	           2000000 + atomic_load(&g_next_sig) - 1);
	free(mem);
}

/* Records of every size: the fields survive, the unused bytes come back
 * zero, multi-unit records never wrap (a pad is consumed silently). */
static void test_sizes_and_wrap(void)
{
	uint8_t *mem = mem8;
	struct recring r;
	memset(mem, 0xee, sizeof mem8);    /* garbage: pop must not leak it */
	memset(mem + 8 * RECRING_UNIT, 0, 16);
	recring_init(&r, mem, 8);
	CHECK_EQ_U(recring_rec_units(CT_REC_SAMPLE), 1);
	CHECK_EQ_U(recring_rec_units(CT_REC_ALLOC), 1);
	CHECK_EQ_U(recring_rec_units(CT_REC_THREAD_START), 1);
	CHECK_EQ_U(recring_rec_units(CT_REC_WP_ARM), 2);
	CHECK_EQ_U(recring_rec_units(CT_REC_CALLSITE), 3);
	struct ct_record out;
	for (int round = 0; round < 20; round++) {
		struct ct_record s = rec((uint64_t)round * 10);
		s.u.sample.addr = 0x1234;
		s.u.sample.flags = 5;
		struct ct_record cs;
		memset(&cs, 0, sizeof cs);
		cs.type = CT_REC_CALLSITE;
		cs.time = (uint64_t)round * 10 + 1;
		cs.u.callsite.id = (uint32_t)round;
		cs.u.callsite.depth = CT_CALLSITE_MAX_DEPTH;
		for (int i = 0; i < CT_CALLSITE_MAX_DEPTH; i++)
			cs.u.callsite.pc[i] = 0x1000u + (uint64_t)i;
		struct ct_record a;
		memset(&a, 0, sizeof a);
		a.type = CT_REC_WP_ARM;
		a.time = (uint64_t)round * 10 + 2;
		a.u.arm.nwp = 4;
		a.u.arm.wp_addr[3] = 0xabc;
		CHECK(recring_push(&r, &s, NULL) == 0);
		CHECK(recring_push(&r, &cs, NULL) == 0);
		bool arm_in = recring_push(&r, &a, NULL) == 0;  /* may not fit with a pad */
		CHECK_EQ_U(recring_pop(&r, &out), 1);
		CHECK_EQ_U(out.type, CT_REC_SAMPLE);
		CHECK_EQ_U(out.u.sample.addr, 0x1234);
		CHECK_EQ_U(out.u.sample.flags, 5);
		CHECK_EQ_U(out.u.sample.weight, 0);
		CHECK_EQ_U(recring_pop(&r, &out), 1);
		CHECK_EQ_U(out.type, CT_REC_CALLSITE);
		CHECK_EQ_U(out.u.callsite.id, (uint32_t)round);
		CHECK_EQ_U(out.u.callsite.pc[15], 0x100f);
		if (arm_in) {
			CHECK_EQ_U(recring_pop(&r, &out), 1);
			CHECK_EQ_U(out.type, CT_REC_WP_ARM);
			CHECK_EQ_U(out.u.arm.wp_addr[3], 0xabc);
		}
		CHECK_EQ_U(recring_pop(&r, &out), 0);
		CHECK_EQ_U(recring_used(&r), 0);
	}
	recring_take_lost(&r);
}

/* The untyped reserve takes one unit (any record but arms, call sites and
 * markers); the record is committed with the units reserved. */
static void test_untyped_reserve(void)
{
	uint8_t *mem = mem8;
	struct recring r;
	memset(mem, 0, sizeof mem8);
	recring_init(&r, mem, 8);
	for (int round = 0; round < 10; round++) {
		CHECK(recring_has_room(&r, CT_REC_SAMPLE));
		struct ct_record *x = recring_reserve(&r, NULL);
		CHECK(x != NULL);
		if (!x)
			return;
		x->type = CT_REC_FREE;
		x->time = (uint64_t)round;
		x->u.free.addr = 77;
		recring_commit(&r, x);
		struct ct_record in = rec(100 + (uint64_t)round), out;
		CHECK(recring_push(&r, &in, NULL) == 0);
		CHECK_EQ_U(recring_pop(&r, &out), 1);
		CHECK_EQ_U(out.type, CT_REC_FREE);
		CHECK_EQ_U(out.u.free.addr, 77);
		CHECK_EQ_U(recring_pop(&r, &out), 1);
		CHECK_EQ_U(out.time, 100 + (uint64_t)round);
		CHECK_EQ_U(recring_used(&r), 0);
	}
}

/* A full ring read in one batch (peek without release, as the writer does
 * between releases) yields each record once: the cursor stops a ring
 * ahead of tail instead of coming round to the records it read (found by
 * the produced/written counts: a writer with a 64-unit ring wrote stale
 * records again). */
static void test_full_ring_one_batch(void)
{
	uint8_t *mem = mem8;
	struct recring r;
	memset(mem, 0, sizeof mem8);
	recring_init(&r, mem, 8);
	for (int lap = 0; lap < 3; lap++) {
		for (uint64_t i = 0; i < 8; i++) {
			struct ct_record in = rec(100 * (uint64_t)lap + i);
			CHECK(recring_push(&r, &in, NULL) == 0);
		}
		uint64_t cur = recring_cursor(&r);
		const struct ct_record *x;
		uint32_t k, n = 0;
		while (n < 20 && (x = recring_peek(&r, &cur, &k)) != NULL) {
			CHECK_EQ_U(x->time, 100 * (uint64_t)lap + n % 8);
			n++;
		}
		CHECK_EQ_U(n, 8);
		recring_release(&r, cur);
		CHECK_EQ_U(recring_used(&r), 0);
	}
}

/* Every reservation is counted where counts points: made (produced) and,
 * when the ring was full, dropped (buffer_full). */
static void test_counts(void)
{
	uint8_t *mem = mem4;
	struct recring r;
	struct ct_counts c = { 0, 0, 0, 0 };
	memset(mem, 0, sizeof mem4);
	recring_init(&r, mem, 4);
	CHECK(r.counts == &r.own_counts);
	r.counts = &c;
	struct ct_record in = rec(1), out;
	for (int i = 0; i < 6; i++)
		recring_push(&r, &in, NULL);
	CHECK_EQ_U(c.produced, 6);
	CHECK_EQ_U(c.buffer_full, 2);
	CHECK_EQ_U(recring_pop(&r, &out), 1);
	CHECK(recring_reserve_type(&r, CT_REC_ALLOC, NULL) != NULL);   /* made, not yet committed */
	CHECK_EQ_U(c.produced, 7);
	CHECK_EQ_U(c.buffer_full, 2);
	CHECK_EQ_U(r.own_counts.produced, 0);
}

/* Fill a reserved one-unit record in place (a whole struct ct_record is
 * larger than its units). */
static void fill(struct ct_record *slot, uint64_t time)
{
	struct ct_record r = rec(time);
	memcpy(slot, &r, recring_rec_bytes(CT_REC_SAMPLE));
}

/* A held record (full mode's load that a store may take over): the
 * consumer, stopped at it, takes it (commits it itself: the producer's
 * unhold then fails and leaves it alone); or the producer takes it back,
 * changes it and commits it.  recring_is_last says whether anything was
 * reserved after it. */
static void test_hold(void)
{
	uint8_t *mem = mem8;
	struct recring r;
	memset(mem, 0, sizeof mem8);
	recring_init(&r, mem, 8);
	struct ct_record out;
	const struct ct_record *p;
	uint64_t cur;
	uint32_t k;
	for (int round = 0; round < 6; round++) {
		struct ct_record *a = recring_reserve(&r, NULL);
		CHECK(a != NULL);
		if (!a)
			return;
		fill(a, 1);
		recring_hold(&r, a);
		CHECK(recring_is_last(&r, a));
		if (round % 2 == 0) {
			/* the consumer takes it: pop and peek alike */
			if (round % 4 == 0) {
				CHECK_EQ_U(recring_pop(&r, &out), 1);
				CHECK_EQ_U(out.time, 1);
			} else {
				cur = atomic_load(&r.tail);
				p = recring_peek(&r, &cur, &k);
				CHECK(p != NULL && p->time == 1);
				recring_release(&r, cur);
			}
			CHECK(!recring_unhold(&r, a));
		} else {
			/* the producer takes it back, changes it, commits it */
			struct ct_record *b = recring_reserve(&r, NULL);
			CHECK(b != NULL);
			if (!b)
				return;
			CHECK(!recring_is_last(&r, a));
			CHECK(recring_is_last(&r, b));
			CHECK(recring_unhold(&r, a));
			CHECK(!recring_unhold(&r, a));  /* held at most once */
			a->time = 2;
			recring_commit(&r, a);
			fill(b, 3);
			recring_commit(&r, b);
			CHECK_EQ_U(recring_pop(&r, &out), 1);
			CHECK_EQ_U(out.time, 2);
			CHECK_EQ_U(recring_pop(&r, &out), 1);
			CHECK_EQ_U(out.time, 3);
		}
		CHECK_EQ_U(recring_pop(&r, &out), 0);  /* nothing held, nothing left */
		CHECK_EQ_U(recring_used(&r), 0);
	}
}

/* The hold under a concurrent consumer: a producer holds every record it
 * reserves and then takes it back (marking it) or commits it as it is, or,
 * every 64th, waits until the consumer took it; each record comes out once,
 * in order, marked exactly when the producer's take-back succeeded. */
static struct recring h_ring;
static _Atomic int h_done;

static void *hold_consumer(void *arg)
{
	uint64_t *got = arg;   /* records, marked, order violations */
	uint64_t last = 0;
	struct ct_record out;
	for (;;) {
		int done = atomic_load(&h_done);
		while (recring_pop(&h_ring, &out)) {
			uint64_t v = out.time & ~(1ull << 62);
			got[2] += v != last + 1;
			last = v;
			got[0]++;
			got[1] += (out.time >> 62) & 1;
		}
		if (done)
			return NULL;
	}
}

static void test_hold_concurrent(void)
{
	void *mem = ring_alloc(&h_ring, 64);
	uint64_t got[3] = { 0, 0, 0 }, marked = 0, taken = 0, n = 500000;
	pthread_t th;
	pthread_create(&th, NULL, hold_consumer, got);
	for (uint64_t i = 1; i <= n; i++) {
		struct ct_record *a;
		while (!(a = recring_reserve(&h_ring, NULL)))
			sched_yield();
		fill(a, i);
		recring_hold(&h_ring, a);
		if (i % 64 == 0) {
			/* (bounded: a consumer that never takes it fails the check) */
			for (unsigned spin = 0; atomic_load(&h_ring.held) && spin < 1000000; spin++)
				sched_yield();
			CHECK(!recring_unhold(&h_ring, a));
			taken++;
		} else if (recring_unhold(&h_ring, a)) {
			if (i % 2) {
				a->time |= 1ull << 62;
				marked++;
			}
			recring_commit(&h_ring, a);
		}
	}
	atomic_store(&h_done, 1);
	pthread_join(th, NULL);
	CHECK_EQ_U(got[0], n);
	CHECK_EQ_U(got[1], marked);
	CHECK_EQ_U(got[2], 0);
	CHECK_EQ_U(taken, n / 64);
	free(mem);
}

int main(void)
{
	RUN(test_fifo);
	RUN(test_full_counts_losses);
	RUN(test_interrupted_push);
	RUN(test_sizes_and_wrap);
	RUN(test_untyped_reserve);
	RUN(test_full_ring_one_batch);
	RUN(test_counts);
	RUN(test_concurrent);
	RUN(test_hold);
	RUN(test_hold_concurrent);
	return check_summary();
}
