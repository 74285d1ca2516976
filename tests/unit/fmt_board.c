/* Online bulletin board (formats/board.c). */
#include <pthread.h>
#include <stdlib.h>

#include "board.h"
#include "check.h"

static struct board mk(uint32_t size, void **mem)
{
	struct board b;
	*mem = calloc(1, board_bytes(size));
	board_init(&b, *mem, size, 64);
	return b;
}

static void test_publish_and_get(void)
{
	void *m;
	struct board b = mk(128, &m);
	struct board_view v;
	CHECK(!board_get(&b, 0x1000, &v));
	CHECK(board_publish(&b, 0x1008, 8, 3, 100, 0));
	CHECK(board_get(&b, 0x1030, &v));       /* same line */
	CHECK_EQ_U(v.addr, 0x1008);
	CHECK_EQ_U(v.len, 8);
	CHECK_EQ_U(v.thread, 3);
	CHECK_EQ_U(v.time, 100);
	CHECK_EQ_U(board_line(&b, v.addr), 0x1000);
	/* another line mapping to the same slot shows the entry too: the caller
	 * compares lines */
	CHECK(board_get(&b, 0x1000 + 128 * 64, &v));
	CHECK_EQ_U(v.addr, 0x1008);
	free(m);
}

static void test_expiry(void)
{
	void *m;
	struct board b = mk(16, &m);
	struct board_view v;
	CHECK(board_publish(&b, 0x2000, 4, 1, 100, 0));
	/* thread 2's previous store sample was at 90: the entry (100) is
	 * younger than its store interval: not replaceable */
	CHECK(!board_publish(&b, 0x2010, 8, 2, 150, 90));
	CHECK(!board_publish(&b, 0x2010, 8, 2, 150, 100));  /* published at 100: not before */
	CHECK(board_get(&b, 0x2000, &v) && v.thread == 1);
	/* previous store at 120: the entry is older than that: replace */
	CHECK(board_publish(&b, 0x2010, 8, 2, 150, 120));
	CHECK(board_get(&b, 0x2000, &v) && v.thread == 2 && v.time == 150 && v.addr == 0x2010);
	/* the same rule holds for the publisher's own entry */
	CHECK(!board_publish(&b, 0x2018, 8, 2, 160, 140));
	CHECK(board_publish(&b, 0x2018, 8, 2, 200, 160));
	free(m);
}

static void test_pick(void)
{
	void *m;
	struct board b = mk(1024, &m);
	struct board_view v;
	CHECK(!board_pick(&b, 0, 0, 1000, 42, BOARD_RECENT, &v));
	board_publish(&b, 0x10000, 8, 1, 100, 0);
	board_publish(&b, 0x20040, 8, 2, 200, 0);
	board_publish(&b, 0x30080, 8, 0, 300, 0);     /* self: never picked */
	/* since 150: only thread 2's entry (200) is unexpired for thread 0 */
	CHECK(board_pick(&b, 0, 150, 1000, 7, BOARD_RECENT, &v));
	CHECK_EQ_U(v.thread, 2);
	CHECK_EQ_U(v.addr, 0x20040);
	/* since 0: threads 1 and 2 both qualify; random choice sees both */
	int seen1 = 0, seen2 = 0;
	for (uint64_t r = 1; r < 200; r++) {
		CHECK(board_pick(&b, 0, 0, 1000, r * 0x9e3779b97f4a7c15ull, BOARD_RECENT, &v));
		seen1 += v.thread == 1;
		seen2 += v.thread == 2;
		CHECK(v.thread != 0);
	}
	CHECK(seen1 > 0 && seen2 > 0);
	/* entries published after `now` are ignored */
	CHECK(!board_pick(&b, 0, 250, 260, 1, BOARD_RECENT, &v));
	/* thread 2 sees only thread 1's (and not its own) */
	CHECK(board_pick(&b, 2, 0, 1000, 3, BOARD_RECENT, &v));
	CHECK(v.thread == 1 || v.thread == 0);
	free(m);
}

/* Concurrent publishers and readers: a reader never sees a torn entry. */
static struct board g_b;
static _Atomic int g_stop;
static _Atomic uint64_t g_torn, g_reads;

static void *publisher(void *arg)
{
	uint32_t id = (uint32_t)(uintptr_t)arg;
	uint64_t t = 1;
	while (!atomic_load(&g_stop)) {
		/* addr, len and time all encode (id, t): a torn read mixes them */
		uint64_t addr = ((uint64_t)id << 40) | ((t & 0xff) << 6) | 8;
		board_publish(&g_b, addr, (uint8_t)(id + 1), id, (t << 8) | id, t << 8);
		t++;
	}
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	struct board_view v;
	while (!atomic_load(&g_stop)) {
		for (uint32_t i = 0; i < g_b.size; i++) {
			if (!board_get_slot(&g_b, i, &v))
				continue;
			atomic_fetch_add(&g_reads, 1);
			uint32_t id = v.thread;
			if ((v.addr >> 40) != id || v.len != id + 1 || (v.time & 0xff) != id)
				atomic_fetch_add(&g_torn, 1);
		}
	}
	return NULL;
}

static void test_concurrent(void)
{
	void *m;
	g_b = mk(64, &m);
	pthread_t th[6];
	for (uintptr_t i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, publisher, (void *)i);
	for (int i = 4; i < 6; i++)
		pthread_create(&th[i], NULL, reader, NULL);
	struct timespec ts = { 0, 300 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	atomic_store(&g_stop, 1);
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	CHECK(atomic_load(&g_reads) > 0);
	CHECK_EQ_U(atomic_load(&g_torn), 0);
	free(m);
}

/* Watched words: distinct, inside the line, as many as asked for (at most
 * the line's words), and the same for the same random state. */
static void test_choose_words(void)
{
	uint64_t rnd = 12345;
	for (int round = 0; round < 1000; round++) {
		uint32_t words = 1 + (uint32_t)(board_random(&rnd) % 16);
		unsigned want = 1 + (unsigned)(board_random(&rnd) % 4);
		uint64_t again = rnd;
		uint32_t w[4], w2[4];
		unsigned n = board_choose_words(&rnd, words, want, w);
		CHECK_EQ_U(n, want < words ? want : words);
		CHECK_EQ_U(board_choose_words(&again, words, want, w2), n);
		CHECK_EQ_U(again, rnd);
		for (unsigned i = 0; i < n; i++) {
			CHECK(w[i] < words);
			CHECK_EQ_U(w2[i], w[i]);
			for (unsigned j = 0; j < i; j++)
				CHECK(w[j] != w[i]);
		}
		if (check_case_failed)
			return;
	}
	CHECK_EQ_U(board_choose_words(&rnd, 0, 4, (uint32_t[4]){ 0 }), 0);
}

int main(void)
{
	RUN(test_publish_and_get);
	RUN(test_expiry);
	RUN(test_pick);
	RUN(test_concurrent);
	RUN(test_choose_words);
	return check_summary();
}
