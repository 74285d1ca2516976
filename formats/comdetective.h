/* ComDetective's Algorithm 1 (SC'19, sections 3.2-3.3), the part that runs
 * on every sample, in one place for everyone who runs it: the recorder's
 * sample handler (record/runtime/rt_sample.c), the analyzer's comdetective
 * model (the same step replayed offline over the recorded samples, with
 * its own board and the analyzer's knobs) and its emulate model (the
 * recorder played on a full trace).
 *
 * cd_step, for a sample of thread T on line L:
 *   1. T's sample history moves on (its last two samples, last two store
 *      samples, counts);
 *   2. lookup: the entry in L's board slot is a detection (a communication
 *      from its publisher to T) when it is recent (the expiry rule), holds
 *      line L, comes from another thread and was published after T's last
 *      detection, t_prev; t_prev becomes its publish time;
 *   3. no detection: TryArmWatchpoint.  T's watchpoints are old when none
 *      is armed, one has trapped, or they were armed before T's previous
 *      sample; old ones are switched off, and T picks at random an entry
 *      among the last BOARD_RECENT publications, from another thread,
 *      published at or after T's previous sample, and up to nwp distinct
 *      random 8-byte words of its line to watch;
 *   4. a store or atomic sample publishes itself when the slot's entry may
 *      be replaced (the expiry rule).
 * Arming comes before publishing: the pick looks at the last publications,
 * and T's own would push one out.
 *
 * Line watches (software watchpoints, c->wp_lines > 0; the inst sampler):
 * free of the debug registers' limits, T watches whole lines, each from
 * one board entry, in up to wp_lines slots (struct cd_lines).  Step 3
 * then becomes, at every sample (a detection too): T's watches armed
 * wp_life or more samples ago end; every store sample logged since T's
 * previous sample (step 4 logs each, whether the board took it or not:
 * board_log; at most the last BOARD_RECENT), from another thread and not
 * on the sampled line, is watched (a WP_ARM each, one
 * register covering its line; a line already watched takes the newer
 * sample; when the slots are full the oldest watch gives way).  A hit
 * carries the bytes the access touched (true or false sharing from the two
 * accesses' bytes, as the exact model).  A watch ends when the watcher
 * stores to the bytes of the publication it watches (an overwrite); until
 * then its first hit is reported, and the overwrite too, as a second hit
 * (cd_lines_hit).  Offline, each detection and each first hit is credited
 * to its line's latest known writer since the publication it came from
 * (cd_credit), not to a publisher whose data another thread has replaced
 * since: the event's weight (one sample's period) stays, only its source
 * moves (true or false sharing is still decided against the publication's
 * bytes, as for a WP_HIT in FORMAT.md: a later writer's known bytes are a
 * selection).  Known writers are store samples (every thread's stores, sampled
 * alike) and overwrites: a store to the bytes another thread's store wrote
 * comes after it (in a program without data races, synchronization orders
 * the two), so the overwriter is that data's newer writer (a pipeline's
 * stages).  Any store of a watcher would not do: a falsely shared line has
 * concurrent writers of their own bytes (a radix sort's scatter), and a
 * watcher's first store to it says nothing of who writes last, while the
 * publisher's later stores go unseen (crediting those took the emulate
 * model's r on tests/kernels/alltoall from 0.97 to 0.76).
 *
 * Expiry rules (enum cd_expiry), for an entry E published by thread P:
 *   CD_EXPIRY_RECORDER  the recorder's: any E is a detection; T replaces E
 *                       when E was published before T's previous store
 *                       sample (its previous sample of any kind if none;
 *                       the paper: "deemed expired if it survived for more
 *                       than two store events from the same thread")
 *   CD_EXPIRY_INTERVAL  E is recent while its age is at most the interval
 *                       between P's last two store samples (always before
 *                       P's second store sample); T replaces E when it is
 *                       not recent
 *   CD_EXPIRY_NS        E is recent while its age is at most N ns
 *   CD_EXPIRY_SAMPLES   E is recent while P has taken fewer than N store
 *                       samples since publishing it
 * and for a watchpoint hit (cd_hit_recent), with the watcher W:
 *   INTERVAL: hit time - publish time <= W's interval between its last two
 *   samples (loads too) when it armed; NS: <= N; SAMPLES: W took fewer than
 *   N samples since it armed; RECORDER: every hit (the recorder disarms old
 *   watchpoints itself).
 *
 * Async-signal-safe: no allocation, no locks beyond the board's lock-free
 * protocol, no stdio. */
#ifndef CT_COMDETECTIVE_H
#define CT_COMDETECTIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "board.h"
#include "commtrace.h"

#define CD_WORD_BYTES 8     /* M: bytes one debug register watches */
#define CD_LINES_MAX 64     /* line watches per thread, at most */
#define CD_ARMS_STEP 16     /* line watches one sample arms, at most */
#define CD_REG_BYTES 128    /* a line watch's register covers at most this (u8 wp_len) */

enum cd_expiry {
	CD_EXPIRY_INTERVAL = 0,
	CD_EXPIRY_NS = 1,
	CD_EXPIRY_SAMPLES = 2,
	CD_EXPIRY_RECORDER = 3,
};

/* One thread's part of Algorithm 1: zero for a thread that has not sampled. */
struct cd_history {
	uint64_t t_prev;            /* publish time of its last detection */
	uint64_t s_last, s_prev;    /* times of its last two samples (0: none) */
	uint64_t st_last, st_prev;  /* times of its last two store samples (0: none) */
	uint64_t nsamples, nstores;
	uint64_t log_seen;          /* line watches: board_log calls its arms have looked at */
};

struct cd_rules {
	struct board *board;        /* NULL: no board (cd_step keeps the history only) */
	enum cd_expiry expiry;
	uint64_t expiry_value;      /* N of CD_EXPIRY_NS and CD_EXPIRY_SAMPLES */
	unsigned line_size;         /* bytes: an arm chooses among line_size / 8 words */
	/* Every thread's history by index, for the rules that look at an
	 * entry's publisher (INTERVAL, SAMPLES); may be NULL for the others. */
	const struct cd_history *threads;
	size_t nthreads;
	/* Line watches (see above); 0: debug registers' words (struct cd_watch). */
	unsigned wp_lines;          /* slots per thread, at most CD_LINES_MAX */
	unsigned wp_life;           /* a watch ends when its watcher has taken this many
	                               samples since it armed (at least 1) */
	bool wp_one_hit;            /* every hit ends its watch (traces before format 5) */
};

/* One thread's line watches: slot i (bit i of live) watches the line at
 * line[i] for the publication of the bytes [pub[i], pub[i] + pub_len[i]),
 * armed when the watcher had taken born[i] samples; bit i of hit: its first
 * hit is reported, it waits for the overwrite. */
struct cd_lines {
	uint64_t live, hit;
	uint64_t line[CD_LINES_MAX];
	uint64_t born[CD_LINES_MAX];
	uint64_t pub[CD_LINES_MAX];
	uint8_t pub_len[CD_LINES_MAX];
};

struct cd_access {              /* the sampled access */
	uint64_t time, addr, ip;
	uint32_t cpu;
	uint8_t len;                /* published as given */
	bool store;                 /* a store or an atomic */
};

struct cd_watch {               /* the sampling thread's watchpoints */
	unsigned nwp;               /* registers it can arm (0: it never arms) */
	bool armed, hit;            /* armed now; one of them trapped since */
	uint64_t arm_time;          /* when they were armed */
	struct cd_lines *lines;     /* c->wp_lines: its line watches (cd_step updates them) */
};

struct cd_line_arm {            /* a line watch armed by cd_step */
	unsigned slot;
	struct ct_wp_arm arm;       /* its WP_ARM record's fields */
};

struct cd_step {                /* fields after a false flag are undefined */
	bool detected;
	struct board_view src;      /* detected: the entry (publisher, access, time) */
	bool disarm;                /* the watchpoints were old: switch them off */
	struct ct_wp_arm arm;       /* arm.nwp > 0: watch arm.wp_addr[0..nwp-1] for
	                               the entry arm.pub_* (a WP_ARM record; the
	                               fields past nwp undefined) */
	bool published;
	/* line watches: the ones armed (in order), and whether any ended */
	unsigned narms;
	struct cd_line_arm arms[CD_ARMS_STEP];
	bool lines_changed;
};

/* One sample of thread `self`, whose history is h.  w: its watchpoints, or
 * NULL when the caller never arms (the comdetective model replays recorded
 * arms); rnd: its random state (board_random), used only to arm. */
void cd_step(const struct cd_rules *c, uint32_t self, struct cd_history *h,
             const struct cd_access *a, const struct cd_watch *w, uint64_t *rnd,
             struct cd_step *out);

/* Line watches (c->wp_lines > 0), for those who replay recorded ones (the
 * comdetective model) the same way cd_step keeps them:
 * cd_lines_expire  at each sample, after cd_step: end the watches armed
 *                  wp_life or more samples ago (h: the watcher's history);
 *                  true if one ended;
 * cd_lines_add     a watch armed now (the WP_ARM's fields: the line at
 *                  wp_addr[0], the publication pub_addr, pub_len): its slot;
 * cd_lines_find    the slot of a live watch (of lines of line_size bytes)
 *                  that [addr, addr+len) touches, or -1; with lo and n
 *                  (may be NULL) the bytes of the access on that line, as a
 *                  WP_HIT holds them (n at most 255);
 * cd_lines_hit     an access of the bytes [lo, lo+n) of slot's line (store:
 *                  a store or an atomic) touched its watch: true if it is a
 *                  hit to report (a WP_HIT): the watch's first, or an
 *                  overwrite (cd_lines_overwrite), which ends the watch
 *                  (any hit with one_hit: rules.wp_one_hit);
 * cd_lines_drop    end slot's watch. */
bool cd_lines_expire(const struct cd_rules *c, const struct cd_history *h, struct cd_lines *l);
/* Between two samples of thread self (history h, which has sampled): the
 * store samples logged since its last arms are armed now, as its next
 * sample would arm them (out: narms and arms as cd_step's), so that an
 * access of self before that sample is seen (the inst sampler calls it
 * every few accesses: INST_CATCH_UP). */
void cd_lines_catch_up(const struct cd_rules *c, uint32_t self, struct cd_history *h,
                       uint64_t now, struct cd_lines *l, struct cd_step *out);
unsigned cd_lines_add(const struct cd_rules *c, const struct cd_history *h, struct cd_lines *l,
                      const struct ct_wp_arm *arm);
int cd_lines_find(const struct cd_lines *l, unsigned line_size, uint64_t addr, uint64_t len,
                  uint64_t *lo, unsigned *n);
bool cd_lines_hit(struct cd_lines *l, unsigned slot, uint64_t lo, unsigned n, bool store,
                  bool one_hit);
static inline void cd_lines_drop(struct cd_lines *l, unsigned slot)
{
	l->live &= ~(1ull << slot);
	l->hit &= ~(1ull << slot);
}
/* Has slot's watch reported its first hit (the next is an overwrite)? */
static inline bool cd_lines_was_hit(const struct cd_lines *l, unsigned slot)
{
	return l->hit >> slot & 1;
}
/* Does a store of the bytes [lo, lo+n) overwrite slot's publication? */
static inline bool cd_lines_overwrite(const struct cd_lines *l, unsigned slot, uint64_t lo,
                                      unsigned n, bool store)
{
	return store && lo < l->pub[slot] + l->pub_len[slot] && l->pub[slot] < lo + n;
}
/* A WP_ARM's registers for a watch of the whole line at `line` (size
 * line_size): consecutive ranges of at most CD_REG_BYTES. */
void cd_line_registers(struct ct_wp_arm *arm, uint64_t line, unsigned line_size);

/* The lines' latest known writers, for crediting (offline: the
 * comdetective model with line watches): a board (board.h) whose slot of a
 * line holds the newest known writer's store noted (see above).
 * cd_writer_note  note store v (any thread's);
 * cd_credit       a communication to `self` seen at `now` on the line of
 *                 *src, the publication it came from: when a later store to
 *                 the line is known (at or before now), it replaces *src;
 *                 false when that store is self's own (what self saw is its
 *                 own write: no communication). */
void cd_writer_note(struct board *w, const struct board_view *v);
bool cd_credit(const struct board *w, uint32_t self, uint64_t now, struct board_view *src);

/* What the watchpoint expiry needs of an arm, noted when the watcher
 * (history h, right after the sample that armed) arms. */
struct cd_arm_note {
	uint64_t pub_time;          /* the watched entry's publish time */
	uint64_t interval;          /* the watcher's last sample interval (UINT64_MAX: none yet) */
	uint64_t nsamples;          /* the watcher's samples then */
};
void cd_arm_noted(const struct cd_history *h, uint64_t pub_time, struct cd_arm_note *n);
/* Is a hit at `time` on that arm still recent?  h: the watcher's history now.
 * Line watches end by their own rule (wp_life): the comdetective rule
 * counts every hit the recorder reported. */
bool cd_hit_recent(const struct cd_rules *c, const struct cd_history *h,
                   const struct cd_arm_note *n, uint64_t time);


/* ---- the step, inline: the analyzer replays it for every sample --------- */

/* cd_step's arming (comdetective.c): TryArmWatchpoint, and the line watches. */
void cd_try_arm(const struct cd_rules *c, uint32_t self, const struct cd_history *h,
                uint64_t now, const struct cd_watch *w, uint64_t *rnd, struct cd_step *out);
void cd_arm_lines(const struct cd_rules *c, uint32_t self, struct cd_history *h,
                  uint64_t now, uint64_t sampled, struct cd_lines *l, struct cd_step *out);

/* Algorithm 1's history of a thread and the expiry rules (cd_step's). */
static inline void cd_history_add(struct cd_history *h, uint64_t time, bool store)
{
	h->s_prev = h->s_last;
	h->s_last = time;
	h->nsamples++;
	if (store) {
		h->st_prev = h->st_last;
		h->st_last = time;
		h->nstores++;
	}
}

static inline uint64_t cd_age(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

static inline const struct cd_history *cd_publisher(const struct cd_rules *c,
                                                     const struct board_view *v)
{
	return c->threads && v->thread < c->nthreads ? &c->threads[v->thread] : NULL;
}

/* The expiry rule for something of that age, `since` samples old (the
 * rule's count), against an interval (UINT64_MAX: none yet). */
static inline bool cd_within(const struct cd_rules *c, uint64_t age, uint64_t since,
                             uint64_t interval)
{
	switch (c->expiry) {
	case CD_EXPIRY_RECORDER:
		return true;
	case CD_EXPIRY_NS:
		return age <= c->expiry_value;
	case CD_EXPIRY_SAMPLES:
		return since < c->expiry_value;
	case CD_EXPIRY_INTERVAL:
	default:
		return age <= interval;
	}
}

/* Is entry v still recent at `now`?  Its publisher's store samples since
 * and last store interval count; a publisher the caller does not know of
 * leaves it recent. */
static inline bool cd_entry_recent(const struct cd_rules *c, const struct board_view *v,
                                   uint64_t now)
{
	const struct cd_history *p = cd_publisher(c, v);
	uint64_t since = p ? p->nstores - v->count : 0;
	uint64_t interval = p && p->nstores >= 2 ? p->st_last - p->st_prev : UINT64_MAX;
	return cd_within(c, cd_age(now, v->time), since, interval);
}

/* May the store sample whose history h has just taken replace the stable
 * entry v (recent: cd_entry_recent)? */
static inline bool cd_may_replace(const struct cd_rules *c, const struct cd_history *h,
                                  const struct board_view *v, bool recent)
{
	if (c->expiry != CD_EXPIRY_RECORDER)
		return !recent;
	uint64_t older = h->st_prev ? h->st_prev : h->s_prev;  /* before this sample */
	return v->time < older;
}

/* cd_step itself, for the callers that run it in a loop (w and rnd NULL:
 * the arming drops out, and out's arming fields, disarm to lines_changed,
 * are not set). */
static inline __attribute__((always_inline)) void
cd_step_inline(const struct cd_rules *c, uint32_t self, struct cd_history *h,
               const struct cd_access *a, const struct cd_watch *w, uint64_t *rnd,
               struct cd_step *out)
{
	out->detected = out->published = false;
	struct cd_lines *lines = c->wp_lines && w ? w->lines : NULL;
	if (w) {                    /* (a memset of *out costs more than the rest) */
		out->disarm = false;
		out->arm.nwp = 0;
		out->narms = 0;
	}
	cd_history_add(h, a->time, a->store);
	if (w)
		out->lines_changed = lines && cd_lines_expire(c, h, lines);
	if (!c->board)
		return;
	/* A load of a caller that never arms, whose line is not on the board,
	 * has nothing left to do: no detection, no arming, no publishing.  (A
	 * board of one thread, the analyzer's: its plain read is the entry.) */
	if (!w && !a->store && !board_has_line(c->board, a->addr))
		return;
	struct board_view v;
	struct board_slot slot;
	bool have = board_lookup(c->board, a->addr, &v, &slot);
	bool found = have && board_line(c->board, v.addr) == board_line(c->board, a->addr) &&
	             v.thread != self && v.time > h->t_prev;
	/* (the expiry rule only where it decides: a detection, a store) */
	bool recent = have && (found || a->store) && cd_entry_recent(c, &v, a->time);
	if (found && recent) {
		out->detected = true;   /* lines 11-17 */
		out->src = v;
		h->t_prev = v.time;
	} else if (!lines && w) {  /* (no call where the caller never arms) */
		cd_try_arm(c, self, h, a->time, w, rnd, out);
	}
	if (lines)
		cd_arm_lines(c, self, h, a->time, board_line(c->board, a->addr), lines, out);
	if (!a->store)
		return;
	struct board_view mine = {
		.addr = a->addr, .time = a->time, .ip = a->ip, .count = h->nstores,
		.thread = self, .cpu = a->cpu, .len = a->len,
	};
	if (!have || cd_may_replace(c, h, &v, recent))
		out->published = board_replace(c->board, &slot, &mine);  /* lines 22-26 */
	if (c->wp_lines)
		board_log(c->board, &mine);
}

#endif
