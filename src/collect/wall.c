/* Wall-clock sampling without EINTR (see wall.h for the scheme). */
#include "collect/wall.h"
#include "collect/collector.h"
#include "collect/context.h"
#include "collect/ring.h"
#include "collect/sample.h"
#include "collect/threads.h"
#include "rt/thread.h"
#include "rt/sys.h"
#include "symbols/symbols.h"
#include "unwind/remote.h"

#include <linux/utsname.h>

#define RING_RECORDS 128u
/* A running request that has not fired after this long (the thread did not
 * run through a scheduler tick) is withdrawn. */
#define REQUEST_PATIENCE_NS 20000000ull
/* Owed running time waits this many CPU periods for the thread's next CPU
 * signal before the visits arm the wall profile's own timer. */
#define CARRY_PATIENCE 4u
/* A thread on a CPU for at least 1/BUSY_SHARE of a span is asked whether
 * it still is, and how long it waited for a CPU. */
#define BUSY_SHARE 16u
/* Time blocked in waits no visit saw is held this long at most for the
 * next wait a visit finds; then the last wait found takes it (or, with
 * none, the running samples). */
#define UNSEEN_PATIENCE_NS RT_NS_PER_SEC
/* Descriptors of /proc/self/task/TID/syscall kept open at most; beyond
 * that the file is opened for each read. */
#define PROC_FDS_MAX 256
/* Thread names: re-read after a second (names are often set right after
 * the thread starts), then every 10 s. */
#define NAME_YOUNG_NS (2 * RT_NS_PER_SEC)
#define NAME_REFRESH_YOUNG_NS RT_NS_PER_SEC
#define NAME_REFRESH_OLD_NS (10 * RT_NS_PER_SEC)
#define PENDING_FLUSH_NS RT_NS_PER_SEC
#define HANDLER_CHECK_NS RT_NS_PER_SEC
#define TP_BUCKETS 8192u
#define SYSCALL_TEXT_MAX 256
#define STOP_WAIT_MS 200
/* While every thread a tick visits waits in an interposed call, the next
 * tick comes QUIET_TICK_NS later, and each further quiet tick twice as
 * late as the one before, up to QUIET_TICK_MAX_NS; a tick that is not
 * quiet halves that length (after a tick a leaving cut short the quiet
 * ticks need not start over: a thread that wakes now and then to wait
 * again, a writer on a timer, is visited about twice per wake-up, while
 * a few busy ticks bring them back to QUIET_TICK_NS).  The first thread
 * to leave its call times its leaving (wall_left_ns: the span up to it is
 * that call's exactly) and wakes the sampler thread, so ticks at the
 * configured rate follow it as it runs. */
#define QUIET_TICK_NS (100 * 1000000ull)
#define QUIET_TICK_MAX_NS RT_NS_PER_SEC
/* A thread that runs flat out, its running samples taken by the CPU
 * profile's signals, needs no visit but for its waits for a CPU: while
 * every thread is quiet or flat, ticks come up to this far apart (a flat
 * thread that starts to wait is found that late; the time is placed by the
 * usual rules). */
#define FLAT_TICK_MAX_NS (100 * 1000000ull)
/* Stack scan for code without unwind tables (musl): words read above sp,
 * and candidate return addresses tried at most. */

/* One running sample as the handler leaves it; pcs has max_frames + 2 slots. */
struct wall_record {
	struct ring_head head;
	int tid;
	int slot;
	uint32_t depth;
	bool has_context;
	/* Raised inside an interposed call: its state is that call's kind and
	 * descriptor, classified when drained. */
	bool in_call;
	int8_t state; /* enum wall_state */
	int fd;
	uint64_t weight_ns;
	struct context_value context; /* the thread's span context when sampled */
	uint64_t pcs[];
};


/* Stacks of the interposed calls a thread waited in recently, keyed by the
 * call's frame and return address: a thread alternating between a few
 * waits (an event loop, a read loop and a poll) finds each stack without
 * unwinding again, so a short call cannot end while its stack is read. */
#define RECENT_FRAMES 4
/* A call that ended while its stack was read is read again at once if the
 * thread is back in a call from the same frame, at most this often. */
#define UNWIND_RETRIES 2

/* What identifies a published call's stack: its frame, and the return
 * address into its caller (two callers at the same depth share the frame). */
struct frame_key {
	uint64_t pc, sp, fp, ra;
	uint64_t callee; /* follows from pc (one wrapper, one callee): not compared */
};

struct recent_frame {
	struct frame_key key;
	uint64_t *pcs; /* max_frames + 2, or NULL */
	uint32_t depth;
	uint32_t used;  /* visit count when last used: the least recent goes */
};

#define CACHE_NONE 0
#define CACHE_PUBLISHED 1 /* valid while wall_seq == cache_seq */
#define CACHE_SYSCALL 2   /* valid while the CPU clock == cache_cpu */
/* A blocked thread's stack that ran out at once (unwind_ran_out_at_once:
 * code without tables whose scan found no caller) is unwound again at this
 * many visits of the same wait before it stands for the rest of it: one
 * read can miss. */
#define BROKEN_RETRIES 8u

/* What the sampler thread alone knows about a slot. */
struct wall_private {
	uint64_t request_ns; /* when the running request was armed */
	uint64_t owed_since; /* since when owed time waits for a CPU signal; 0: none owed */
	uint64_t *stack;     /* cached stack (max_frames + 2), or NULL */
	uint64_t cache_cpu;
	uint64_t broken_cpu; /* the wait whose stack broke off (its CPU clock) */
	uint64_t first_seen_ns;
	uint64_t name_ns;
	/* Samples of the cached stack not yet in the recorder (aggregated
	 * here: one recorder_add per second instead of one per tick). */
	uint64_t pend_ns;
	uint64_t pend_since;
	/* The span context the pending samples were taken under (allocated on
	 * first use; NULL: none), and its generation: a change flushes them. */
	struct context_value *pend_ctx;
	unsigned pend_gen;
	uint32_t pend_count;
	int tid;       /* the thread this state belongs to, 0: none */
	int proc_fd;   /* /proc/self/task/TID/syscall, -1: not open */
	int sched_fd;  /* /proc/self/task/TID/schedstat, -1: not open */
	int timer_id;  /* one-shot CPU-clock timer, -1: none */
	int class_fd;  /* descriptor last classified, -1: none */
	uint32_t depth;
	uint32_t cache_seq;
	uint32_t recent_clock;
	uint32_t flag_seq; /* wall_seq just after we raised wall_inflight */
	uint32_t stamp_seq; /* the call whose end the thread was asked to time */
	uint32_t last_seq; /* wall_seq at the previous visit */
	uint32_t taken_seen; /* the thread's wall_taken at owed_since */
	uint8_t cache;
	uint8_t broken_tries; /* unwinds of that wait that broke off */
	uint8_t cache_state; /* enum wall_state */
	uint8_t class_state;
	bool pend_has_ctx;
	/* pend_ctx/pend_gen are the context of the cached stack's own samples
	 * (kept after a flush; cleared when another stack is cached). */
	bool pend_ctx_of_stack;
	bool visited;     /* visit_span() has a previous visit */
	uint8_t last_end; /* enum visit_end of the latest visit (0, VISIT_BUSY, before any) */
	bool cpu_known, delay_known;
	/* The previous visit found the thread waiting, at the cached stack. */
	bool after_wait;
	/* The running request: wall_inflight raised by us, and the timer
	 * armed; no_timer: the timer cannot be created. */
	bool flagged, armed, no_timer;
	struct recent_frame recent[RECENT_FRAMES];
	/* visit_span(): the previous visit, and time not yet placed. */
	uint64_t last_visit;
	uint64_t unplaced;
	/* The thread's CPU time, and time waiting for a CPU, that the visits
	 * have handed to its running samples. */
	uint64_t last_cpu, last_delay, last_slices;
	/* Time blocked in waits that began and ended between two visits, held
	 * for the next wait a visit finds (since unseen_since). */
	uint64_t unseen_ns, unseen_since;
	char name[THREAD_NAME_MAX];
};

static struct {
	atomic_int running;      /* ticks should be served */
	atomic_int alive;        /* a sampler thread serves the ticks */
	/* 1 while the sampler thread is in a tick, 2 when a stop waits for it
	 * to end (woken then). */
	atomic_int ticking;
	atomic_int signals_on;   /* our handler is installed and ours */
	/* The CPU profile's signals take running samples (!calls_block). */
	atomic_int cpu_carries;
	/* The CPU profile's sampling period (wall_cpu_period), 0: off. */
	atomic_ullong cpu_period_ns;
	int signo;
	const struct sw_config *cfg;
	struct recorder *rec;
	uint32_t max_frames;
	atomic_ullong period_ns; /* changed by wall_set_rate */
	uint32_t configured_hz;
	/* The sampler thread's: when the next tick is due, its length, the
	 * thread serving them, and the CPU time the ticks took. */
	uint64_t next_tick_ns, tick_ns, last_due;
	/* The length of the last quiet tick, halved by each tick that is not
	 * quiet (QUIET_TICK_NS). */
	uint64_t quiet_ns;
	int served_tid;
	/* The next tick is a quiet one, late: the first thread to leave a call
	 * it was asked to time lowers it and wakes the sampler thread. */
	atomic_int stretched;
	/* How soon after the previous tick a tick cut short by a leaving
	 * comes: one period, or up to FLAT_TICK_MAX_NS when every thread the
	 * last tick visited has its running samples taken by CPU signals (the
	 * visits then only place blocked time); a thread that starts raises
	 * cut_to_period, for a first visit one period after the previous tick. */
	uint64_t cut_ns;
	atomic_int cut_to_period;
	atomic_ullong cpu_ns;
	struct sample_ring ring;
	uint64_t *scratch; /* sampler thread: max_frames + 2 */
	int cursor;
	int open_fds;
	int fd_floor; /* kept descriptors are moved to at least this number */
	/* The sampler thread's descriptors live in a table of its own: nobody
	 * else closes or reuses their numbers, and they go with the thread. */
	bool private_files;
	uint64_t handler_checked_ns;
	struct sys_sigaction previous;
	atomic_ullong ticks, published, cached, syscall_samples, running_samples, cancelled,
		unstable, dropped, carried;
} wall;

static struct wall_private priv[THREADS_MAX];
/* Entries of priv[] given their defaults (no descriptor, no timer): set on
 * a slot's first use, so the table's untouched pages are never written and
 * stay shared with a parent process after fork. */
static atomic_ullong priv_ready[THREADS_MAX / 64];
/* Slots the sampler visits: set when a thread is added, cleared by the
 * sampler once the slot is empty and its private state released.  Lets a
 * tick skip the empty part of the table without touching it. */
#define SLOT_WORDS (THREADS_MAX / 64)
static atomic_ullong slot_bits[SLOT_WORDS];
/* Words of slot_bits that ever had a bit set since start or fork (never
 * cleared otherwise): a tick scans those only, not the whole table. */
static atomic_ullong slot_words;
_Static_assert(SLOT_WORDS <= 64, "slot_words has a bit per word of slot_bits");
/* A blocking call's entry and exit touch one line of their slot. */
_Static_assert(offsetof(struct thread_slot, wall_depth) + sizeof(uint16_t) <= 64 &&
		       _Alignof(struct thread_slot) == 64,
	       "the hooks' fields of a thread slot fill its first cache line");

static void mark_slot(int s)
{
	uint64_t word = 1ull << (s / 64);
	if (!(atomic_load_explicit(&slot_words, memory_order_relaxed) & word))
		atomic_fetch_or(&slot_words, word);
	atomic_fetch_or(&slot_bits[s / 64], 1ull << (s % 64));
}

static void priv_prepare(int s)
{
	uint64_t bit = 1ull << (s % 64);
	if (atomic_load_explicit(&priv_ready[s / 64], memory_order_relaxed) & bit)
		return;
	priv[s].proc_fd = -1;
	priv[s].sched_fd = -1;
	priv[s].timer_id = -1;
	priv[s].class_fd = -1;
	atomic_fetch_or(&priv_ready[s / 64], bit);
}

/* The first prepared entry of priv[] at or after `from`, or -1. */
static int next_prepared(int from) { return rt_bitmap_next(priv_ready, THREADS_MAX / 64, from); }
static atomic_int tp_map[TP_BUCKETS]; /* slot + 1, 0: none */
/* Buckets of tp_map ever written: a fork child clears only these, never
 * reading the pages of buckets no thread used. */
static atomic_ullong tp_map_used[TP_BUCKETS / 64u];

/* Reads /proc/self/task/TID/<name> through *fd, keeping the descriptor
 * open when the budget allows.  The length read, or <= 0 if the thread is
 * gone or the descriptor no longer names that file. */
static long read_task_file(struct wall_private *w, int *fd, const char *name, char *text, size_t cap)
{
	long n;
	if (*fd < 0) {
		char path[64];
		rt_snprintf(path, sizeof(path), "/proc/self/task/%d/%s", w->tid, name);
		long opened = sys_open(path, O_RDONLY, 0);
		if (opened < 0)
			return -1;
		if (wall.open_fds >= PROC_FDS_MAX) {
			n = sys_pread((int)opened, text, cap, 0);
			(void)sys_close((int)opened);
			return n;
		}
		/* Kept descriptors live high, out of the way of the program's
		 * low-numbered ones (select() users), when they share its table. */
		long high = wall.private_files ? -1 : sys_fcntl((int)opened, F_DUPFD_CLOEXEC, wall.fd_floor);
		if (high >= 0) {
			(void)sys_close((int)opened);
			opened = high;
		}
		*fd = (int)opened;
		wall.open_fds++;
	}
	n = sys_pread(*fd, text, cap, 0);
	if (n <= 0) {
		/* Not what we opened any more (sharing its table, the program
		 * closed it and reused the number): forget it without closing
		 * what is now the program's. */
		*fd = -1;
		wall.open_fds--;
	}
	return n;
}

/* The thread's syscall file.  False if the thread is gone or the text is
 * malformed. */
static bool read_syscall(struct wall_private *w, struct wall_syscall_info *out)
{
	char text[SYSCALL_TEXT_MAX] = { 0 };
	long n = read_task_file(w, &w->proc_fd, "syscall", text, sizeof(text) - 1);
	if (n > 0 && wall_parse_syscall(text, (size_t)n, out))
		return true;
	if (n > 0 && w->proc_fd >= 0) {
		w->proc_fd = -1; /* someone else's file now */
		wall.open_fds--;
	}
	return false;
}

/* The time the thread has waited for a CPU, and how many times it got one,
 * from its schedstat file. */
static bool read_run_delay(struct wall_private *w, uint64_t *delay, uint64_t *slices)
{
	char text[96] = { 0 };
	long n = read_task_file(w, &w->sched_fd, "schedstat", text, sizeof(text) - 1);
	if (n > 0 && wall_parse_schedstat(text, (size_t)n, delay, slices))
		return true;
	if (n > 0 && w->sched_fd >= 0) {
		w->sched_fd = -1;
		wall.open_fds--;
	}
	return false;
}

/* Closes a kept descriptor (on the sampler thread).  Sharing the
 * program's table, the program may have closed it and reused the number
 * for a file of its own: then it is only forgotten.  (The file of a thread
 * that has exited reads back with " (deleted)".) */
static void give_back_fd(struct wall_private *w, int *fd, const char *name)
{
	if (wall.private_files) {
		(void)sys_close(*fd);
		*fd = -1;
		wall.open_fds--;
		return;
	}
	char link[64], target[80], expected[64];
	rt_snprintf(link, sizeof(link), "/proc/self/task/%d/fd/%d", (int)sys_gettid(), *fd);
	size_t len = rt_snprintf(expected, sizeof(expected), "/proc/%d/task/%d/%s", (int)sys_getpid(),
				 w->tid, name);
	long n = sys_readlinkat(AT_FDCWD, link, target, sizeof(target) - 1);
	if (n > 0 && len < sizeof(expected)) {
		target[n] = 0;
		if (rt_strncmp(target, expected, len) == 0 &&
		    (target[len] == 0 || rt_streq(target + len, " (deleted)")))
			(void)sys_close(*fd);
	}
	*fd = -1;
	wall.open_fds--;
}

/* Off the sampler thread, which no longer ticks for us and is ending: its
 * private table goes with it, and the numbers name nothing of ours here. */
static void forget_private_fds(struct wall_private *w)
{
	if (!wall.private_files)
		return;
	if (w->proc_fd >= 0)
		wall.open_fds--;
	if (w->sched_fd >= 0)
		wall.open_fds--;
	w->proc_fd = -1;
	w->sched_fd = -1;
}

static void give_back_fds(struct wall_private *w)
{
	if (w->proc_fd >= 0)
		give_back_fd(w, &w->proc_fd, "syscall");
	if (w->sched_fd >= 0)
		give_back_fd(w, &w->sched_fd, "schedstat");
}

/* ---- per-slot sampler state ---- */

static bool thread_cpu_ns(int tid, uint64_t *out)
{
	struct __kernel_timespec ts = { 0, 0 };
	if (sys_clock_gettime(sys_thread_cpu_clock(tid), &ts) != 0)
		return false;
	*out = sys_timespec_ns(&ts);
	return true;
}

static void flush_pending(struct wall_private *w, uint64_t now);

static void private_release(struct wall_private *w)
{
	/* Waits no visit saw, of a thread that is gone: the last wait found
	 * takes them, under that wait's own context. */
	if (w->unseen_ns && w->stack && w->pend_ctx_of_stack) {
		w->pend_count++;
		w->pend_ns += w->unseen_ns;
	}
	flush_pending(w, rt_monotonic_ns());
	give_back_fds(w);
	if (w->timer_id >= 0)
		(void)sys_timer_delete(w->timer_id);
	rt_free(w->stack);
	rt_free(w->pend_ctx);
	for (int i = 0; i < RECENT_FRAMES; i++)
		rt_free(w->recent[i].pcs);
	rt_memset(w, 0, sizeof(*w));
	w->proc_fd = -1;
	w->sched_fd = -1;
	w->timer_id = -1;
	w->class_fd = -1;
}

static const char *private_name(struct wall_private *w, uint64_t now)
{
	uint64_t age = now - w->first_seen_ns;
	uint64_t refresh = age < NAME_YOUNG_NS ? NAME_REFRESH_YOUNG_NS : NAME_REFRESH_OLD_NS;
	if (w->name_ns == 0 || now - w->name_ns >= refresh) {
		char path[64], name[32];
		rt_snprintf(path, sizeof(path), "/proc/self/task/%d/comm", w->tid);
		long n = rt_read_file(path, name, sizeof(name));
		if (n > 0) {
			if (name[n - 1] == '\n')
				name[n - 1] = 0;
			rt_strlcpy(w->name, name, sizeof(w->name));
		}
		w->name_ns = now;
	}
	return w->name;
}

/* The wall time this visit stands for: since the thread's previous visit,
 * plus what an earlier visit could not place (the thread left its wait while
 * its stack was read).  Every visit observes the state at its own instant
 * and stands for the same span before it, so each place's total is an
 * unbiased estimate of the time spent there however the thread alternates
 * between running, system calls and waits.  The first visit only starts the
 * count. */
static uint64_t visit_span(struct wall_private *w, uint64_t now)
{
	if (!w->visited) {
		w->visited = true;
		w->last_visit = now;
		return 0;
	}
	uint64_t d = now > w->last_visit ? now - w->last_visit : 0;
	w->last_visit = now;
	d += w->unplaced;
	w->unplaced = 0;
	return d;
}

/* ctx: the thread's span context when the samples were taken, or NULL. */
static void record_sample(const struct context_value *ctx_value, int tid, const char *name,
			  const uint64_t *pcs, uint32_t depth, enum wall_state state, uint32_t count,
			  uint64_t weight)
{
	if (weight == 0)
		return;
	struct sw_value values[2] = { { SW_V_WALL_SAMPLES, count }, { SW_V_WALL_TIME, (int64_t)weight } };
	struct sw_label labels[3 + CONTEXT_MAX_SAMPLE_LABELS] = {
		{ .key = SW_LABEL_THREAD_ID, .num = tid },
		{ .key = SW_LABEL_THREAD_NAME, .str = name },
		{ .key = SW_LABEL_STATE, .str = wall_state_name(state) },
	};
	uint32_t n_labels = 3;
	static struct context_labels ctx; /* wall sampler thread only */
	if (ctx_value) {
		ctx.value = *ctx_value;
		context_to_labels(&ctx);
		for (uint32_t k = 0; k < ctx.n; k++)
			labels[n_labels++] = ctx.labels[k];
	}
	struct sw_sample s = { pcs, depth, values, 2, labels, n_labels };
	(void)recorder_add(wall.rec, &s);
}

static void flush_pending(struct wall_private *w, uint64_t now)
{
	if (w->pend_count == 0)
		return;
	record_sample(w->pend_has_ctx ? w->pend_ctx : NULL, w->tid, private_name(w, now), w->stack,
		      w->depth, w->cache_state, w->pend_count, w->pend_ns);
	w->pend_count = 0;
	w->pend_ns = 0;
}

/* Whether otel is the OpenTelemetry span the pending samples were taken under. */
static bool same_otel_span(const struct wall_private *w, const struct otel_span *otel)
{
	const struct otel_span *pend = w->pend_has_ctx ? &w->pend_ctx->otel : NULL;
	if (!pend || pend->span_id == 0)
		return otel->span_id == 0;
	if (pend->span_id != otel->span_id || rt_memcmp(pend->trace_id, otel->trace_id, 16) != 0 ||
	    pend->n_attrs != otel->n_attrs)
		return false;
	for (uint32_t i = 0; i < otel->n_attrs && i < OTEL_ATTRS_MAX; i++)
		if (pend->attrs[i].key != otel->attrs[i].key ||
		    !rt_streq(pend->attrs[i].value, otel->attrs[i].value))
			return false;
	return true;
}

/* The span context of a thread inside an interposed call, read while the
 * call lasted (checked after the reads): a thread that leaves the call and
 * clears its span meanwhile must not have the call's time labelled with
 * the context it runs under afterwards. */
struct call_context {
	unsigned gen; /* the API context's generation (0: none) */
	bool api;     /* value holds that generation's API context */
	struct context_value value; /* value.otel: the OpenTelemetry span */
};

/* Whether the pending samples must end before a sample under (gen, otel). */
static bool pending_differs(const struct wall_private *w, unsigned gen, const struct otel_span *otel)
{
	return w->pend_count && (gen != w->pend_gen || !same_otel_span(w, otel));
}

/* Adds `weight` ns to the pending samples of the cached stack, under the
 * context pend_ctx holds. */
static void pend_add(struct wall_private *w, uint64_t now, uint64_t weight)
{
	if (w->pend_count == 0)
		w->pend_since = now;
	w->pend_count++;
	w->pend_ns += weight;
	if (now - w->pend_since >= PENDING_FLUSH_NS)
		flush_pending(w, now);
}

/* One sample of the cached stack, of `weight` ns.  `in_call`: the thread's
 * context read while the caller knew the stack still stood, or NULL to
 * read it now. */
static void account_cached(int slot, struct wall_private *w, uint64_t now, uint64_t weight,
			   const struct call_context *in_call)
{
	/* With weight 0 only the context is taken: the cached stack's time
	 * found later (account_previous_wait) carries it.  Samples taken
	 * under another span context must not share labels. */
	int ctx_slot = atomic_load(&thread_slots[slot].context_slot);
	unsigned gen;
	/* An OpenTelemetry span has no generation: its record is read (a no-op
	 * without a writer in the process). */
	struct otel_span otel;
	if (in_call) {
		gen = in_call->gen;
		otel = in_call->value.otel;
	} else {
		gen = context_generation(ctx_slot, w->tid);
		(void)otel_context_read_thread(atomic_load(&thread_slots[slot].wall_tp), &otel);
	}
	if (pending_differs(w, gen, &otel))
		flush_pending(w, now);
	if (w->pend_count == 0) {
		w->pend_gen = gen;
		bool want = gen || otel.span_id;
		if (want && !w->pend_ctx)
			w->pend_ctx = rt_malloc(sizeof(*w->pend_ctx));
		w->pend_has_ctx = false;
		if (want && w->pend_ctx) {
			bool api;
			if (in_call) {
				api = in_call->api;
				if (api)
					*w->pend_ctx = in_call->value;
			} else {
				api = gen && context_read_slot(ctx_slot, w->tid, w->pend_ctx);
			}
			if (!api)
				rt_memset(w->pend_ctx, 0, sizeof(*w->pend_ctx));
			w->pend_ctx->otel = otel;
			w->pend_has_ctx = api || otel.span_id;
		}
	}
	w->pend_ctx_of_stack = true;
	if (weight)
		pend_add(w, now, weight);
}

/* Time found late for the wait the previous visit found the thread in (the
 * cached stack): it carries the span context of that wait's samples, not the
 * one the thread runs under now (a request that waited, then ended). */
static void account_previous_wait(int slot, struct wall_private *w, uint64_t now, uint64_t weight)
{
	if (weight == 0)
		return;
	if (!w->pend_ctx_of_stack)
		account_cached(slot, w, now, weight, NULL);
	else
		pend_add(w, now, weight);
}

static void emit_cached(int slot, struct wall_private *w, uint64_t now, uint64_t weight,
			const struct call_context *in_call)
{
	account_cached(slot, w, now, weight, in_call);
	atomic_fetch_add(&wall.cached, 1);
}

/* A published call's stack starts at the C library's function the program
 * called, in place of our wrapper's frame, so the leaf says which call it
 * was (as for a call we do not interpose, found in the C library's code).
 * [signal-safe] */
static void leaf_at_callee(uint64_t *pcs, uint32_t depth, uint64_t wrapper_pc, uint64_t callee)
{
	if (depth > 0 && callee != 0 && pcs[0] == wrapper_pc)
		pcs[0] = callee;
}

/* A published stack, with the markers of an empty or cut one. */
static uint32_t unwind_published(const struct frame_key *k, uint64_t *pcs)
{
	struct unwind_regs regs = { .pc = k->pc, .sp = k->sp, .fp = k->fp };
	enum unwind_end end;
	uint32_t depth = unwind_remote(&regs, pcs, wall.max_frames, &end);
	depth = sample_mark_ends(pcs, depth, end);
	leaf_at_callee(pcs, depth, k->pc, k->callee);
	return depth;
}

/* Replaces the cached stack and its state.  Pending samples go to the
 * recorder first, unless the new stack and state are those already cached
 * (a thread waking and waiting again at the same place): then they keep
 * accumulating, one recorder_add per second instead of one per sample. */
static bool same_pcs(const uint64_t *a, const uint64_t *b, uint32_t depth)
{
	for (uint32_t i = 0; i < depth; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

static bool cache_store(struct wall_private *w, const uint64_t *pcs, uint32_t depth, enum wall_state state,
			uint64_t now)
{
	if (w->stack && w->depth == depth && w->cache_state == (uint8_t)state && same_pcs(w->stack, pcs, depth))
		return true;
	flush_pending(w, now);
	if (!w->stack) {
		w->stack = rt_malloc((wall.max_frames + 2) * sizeof(uint64_t));
		if (!w->stack)
			return false;
	}
	rt_memcpy(w->stack, pcs, depth * sizeof(uint64_t));
	w->depth = depth;
	w->cache_state = (uint8_t)state;
	w->pend_ctx_of_stack = false;
	return true;
}

static enum wall_state state_of_fd(struct wall_private *w, enum wall_state kind, int fd)
{
	if (kind != WALL_STATE_IO || fd < 0)
		return kind;
	if (w->class_fd != fd) {
		w->class_state = (uint8_t)wall_state_of_fd(w->tid, fd);
		w->class_fd = fd;
	}
	return (enum wall_state)w->class_state;
}

static bool same_key(const struct frame_key *a, const struct frame_key *b)
{
	return a->pc == b->pc && a->sp == b->sp && a->fp == b->fp && a->ra == b->ra;
}

/* Reads the published frame of call `seq`; false if the thread is no
 * longer in that call (the values could mix two calls). */
static bool read_published(struct thread_slot *t, uint32_t seq, struct frame_key *k)
{
	k->pc = atomic_load_explicit(&t->wall_pc, memory_order_relaxed);
	k->sp = atomic_load_explicit(&t->wall_sp, memory_order_relaxed);
	k->fp = atomic_load_explicit(&t->wall_fp, memory_order_relaxed);
	k->ra = atomic_load_explicit(&t->wall_ra, memory_order_relaxed);
	k->callee = atomic_load_explicit(&t->wall_callee, memory_order_relaxed);
	return atomic_load(&t->wall_seq) == seq;
}

static struct recent_frame *recent_find(struct wall_private *w, const struct frame_key *k)
{
	for (int i = 0; i < RECENT_FRAMES; i++) {
		struct recent_frame *r = &w->recent[i];
		if (r->pcs && same_key(&r->key, k)) {
			r->used = ++w->recent_clock;
			return r;
		}
	}
	return NULL;
}

static void recent_store(struct wall_private *w, const struct frame_key *k, const uint64_t *pcs, uint32_t depth)
{
	struct recent_frame *r = &w->recent[0];
	for (int i = 1; i < RECENT_FRAMES && r->pcs; i++)
		if (!w->recent[i].pcs || w->recent[i].used < r->used)
			r = &w->recent[i];
	if (!r->pcs) {
		r->pcs = rt_malloc((wall.max_frames + 2) * sizeof(uint64_t));
		if (!r->pcs)
			return;
	}
	r->key = *k;
	rt_memcpy(r->pcs, pcs, depth * sizeof(uint64_t));
	r->depth = depth;
	r->used = ++w->recent_clock;
}

/* Case 1: the thread is inside an interposed blocking call. */
/* The thread's span context, read while it is still inside call `seq`
 * (checked after the reads), so a thread leaving the call and its span
 * meanwhile is not labelled with nothing, or with its next span.  The API
 * context's values are copied only where account_cached will want them. */
static bool read_context_in_call(struct thread_slot *t, const struct wall_private *w, uint32_t seq,
				 bool new_stack, struct call_context *out)
{
	int ctx_slot = atomic_load(&t->context_slot);
	out->gen = context_generation(ctx_slot, w->tid);
	(void)otel_context_read_thread(atomic_load(&t->wall_tp), &out->value.otel);
	out->api = false;
	if (out->gen &&
	    (new_stack || w->pend_count == 0 || pending_differs(w, out->gen, &out->value.otel))) {
		struct otel_span otel = out->value.otel;
		out->api = context_read_slot(ctx_slot, w->tid, &out->value) &&
			   context_generation(ctx_slot, w->tid) == out->gen;
		out->value.otel = otel;
	}
	return atomic_load(&t->wall_seq) == seq;
}

/* Places `span` at the stack of call `seq`; false if the thread left the
 * call while it was read (the span then waits for the next visit). */
static bool sample_published(int slot, struct wall_private *w, uint32_t seq, uint64_t now, uint64_t span)
{
	struct thread_slot *t = &thread_slots[slot];
	struct call_context in_call;
	if (w->cache == CACHE_PUBLISHED && w->cache_seq == seq) {
		if (!read_context_in_call(t, w, seq, false, &in_call)) {
			/* It left the call meanwhile: the span is still that call's,
			 * under the context an earlier visit read in it (left for the
			 * next visit, a thread that then exits would lose it). */
			account_previous_wait(slot, w, now, span);
			atomic_fetch_add(&wall.cached, 1);
			return true;
		}
		emit_cached(slot, w, now, span, &in_call);
		return true;
	}
	struct frame_key k = { 0, 0, 0, 0, 0 };
	const uint64_t *pcs = NULL;
	uint32_t depth = 0;
	for (int attempt = 0; attempt <= UNWIND_RETRIES; attempt++) {
		if (attempt > 0) {
			/* Back in a call from the same frame: that stack is the same. */
			struct frame_key again = { 0, 0, 0, 0, 0 };
			seq = atomic_load(&t->wall_seq);
			if (!(seq & 1u) || !read_published(t, seq, &again) || !same_key(&k, &again))
				break;
		} else if (!read_published(t, seq, &k)) {
			break;
		}
		const struct recent_frame *r = recent_find(w, &k);
		if (r) {
			pcs = r->pcs;
			depth = r->depth;
			break;
		}
		depth = unwind_published(&k, wall.scratch);
		if (atomic_load(&t->wall_seq) == seq) {
			pcs = wall.scratch;
			recent_store(w, &k, pcs, depth);
			break;
		}
		atomic_fetch_add(&wall.unstable, 1);
	}
	if (!pcs) {
		w->unplaced += span; /* it left the call meanwhile: the next visit places it */
		return false;
	}
	enum wall_state kind = (enum wall_state)atomic_load_explicit(&t->wall_kind, memory_order_relaxed);
	int fd = atomic_load_explicit(&t->wall_fd, memory_order_relaxed);
	if (!read_context_in_call(t, w, seq, true, &in_call)) {
		w->unplaced += span;
		return false;
	}
	if (!cache_store(w, pcs, depth, state_of_fd(w, kind, fd), now)) {
		w->unplaced += span;
		return false;
	}
	w->cache = CACHE_PUBLISHED;
	w->cache_seq = seq;
	atomic_fetch_add(&wall.published, 1);
	account_cached(slot, w, now, span, &in_call);
	return true;
}

/* Case 3: off CPU and not in an interposed call: blocked in a system call
 * we did not interpose, or stopped in its own code (nr -1).  False if the
 * thread ran meanwhile (the span then waits for the next visit). */
static bool sample_syscall(int slot, struct wall_private *w, const struct wall_syscall_info *si,
			   uint64_t cpu, uint64_t now, uint64_t span)
{
	enum unwind_end end;
	/* A stack newer than the last module refresh is found in /proc/self/maps. */
	uint32_t depth = unwind_remote_syscall(si->pc, si->sp, wall.scratch, wall.max_frames,
					       symbols_stack_bounds_of, &end);
	const bool ran_out = unwind_ran_out_at_once(depth, end);
	depth = sample_drop_own_leaves(wall.scratch, sample_mark_ends(wall.scratch, depth, end));
	uint64_t cpu_after;
	if (!thread_cpu_ns(w->tid, &cpu_after) || cpu_after != cpu) {
		atomic_fetch_add(&wall.unstable, 1);
		w->unplaced += span;
		return false;
	}
	enum wall_state state = si->nr >= 0 ? wall_state_of_syscall(w->tid, si->nr, si->arg0) : WALL_STATE_RUNNING;
	if (!cache_store(w, wall.scratch, depth, state, now)) {
		w->unplaced += span;
		return false;
	}
	w->cache = CACHE_SYSCALL;
	w->cache_cpu = cpu;
	if (ran_out) {
		if (w->broken_cpu != cpu) {
			w->broken_cpu = cpu;
			w->broken_tries = 0;
		}
		if (w->broken_tries < BROKEN_RETRIES) {
			w->broken_tries++;
			w->cache = CACHE_NONE; /* this span keeps the stack; the next visit unwinds again */
		}
	}
	atomic_fetch_add(&wall.syscall_samples, 1);
	account_cached(slot, w, now, span, NULL);
	return true;
}

/* Arms the one-shot timer of a running request; false if it could not be. */
static bool arm_timer(int slot, struct wall_private *w, uint64_t now)
{
	if (w->timer_id < 0) {
		struct sys_sigevent sev;
		rt_memset(&sev, 0, sizeof(sev));
		sev.value = (uint64_t)slot;
		sev.signo = wall.signo;
		sev.notify = SIGEV_THREAD_ID;
		sev.tid = w->tid;
		int id = -1;
		long r = sys_timer_create(sys_thread_cpu_clock(w->tid), &sev, &id);
		if (r < 0) {
			if (r != -EINVAL && r != -ESRCH)
				rt_log_once(RT_LOG_WARN, "cannot create wall timers (error %ld); running "
							 "threads get no wall stacks", -r);
			w->no_timer = true;
			return false;
		}
		w->timer_id = id;
	}
	struct sys_itimerspec its = { .interval = { 0, 0 }, .value = { 0, 1 } };
	long r = sys_timer_settime(w->timer_id, 0, &its, NULL);
	if (r != 0) {
		if (r != -EINVAL && r != -ESRCH)
			rt_log_once(RT_LOG_WARN, "cannot arm wall timers (error %ld); running threads "
						 "get no wall stacks", -r);
		return false;
	}
	w->request_ns = now;
	return true;
}

/* Withdraws the running request: the timer, then the flag (unless the
 * handler took it first). */
static void cancel_request(struct thread_slot *t, struct wall_private *w)
{
	if (w->armed && w->timer_id >= 0) {
		struct sys_itimerspec off = { { 0, 0 }, { 0, 0 } };
		(void)sys_timer_settime(w->timer_id, 0, &off, NULL);
	}
	int one = 1;
	if (w->flagged && atomic_compare_exchange_strong(&t->wall_inflight, &one, 0) && w->armed)
		atomic_fetch_add(&wall.cancelled, 1);
	w->flagged = false;
	w->armed = false;
}

/* Whether the CPU profile's signals take the thread's running samples: it
 * has a CPU timer.  Each of them then carries the CPU time it stands for,
 * so the visits hand the running samples only the thread's other time
 * (waits for a CPU, and blocked time no wait was found for). */
static bool cpu_weighs(int slot)
{
	return atomic_load_explicit(&wall.cpu_carries, memory_order_relaxed) &&
	       atomic_load_explicit(&wall.cpu_period_ns, memory_order_relaxed) != 0 &&
	       atomic_load_explicit(&thread_slots[slot].timer_id, memory_order_relaxed) >= 0;
}

/* Whether the thread's next CPU signal will take its owed time: the CPU
 * profile's signals take its running samples, and the time has not waited
 * CARRY_PATIENCE CPU periods. */
static bool carried_by_cpu(int slot, struct wall_private *w, uint64_t now)
{
	if (!cpu_weighs(slot))
		return false;
	uint64_t cpu_period = atomic_load_explicit(&wall.cpu_period_ns, memory_order_relaxed);
	uint32_t taken = atomic_load_explicit(&thread_slots[slot].wall_taken, memory_order_relaxed);
	if (w->owed_since == 0 || taken != w->taken_seen) {
		w->owed_since = now;
		w->taken_seen = taken;
	}
	return now - w->owed_since < CARRY_PATIENCE * cpu_period;
}

static bool can_signal(int slot, const struct wall_private *w)
{
	return atomic_load(&wall.signals_on) && !thread_slots[slot].no_signals && !w->no_timer;
}

/* cpu_weighs, for a thread our signals reach: a visit's test, and a
 * tick's for all the threads it visited. */
static bool weighed_by_cpu(int slot, const struct wall_private *w)
{
	return can_signal(slot, w) && cpu_weighs(slot);
}

/* Keeps a running request out while the thread owes running time, so its
 * next tick on a CPU places it.  The handshake covers the interposed calls:
 * the flag goes up first, then wall_seq is read; a call entered after that
 * saw the flag and blocks our signal until it returns.  The timer is armed
 * only once the call under way at the handshake, if any, has ended. */
static void update_request(int slot, struct wall_private *w, uint64_t now)
{
	struct thread_slot *t = &thread_slots[slot];
	if (w->flagged && atomic_load(&t->wall_inflight) == 0) {
		w->flagged = false; /* the handler took it */
		w->armed = false;
	}
	if (w->armed) {
		if (now - w->request_ns >= REQUEST_PATIENCE_NS + 2 * atomic_load(&wall.period_ns))
			cancel_request(t, w);
		return;
	}
	if (atomic_load(&t->wall_owed_ns) == 0) {
		w->owed_since = 0;
		if (w->flagged)
			cancel_request(t, w); /* nothing to carry: calls need not block our signal */
		return;
	}
	if (!w->flagged && carried_by_cpu(slot, w, now))
		return;
	if (!w->flagged) {
		atomic_store(&t->wall_inflight, 1);
		w->flag_seq = atomic_load(&t->wall_seq);
		w->flagged = true;
	}
	if ((w->flag_seq & 1u) && atomic_load(&t->wall_seq) == w->flag_seq)
		return; /* still in the call that did not see the flag */
	if (arm_timer(slot, w, now))
		w->armed = true;
	else
		cancel_request(t, w);
}

/* Whether the thread is on a CPU now: its CPU clock moved since *cpu was
 * read (one that is blocked or waits for a CPU does not move).  *cpu gets
 * the new reading. */
static bool on_cpu_now(int tid, uint64_t *cpu)
{
	uint64_t again;
	if (!thread_cpu_ns(tid, &again) || again == *cpu)
		return false;
	*cpu = again;
	return true;
}

/* Whether the interposed call the thread is in reads or writes a file
 * (state io: a copy to or from the page cache, on a CPU unless it waits
 * for a disk), not a wait. */
static bool copying_call(struct wall_private *w, struct thread_slot *t)
{
	enum wall_state kind = (enum wall_state)atomic_load_explicit(&t->wall_kind, memory_order_relaxed);
	int fd = atomic_load_explicit(&t->wall_fd, memory_order_relaxed);
	return state_of_fd(w, kind, fd) == WALL_STATE_IO;
}

/* Whether the thread entered an interposed call after the previous
 * visit's reading `last` of its wall_seq (each call moves it by two). */
static bool calls_since(uint32_t last, uint32_t seq)
{
	uint32_t next_call = (last | 1u) + ((last & 1u) ? 2u : 0u);
	return (int32_t)(seq - next_call) >= 0;
}

/* Pays the time blocked in waits no visit saw to the wait this visit found
 * (the cached stack, just accounted). */
static void place_unseen(int slot, struct wall_private *w, uint64_t now)
{
	if (w->unseen_ns == 0)
		return;
	account_previous_wait(slot, w, now, w->unseen_ns);
	w->unseen_ns = 0;
}

/* How a visit splits its span (sample_slot). */
struct span_split {
	uint64_t span;
	uint64_t used;    /* CPU time */
	uint64_t delayed; /* waits for a CPU that ended in the span, if read */
	uint64_t off;     /* the rest */
	bool called;      /* it entered an interposed call in the span */
	bool asked;       /* schedstat was read */
	bool known;       /* the span's waits for a CPU were all counted */
	bool stretched;   /* longer than two periods: the ticks were stretched */
};

/* Holds time blocked in waits no visit saw for the next wait a visit finds
 * (place_unseen); after UNSEEN_PATIENCE_NS without one, the last wait found
 * takes it, or without one the running samples. */
static void hold_unseen(int slot, struct wall_private *w, uint64_t now, uint64_t blocked)
{
	if (w->unseen_ns == 0)
		w->unseen_since = now;
	w->unseen_ns += blocked;
	if (now - w->unseen_since < UNSEEN_PATIENCE_NS)
		return;
	if (w->stack)
		account_previous_wait(slot, w, now, w->unseen_ns);
	else
		atomic_fetch_add(&thread_slots[slot].wall_owed_ns, w->unseen_ns);
	w->unseen_ns = 0;
}

/* The off-CPU time of a span at whose end the thread runs or waits for a
 * CPU.  It left the wait the previous visit found it in: that wait gets it
 * (woken, it may still wait for a CPU there: that stack holds until it has
 * run).  Otherwise, found on a CPU (`on_cpu`) with its waits for a CPU all
 * counted, it is time blocked: if the thread entered an interposed call
 * meanwhile, in a wait that began and ended between the two visits, held
 * for the next wait a visit finds (a draw weighted by time blocked, as the
 * running samples are one weighted by CPU time).  Else (blocked without a
 * call we see: a page fault, a system call no wrapper sees; or a wait for
 * a CPU still under way, which the kernel has not counted yet) it goes
 * with the running samples.  A stretched span in which the thread entered
 * calls is a draw too, wherever the visit finds it: its blocked time is
 * mostly in those calls' waits, not in the one the previous visit found
 * nor in a wait for a CPU under way (at most a time slice of the span). */
static void place_running(int slot, struct wall_private *w, uint64_t now, const struct span_split *sp,
			  bool on_cpu, bool signals)
{
	bool many_waits = signals && sp->called && sp->stretched;
	if (w->after_wait && w->stack && !many_waits)
		account_previous_wait(slot, w, now, sp->off);
	else if (many_waits || (signals && on_cpu && sp->known && sp->called))
		hold_unseen(slot, w, now, sp->off);
	else if (signals && sp->off)
		atomic_fetch_add(&thread_slots[slot].wall_owed_ns, sp->off);
	if (sp->used)
		w->after_wait = false;
}

/* The CPU time the thread used since the previous visit (never more than
 * the span), handed to its running samples. */
static uint64_t cpu_span(struct wall_private *w, uint64_t cpu, uint64_t span)
{
	if (!w->cpu_known) {
		w->cpu_known = true;
		w->last_cpu = cpu;
		return 0;
	}
	uint64_t used = cpu > w->last_cpu ? cpu - w->last_cpu : 0;
	used = RT_MIN(used, span);
	w->last_cpu += used;
	return used;
}

/* The time the thread waited for a CPU since the previous reading (the
 * kernel adds a wait when it ends), and over how many waits; 0 when
 * unknown. */
static uint64_t delay_span(struct wall_private *w, uint64_t *waits)
{
	uint64_t delay, slices;
	*waits = 0;
	if (!read_run_delay(w, &delay, &slices)) {
		w->delay_known = false;
		return 0;
	}
	uint64_t d = 0;
	if (w->delay_known && delay > w->last_delay) {
		d = delay - w->last_delay;
		*waits = slices > w->last_slices ? slices - w->last_slices : 1;
	}
	w->last_delay = delay;
	w->last_slices = slices;
	w->delay_known = true;
	return d;
}

/* Reads the span's waits for a CPU: they go with the running samples,
 * except the first after a wake-up from the wait the previous visit found
 * (the span's mean one), which is that wait's. */
static void split_delays(int slot, struct wall_private *w, uint64_t now, struct span_split *sp)
{
	uint64_t waits;
	sp->asked = true;
	sp->known = w->delay_known;
	sp->delayed = RT_MIN(delay_span(w, &waits), sp->off);
	sp->known = sp->known && w->delay_known;
	sp->off -= sp->delayed;
	uint64_t woken = w->after_wait && w->stack && waits ? sp->delayed / waits : 0;
	if (woken) {
		account_previous_wait(slot, w, now, woken);
		sp->delayed -= woken;
	}
	atomic_fetch_add(&thread_slots[slot].wall_owed_ns, sp->delayed);
}

/* The thread left the call the previous visit found it waiting in, and
 * timed its leaving (ask_leave_time): the span up to then is that call's
 * (its cached stack); the visit places the rest by the usual rules, as if
 * it had begun there. */
static void place_timed_leave(int slot, struct wall_private *w, uint64_t now)
{
	struct thread_slot *t = &thread_slots[slot];
	if (!w->visited || w->cache != CACHE_PUBLISHED || w->stamp_seq != w->cache_seq || !w->stack)
		return;
	w->stamp_seq = 0;
	if (atomic_load(&t->wall_seq) == w->cache_seq ||
	    atomic_load_explicit(&t->wall_left_seq, memory_order_relaxed) != w->cache_seq)
		return;
	uint64_t left = atomic_load_explicit(&t->wall_left_ns, memory_order_relaxed);
	if (left <= w->last_visit || left > now)
		return;
	account_previous_wait(slot, w, left, left - w->last_visit);
	w->last_visit = left;
}

/* A visit found the thread waiting in call `seq`, its stack cached: the
 * thread is asked to time the call's end, so the tick may come late.
 * False if it left the call meanwhile (it may not have seen the request);
 * a call that ends within the few instructions between the thread's read
 * of the request and its move of wall_seq goes untimed, and its span is
 * placed by the usual rules. */
static bool ask_leave_time(struct thread_slot *t, struct wall_private *w, uint32_t seq)
{
	if (w->cache != CACHE_PUBLISHED || w->cache_seq != seq)
		return false;
	w->stamp_seq = seq;
	atomic_store(&t->wall_stamp_seq, seq);
	return atomic_load(&t->wall_seq) == seq;
}

/* What a visit found, for the length of the next tick (wall_tick). */
enum visit_end {
	VISIT_BUSY,  /* ticks at the configured rate */
	VISIT_QUIET, /* waiting in a call whose leaving it times */
	/* Ran a fair part of the span, its running samples the CPU
	 * profile's: the visits only hand over its waits for a CPU and draw
	 * where its blocked time goes, which can come later. */
	VISIT_FLAT,
};

/* The thread's clocks began at `ns` (its start, the fork that made it, or
 * our start), its CPU clock then reading `cpu`: its CPU time since and its
 * waits for a CPU are all in its next visit's span, as later visits have
 * theirs. */
static void clocks_began(struct wall_private *w, uint64_t ns, uint64_t cpu)
{
	w->visited = true;
	w->last_visit = ns;
	w->cpu_known = true;
	w->last_cpu = cpu;
	w->delay_known = true;
	w->last_delay = 0;
	w->last_slices = 0;
}

/* A thread that registered itself at its start has its clocks begin there;
 * else a thread that ends before its second visit (one of a pool of short
 * tasks) would leave nothing of its life before its first.  A thread found
 * by a scan starts its count at its first visit.  The birth is claimed
 * here or by the thread's end (wall_thread_ending), never by both. */
static void thread_born(struct thread_slot *t, struct wall_private *w, int tid, uint64_t now)
{
	if (tid == 0 || atomic_load(&t->wall_born_tid) != tid)
		return;
	uint64_t born = atomic_exchange(&t->wall_born_ns, 0);
	if (born != 0 && born <= now)
		clocks_began(w, born, 0);
}

/* One visit.  The span since the previous visit is split by the thread's
 * CPU clock and its schedstat: its CPU time, and the time it waited for a
 * CPU after being preempted, go to the thread's running samples, which
 * land where it used CPU (its own code or inside a call); the rest, time
 * blocked (and the first wait for a CPU after a wake-up), goes to the wait
 * the visit finds it in, or for a thread found on a CPU to the wait it was
 * blocked in meanwhile (place_running). */
static enum visit_end sample_slot(int slot, uint64_t now)
{
	struct thread_slot *t = &thread_slots[slot];
	struct wall_private *w = &priv[slot];
	/* A thread that left its timed call after the tick's instant (woken
	 * with others, it left after the one that woke us): this visit takes
	 * its own instant, so that the span up to that leaving is the call's
	 * (with ticks stretched, the span since its previous visit can be
	 * seconds, which would otherwise go to the call it is in now, or, gone,
	 * to nothing). */
	if (atomic_load_explicit(&t->wall_left_ns, memory_order_relaxed) > now)
		now = rt_monotonic_ns();
	int tid = atomic_load(&t->tid);
	if (w->tid != tid) {
		/* A thread that ended after leaving the call it timed: the span
		 * up to its leaving is still that call's. */
		if (tid == 0)
			place_timed_leave(slot, w, now);
		private_release(w);
		w->tid = tid;
		w->first_seen_ns = now;
		thread_born(t, w, tid, now);
	}
	if (tid == 0)
		return VISIT_QUIET;
	place_timed_leave(slot, w, now);
	struct span_split sp = { .span = visit_span(w, now) };
	sp.stretched = sp.span > 2 * atomic_load(&wall.period_ns);
	uint64_t cpu;
	if (!thread_cpu_ns(tid, &cpu))
		return VISIT_QUIET; /* gone; the registry will notice */
	bool signals = can_signal(slot, w);
	/* Without signals no running sample can place CPU time: the visit does. */
	sp.used = signals ? cpu_span(w, cpu, sp.span) : 0;
	sp.off = sp.span - sp.used;
	uint32_t seq = atomic_load(&t->wall_seq);
	sp.called = calls_since(w->last_seq, seq);
	w->last_seq = seq;
	/* A thread that ran for a fair part of the span may also have waited
	 * for a CPU meanwhile, and may be on one now.  One that barely ran
	 * (a wait that woke, did little and waits again: most waiting threads)
	 * is not asked: its waits for a CPU stay with its waits. */
	bool busy = sp.used > 0 && sp.used >= sp.span / BUSY_SHARE;
	bool weighed = weighed_by_cpu(slot, w);
	if (sp.used && !weighed)
		atomic_fetch_add(&t->wall_owed_ns, sp.used);
	if (busy)
		split_delays(slot, w, now, &sp);
	struct wall_syscall_info si;
	bool waiting = true; /* the visit found it in a wait, placed there */
	bool runnable = false; /* found on a CPU or waiting for one */
	if (seq & 1u) {
		/* In an interposed call: running in it (its CPU time is the
		 * running samples'), preempted in a call that copies files (our
		 * own sampler thread preempts it, too, when they share a CPU),
		 * or waiting in it (woken, it may wait for a CPU there). */
		if (busy && on_cpu_now(tid, &cpu)) {
			place_running(slot, w, now, &sp, true, signals);
			waiting = false;
			runnable = true;
		} else if (busy && copying_call(w, t) && read_syscall(w, &si) && si.nr < -1) {
			place_running(slot, w, now, &sp, false, signals);
			waiting = false;
			runnable = true;
		} else {
			waiting = sample_published(slot, w, seq, now, sp.off);
		}
	} else if (w->cache == CACHE_SYSCALL && w->cache_cpu == cpu) {
		emit_cached(slot, w, now, sp.off, NULL);
		/* Blocked all along, it did not need its descriptor: with none
		 * left, it goes to a thread that moves (which would otherwise
		 * open and close its file at every visit). */
		if (wall.open_fds >= PROC_FDS_MAX)
			give_back_fds(w);
	} else if (busy && on_cpu_now(tid, &cpu)) {
		place_running(slot, w, now, &sp, true, signals);
		waiting = false;
		runnable = true;
	} else if (!read_syscall(w, &si)) {
		w->unplaced += sp.off;
		waiting = false;
	} else if (si.nr >= -1) {
		/* Off CPU: the kernel gave its registers. */
		waiting = sample_syscall(slot, w, &si, cpu, now, sp.off);
	} else {
		/* On a CPU, or waiting for one.  One that barely ran, woken from
		 * a wait no visit saw, is asked too when its count of waits for
		 * a CPU is still exact (it was asked last time). */
		bool on_cpu = false;
		if (!busy && signals && sp.used && sp.called && !w->after_wait && w->delay_known &&
		    on_cpu_now(tid, &cpu)) {
			split_delays(slot, w, now, &sp);
			on_cpu = true;
		}
		place_running(slot, w, now, &sp, on_cpu, signals);
		waiting = false;
		runnable = true;
	}
	if (waiting) {
		w->after_wait = true;
		place_unseen(slot, w, now);
	}
	/* A thread that ran without being asked: its next reading of waits
	 * for a CPU would count this span's too. */
	if (sp.used && !sp.asked)
		w->delay_known = false;
	if (signals)
		update_request(slot, w, now);
	/* Quiet: waiting in an interposed call, having run little since the
	 * previous visit (its leaving wakes the sampler thread, so the ticks
	 * that place its next running are at the configured rate). */
	if (waiting && !busy && (seq & 1u) && ask_leave_time(t, w, seq))
		return VISIT_QUIET;
	/* Flat: it ran for a fair part of the span, its CPU time weighed by
	 * the CPU signals, which take its running samples at their own rate
	 * whatever the visits' rate; its waits for a CPU add up in the kernel
	 * until a visit reads them, and its blocked time is placed by a draw
	 * (the wait found, or held for the next one found: place_running), so
	 * the visits need not come at the configured rate.  Found nowhere (it
	 * left a call meanwhile), its span waits for a visit at that rate. */
	if (busy && weighed && (runnable || waiting))
		return VISIT_FLAT;
	return VISIT_BUSY;
}

/* At a stop, a last visit without signals: a thread still in the wait the
 * previous visit found (its call, or a system call with its CPU clock
 * unmoved), or that left a wait it timed, gets the span up to now (up to
 * its leaving); else, the ticks of a waiting process coming a second
 * apart, an exit would drop up to a second of the wait that ended it.  A
 * running thread's span since its last tick (one period) is not placed. */
static void final_visit(int slot, uint64_t now)
{
	struct thread_slot *t = &thread_slots[slot];
	struct wall_private *w = &priv[slot];
	int tid = atomic_load(&t->tid);
	if (tid == 0 && w->tid != 0)
		place_timed_leave(slot, w, now); /* ended after leaving the call it timed */
	if (tid == 0 || w->tid != tid || !w->visited || !w->stack)
		return;
	place_timed_leave(slot, w, now);
	uint32_t seq = atomic_load(&t->wall_seq);
	uint64_t cpu = 0;
	bool still = w->cache == CACHE_PUBLISHED ? (seq & 1u) && seq == w->cache_seq
						 : w->cache == CACHE_SYSCALL && thread_cpu_ns(tid, &cpu) &&
							   cpu == w->cache_cpu;
	if (still)
		account_previous_wait(slot, w, now, visit_span(w, now));
}

/* ---- the handler ---- */

/* Whether the interrupted thread, its stack pointer at sp, is inside the
 * interposed call it published (in the wrapper or below it; a call left by
 * longjmp keeps wall_seq odd, but the thread then runs above its frame).
 * The thread itself wrote the frame, so it is whole. [signal-safe] */
static bool in_published_call(struct thread_slot *t, uint64_t sp)
{
	return (atomic_load(&t->wall_seq) & 1u) && sp <= atomic_load_explicit(&t->wall_sp, memory_order_relaxed);
}

/* The published call's stack unwound by the thread itself, leaf first
 * (the C library's function called), with room for max_frames + 1.
 * [signal-safe] */
static uint32_t unwind_published_here(struct thread_slot *t, uint64_t *pcs)
{
	struct unwind_regs regs;
	rt_memset(&regs, 0, sizeof(regs));
	regs.pc = atomic_load_explicit(&t->wall_pc, memory_order_relaxed);
	regs.sp = atomic_load_explicit(&t->wall_sp, memory_order_relaxed);
	regs.fp = atomic_load_explicit(&t->wall_fp, memory_order_relaxed);
	enum unwind_end end = UNWIND_END_OUTERMOST;
	uint32_t depth = unwind_stack(&regs, pcs, wall.max_frames, 0, &end);
	depth = sample_mark_ends(pcs, depth, end);
	leaf_at_callee(pcs, depth, regs.pc, atomic_load_explicit(&t->wall_callee, memory_order_relaxed));
	return depth;
}

/* The thread's owed running time as one sample at the interrupted
 * context ucv: on `stack` (depth, span context ctx) when the caller has
 * unwound it, else unwound here. [signal-safe] */
static void take_running(int slot, struct thread_slot *t, int tid, const void *ucv, uint64_t cpu_ns,
			 bool by_cpu, const uint64_t *stack, uint32_t stack_depth,
			 const struct context_value *ctx)
{
	if (!wall.ring.mem)
		return;
	/* The sample carries the running time the visits measured since the
	 * thread's previous running sample: the signals come only while the
	 * thread is on a CPU, so where it lands is a CPU-weighted draw over its
	 * running, in its own code or inside a call. */
	uint64_t weight = atomic_exchange(&t->wall_owed_ns, 0) + cpu_ns;
	if (weight == 0)
		return;
	atomic_fetch_add_explicit(&t->wall_taken, 1, memory_order_relaxed);
	if (by_cpu)
		atomic_fetch_add_explicit(&wall.carried, 1, memory_order_relaxed);
	struct wall_record *rec = ring_reserve(&wall.ring);
	if (!rec) {
		/* The time is not lost: the thread's next sample carries it. */
		atomic_fetch_add(&t->wall_owed_ns, weight);
		atomic_fetch_add(&wall.dropped, 1);
		return;
	}
	struct unwind_regs at;
	unwind_regs_from_ucontext(ucv, &at);
	bool own_context = true;
	uint32_t depth;
	if (in_published_call(t, at.sp)) {
		/* Inside an interposed call, in its wrapper or in the C library's
		 * part of it (musl's has no unwind tables): the call's CPU time,
		 * on the stack its visits see, from the frame it published. */
		depth = unwind_published_here(t, rec->pcs);
		rec->in_call = true;
		rec->depth = depth;
		rec->state = (int8_t)atomic_load_explicit(&t->wall_kind, memory_order_relaxed);
		rec->fd = atomic_load_explicit(&t->wall_fd, memory_order_relaxed);
	} else if (atomic_load_explicit(&t->wall_leave_state, memory_order_relaxed) != 0) {
		/* Delivered as the call's end unblocks our signal (our code has
		 * unwind tables): the stack starts at the wrapper's published pc. */
		depth = sample_unwind_interrupted(ucv, 0, 0, rec->pcs, wall.max_frames);
		rec->in_call = true;
		depth = sample_drop_through_own(rec->pcs, depth);
		for (uint32_t i = depth; i > 0; i--)
			rec->pcs[i] = rec->pcs[i - 1];
		uint64_t callee = atomic_load_explicit(&t->wall_callee, memory_order_relaxed);
		rec->pcs[0] = callee ? callee : atomic_load_explicit(&t->wall_pc, memory_order_relaxed);
		rec->depth = depth + 1;
		rec->state = (int8_t)atomic_load_explicit(&t->wall_kind, memory_order_relaxed);
		rec->fd = atomic_load_explicit(&t->wall_fd, memory_order_relaxed);
	} else {
		/* Raised during a system call, a CPU-clock signal is delivered
		 * as the call returns, right after its instruction. */
		if (stack) {
			depth = RT_MIN(stack_depth, wall.max_frames + 1);
			rt_memcpy(rec->pcs, stack, depth * sizeof(uint64_t));
			own_context = false;
		} else {
			depth = sample_unwind_interrupted(ucv, t->stack_lo, t->stack_hi, rec->pcs, wall.max_frames);
			depth = sample_drop_own_leaves(rec->pcs, depth);
		}
		rec->in_call = false;
		rec->state = (int8_t)(unwind_after_syscall(at.pc) ? WALL_STATE_SYSCALL : WALL_STATE_RUNNING);
		rec->depth = depth;
		rec->fd = -1;
	}
	if (own_context) {
		rec->has_context = context_read_self(&rec->context);
	} else {
		rec->has_context = ctx != NULL;
		if (ctx)
			rec->context = *ctx;
	}
	rec->tid = tid;
	rec->slot = slot;
	rec->weight_ns = weight;
	ring_publish(&wall.ring, rec);
}

static void wall_signal_handler(int sig, void *siv, void *ucv)
{
	RT_UNUSED(sig);
	const struct sys_timer_siginfo *si = siv;
	if (si->code != SYS_SI_TIMER || si->value >= THREADS_MAX)
		return;
	struct thread_slot *t = &thread_slots[si->value];
	int tid = (int)sys_gettid();
	if (atomic_load_explicit(&t->tid, memory_order_relaxed) != tid)
		return; /* a late signal for a slot that was reused */
	int one = 1;
	if (!atomic_compare_exchange_strong(&t->wall_inflight, &one, 0))
		return; /* the request was withdrawn */
	take_running((int)si->value, t, tid, ucv, 0, false, NULL, 0, NULL);
}

void wall_cpu_period(uint64_t ns) { atomic_store(&wall.cpu_period_ns, ns); }

void wall_running_sample(int slot, const void *ucv, uint64_t cpu_ns, const uint64_t *pcs, uint32_t depth,
			 const struct context_value *ctx)
{
	if (!atomic_load_explicit(&wall.cpu_carries, memory_order_relaxed))
		return;
	struct thread_slot *t = &thread_slots[slot];
	take_running(slot, t, atomic_load_explicit(&t->tid, memory_order_relaxed), ucv, cpu_ns, true, pcs,
		     depth, ctx);
}

/* `weight` of the ending thread's time as one sample at "[unsampled]" under
 * entry_pc. */
static void take_unsampled(int slot, struct thread_slot *t, int tid, uint64_t weight, enum wall_state state,
			   uint64_t entry_pc, uintptr_t ra)
{
	if (weight == 0)
		return;
	struct wall_record *rec = ring_reserve(&wall.ring);
	if (!rec) {
		atomic_fetch_add(&wall.dropped, 1);
		return;
	}
	rec->depth = sample_unsampled_stack(entry_pc, ra, t->stack_lo, t->stack_hi, rec->pcs, wall.max_frames);
	rec->in_call = false;
	rec->state = (int8_t)state;
	rec->fd = -1;
	rec->has_context = context_read_self(&rec->context);
	rec->tid = tid;
	rec->slot = slot;
	rec->weight_ns = weight;
	ring_publish(&wall.ring, rec);
}

/* The life of a thread that ends before any visit claimed its birth: the
 * time since, but for the CPU time its running samples carry (all of it
 * when they carry none). */
static uint64_t unvisited_life(struct thread_slot *t, int tid, bool carries)
{
	if (atomic_load(&t->wall_born_tid) != tid)
		return 0;
	uint64_t born = atomic_exchange(&t->wall_born_ns, 0);
	uint64_t now = rt_monotonic_ns();
	if (born == 0 || born > now)
		return 0;
	uint64_t cpu = carries ? rt_thread_cpu_ns() : 0;
	return now - born > cpu ? now - born - cpu : 0;
}

void wall_thread_ending(int slot, uint64_t cpu_ns, uint64_t entry_pc, uintptr_t ra)
{
	if (!atomic_load_explicit(&wall.running, memory_order_relaxed) || !wall.ring.mem || slot < 0 ||
	    slot >= THREADS_MAX)
		return;
	struct thread_slot *t = &thread_slots[slot];
	int tid = (int)sys_gettid();
	bool carries = atomic_load_explicit(&wall.cpu_carries, memory_order_relaxed);
	/* Its time off a CPU, with the state of the last call it timed (most
	 * blocking is in those), or a system call's when it timed none. */
	enum wall_state off_state = atomic_load(&t->wall_seq) != 0
					    ? (enum wall_state)atomic_load_explicit(&t->wall_kind, memory_order_relaxed)
					    : WALL_STATE_SYSCALL;
	take_unsampled(slot, t, tid, unvisited_life(t, tid, carries), off_state, entry_pc, ra);
	if (carries)
		take_unsampled(slot, t, tid, atomic_exchange(&t->wall_owed_ns, 0) + cpu_ns, WALL_STATE_RUNNING,
			       entry_pc, ra);
}

/* Moves the handler's records into the recorder.  In a tick only (thread
 * names are the ticks' private state), or with no thread serving them. */
static void drain_ring(void)
{
	if (!ring_has_ready(&wall.ring))
		return;
	uint64_t now = rt_monotonic_ns();
	uint32_t cursor = 0;
	for (struct wall_record *r; (r = ring_next_ready(&wall.ring, &cursor)) != NULL;) {
		const char *name = "";
		struct wall_private *w = &priv[r->slot];
		enum wall_state state = (enum wall_state)r->state;
		if (w->tid == r->tid) {
			name = private_name(w, now);
			if (r->in_call)
				state = state_of_fd(w, state, r->fd);
		}
		record_sample(r->has_context ? &r->context : NULL, r->tid, name, r->pcs, r->depth, state, 1,
			      r->weight_ns);
		atomic_fetch_add(&wall.running_samples, 1);
		ring_release(&wall.ring, r);
	}
}

void wall_drain(void)
{
	/* While the sampler thread serves the ticks it drains at every one. */
	if (wall.ring.mem && !atomic_load(&wall.alive))
		drain_ring();
}

/* ---- the sampler thread ---- */

static void check_handler(uint64_t now)
{
	if (now - wall.handler_checked_ns < HANDLER_CHECK_NS || !atomic_load(&wall.signals_on))
		return;
	wall.handler_checked_ns = now;
	struct sys_sigaction cur = { 0 };
	if (sys_rt_sigaction(wall.signo, NULL, &cur) == 0 && cur.handler != (void *)wall_signal_handler) {
		rt_warn("the program replaced the handler of signal %d; wall profiling now samples "
			"blocked threads only", wall.signo);
		atomic_store(&wall.signals_on, 0);
		atomic_store(&wall.cpu_carries, 0);
	}
}

/* Next slot at or after `from` whose bit is set, or -1. */
static int next_marked_slot(int from)
{
	if (from < 0)
		from = 0;
	if (from >= THREADS_MAX)
		return -1;
	uint64_t words = atomic_load_explicit(&slot_words, memory_order_relaxed) & (~0ull << (from / 64));
	while (words) {
		int w = __builtin_ctzll(words);
		uint64_t bits = atomic_load_explicit(&slot_bits[w], memory_order_relaxed);
		if (w == from / 64)
			bits &= ~0ull << (from % 64);
		if (bits)
			return w * 64 + __builtin_ctzll(bits);
		words &= words - 1;
	}
	return -1;
}

/* Whether every thread in the marked slots of [from, to) was found quiet
 * (and is still in that call) or flat at its latest visit (a thread not
 * visited yet is not); those flat are added to *flat. */
static bool range_quiet(int from, int to, uint32_t *flat)
{
	for (int next = next_marked_slot(from); next >= 0 && next < to; next = next_marked_slot(next + 1)) {
		int tid = atomic_load_explicit(&thread_slots[next].tid, memory_order_relaxed);
		if (tid == 0)
			continue;
		if (priv[next].tid != tid || priv[next].last_end == VISIT_BUSY)
			return false;
		/* Quiet only while still in the call that visit found: one it left
		 * since (its leaving woke us) is to be visited at the tick rate. */
		if (priv[next].last_end == VISIT_QUIET &&
		    atomic_load_explicit(&thread_slots[next].wall_seq, memory_order_relaxed) != priv[next].last_seq)
			return false;
		*flat += priv[next].last_end == VISIT_FLAT;
		if (next + 1 >= THREADS_MAX)
			break;
	}
	return true;
}

/* The same for the threads a tick that started at slot `began` and
 * stopped before slot `stopped` left for the next ticks. */
static bool others_quiet(int stopped, int began, uint32_t *flat)
{
	if (stopped < began)
		return range_quiet(stopped, began, flat);
	return range_quiet(stopped, THREADS_MAX, flat) && range_quiet(0, began, flat);
}

/* One tick: true if each thread it visited waits in the call it was asked
 * to time the end of, or runs flat, and so did every thread it left for
 * the next ticks at its latest visit (the next tick may come late); *flat
 * gets how many run flat, *weighed whether every thread visited has its
 * running samples taken by CPU signals. */
static bool wall_tick(uint32_t *flat, bool *weighed)
{
	uint32_t budget = wall.cfg->wall_max_threads;
	bool quiet = true;
	*flat = 0;
	*weighed = true;
	/* One instant for the whole tick: every sample of it ends there (the
	 * visits take microseconds; a clock read per visit cost more than the
	 * cheap visits themselves). */
	uint64_t now = rt_monotonic_ns();
	int s = wall.cursor;
	bool wrapped = false;
	while (budget > 0) {
		int next = next_marked_slot(s);
		if (next < 0) {
			if (wrapped || wall.cursor == 0)
				break;
			wrapped = true;
			s = 0;
			continue;
		}
		if (wrapped && next >= wall.cursor)
			break; /* every marked slot was visited once */
		int tid = atomic_load_explicit(&thread_slots[next].tid, memory_order_relaxed);
		enum visit_end end = sample_slot(next, now);
		priv[next].last_end = (uint8_t)end;
		if (tid != 0 && !weighed_by_cpu(next, &priv[next]))
			*weighed = false;
		if (end == VISIT_BUSY)
			quiet = false;
		else if (end == VISIT_FLAT)
			(*flat)++;
		if (tid != 0)
			budget--;
		else if (priv[next].tid == 0)
			atomic_fetch_and(&slot_bits[next / 64], ~(1ull << (next % 64)));
		s = next + 1;
		if (s >= THREADS_MAX) {
			if (wrapped)
				break;
			wrapped = true;
			s = 0;
		}
	}
	/* More threads than a tick visits: quiet still if every thread left
	 * for the next ticks was found quiet (or flat) at its latest visit,
	 * its call's leaving timed (that leaving wakes the sampler thread). */
	if (budget == 0 && quiet)
		quiet = others_quiet(s % THREADS_MAX, wall.cursor, flat);
	wall.cursor = s % THREADS_MAX;
	atomic_fetch_add(&wall.ticks, 1);
	return quiet;
}

/* The longest quiet tick while `flat` threads run flat out: FLAT_TICK_MAX_NS,
 * or less when their CPU signals' records would fill half the ring before
 * the tick drains it. */
static uint64_t flat_tick_max(uint32_t flat)
{
	uint64_t cpu_period = atomic_load_explicit(&wall.cpu_period_ns, memory_order_relaxed);
	return RT_MIN(FLAT_TICK_MAX_NS, (RING_RECORDS / 2) * cpu_period / RT_MAX(flat, 1u));
}

uint64_t wall_next_tick_ns(void)
{
	if (!atomic_load(&wall.running))
		return UINT64_MAX;
	/* A thread left a timed call during a quiet tick: the tick it cut
	 * short ends one period after the last, or later (cut_ns). */
	uint64_t period = atomic_load(&wall.period_ns);
	if (wall.tick_ns > period && !atomic_load(&wall.stretched)) {
		uint64_t cut = atomic_load(&wall.cut_to_period) ? period : wall.cut_ns;
		return wall.last_due + RT_MIN(RT_MAX(cut, period), wall.tick_ns);
	}
	return wall.next_tick_ns;
}

uint64_t wall_serve(uint64_t cpu_before)
{
	/* Seen by a stop after it lowered wall.running, or it sees us. */
	atomic_store(&wall.ticking, 1);
	if (!atomic_load(&wall.running)) {
		if (atomic_exchange(&wall.ticking, 0) == 2)
			thread_flag_clear(&wall.ticking);
		return cpu_before;
	}
	if (wall.served_tid == 0) {
		wall.served_tid = (int)sys_gettid();
		wall.private_files = thread_has_private_files(wall.served_tid);
	}
	uint64_t due = wall_next_tick_ns();
	/* Before the visits ask threads to time their leaving: one that leaves
	 * from now on finds the flag up and ends the quiet tick. */
	atomic_store(&wall.stretched, 1);
	atomic_store(&wall.cut_to_period, 0);
	uint32_t flat;
	bool weighed;
	bool quiet = wall_tick(&flat, &weighed);
	drain_ring();
	uint64_t now = rt_monotonic_ns();
	check_handler(now);
	uint64_t period = atomic_load(&wall.period_ns);
	if (!quiet)
		atomic_store(&wall.stretched, 0);
	wall.last_due = due;
	wall.cut_ns = weighed ? flat_tick_max(flat) : period;
	uint64_t len = period;
	if (quiet && flat) {
		/* Not a quiet spell: the waits that follow start one afresh. */
		wall.quiet_ns = QUIET_TICK_NS / 2;
		len = flat_tick_max(flat);
	} else if (quiet) {
		wall.quiet_ns = RT_MIN(RT_MAX(2 * wall.quiet_ns, QUIET_TICK_NS), QUIET_TICK_MAX_NS);
		len = wall.quiet_ns;
	} else {
		wall.quiet_ns /= 2;
	}
	wall.tick_ns = RT_MAX(len, period);
	wall.next_tick_ns = due + wall.tick_ns;
	if (wall.next_tick_ns < now) /* we overran: skip the missed ticks */
		wall.next_tick_ns = now + wall.tick_ns;
	uint64_t cpu = rt_thread_cpu_ns();
	if (cpu > cpu_before)
		atomic_fetch_add_explicit(&wall.cpu_ns, cpu - cpu_before, memory_order_relaxed);
	if (atomic_exchange(&wall.ticking, 0) == 2)
		thread_flag_clear(&wall.ticking);
	return cpu;
}

/* Ticks at the configured rate from now: after a start, or for a new
 * sampler thread. */
static void restart_ticks(void)
{
	wall.tick_ns = atomic_load(&wall.period_ns);
	wall.cut_ns = wall.tick_ns;
	wall.quiet_ns = 0;
	wall.next_tick_ns = rt_monotonic_ns() + wall.tick_ns;
}

void wall_served(bool serving)
{
	if (!serving) {
		atomic_store(&wall.alive, 0);
		return;
	}
	restart_ticks();
	atomic_store(&wall.stretched, 0);
	wall.served_tid = 0; /* a new thread: its descriptor table is found at its first tick */
	atomic_store(&wall.alive, 1);
}

uint64_t wall_cpu_ns(void) { return atomic_load_explicit(&wall.cpu_ns, memory_order_relaxed); }

/* ---- hooks side ---- */

static uint32_t tp_bucket(uint64_t tp) { return (uint32_t)((tp >> 4) * RT_HASH_MUL64 >> 51) % TP_BUCKETS; }

static void tp_bind(int slot, uint64_t tp)
{
	atomic_store(&thread_slots[slot].wall_tp, tp);
	uint32_t b = tp_bucket(tp);
	if (!(atomic_load_explicit(&tp_map_used[b / 64u], memory_order_relaxed) & (1ull << (b % 64u))))
		atomic_fetch_or(&tp_map_used[b / 64u], 1ull << (b % 64u));
	atomic_store(&tp_map[b], slot + 1);
}

/* The calling thread's slot when the map does not know it yet: found by
 * tid and bound to the thread pointer (once per thread). */
static int self_slot_unmapped(uint64_t tp)
{
	int s = threads_find((int)sys_gettid());
	if (s >= 0)
		tp_bind(s, tp);
	return s;
}

/* The calling thread's slot from the thread-pointer map, or -1 when the map
 * does not know the thread (yet).  A slot's wall_tp is cleared when its
 * thread is removed or the slot is taken again, and a fork child clears the
 * map: a slot holding tp belongs to the thread, with no look at its tid
 * (another cache line). */
static inline int self_slot_mapped(uint64_t tp)
{
	int s = atomic_load_explicit(&tp_map[tp_bucket(tp)], memory_order_acquire) - 1;
	if (s >= 0 && atomic_load_explicit(&thread_slots[s].wall_tp, memory_order_acquire) == tp)
		return s;
	return -1;
}

_Alignas(64) struct wall_hook_line wall_hook_line;
_Static_assert(sizeof(struct wall_hook_line) <= 64, "wall_hook_line is one cache line");

int wall_signal(void) { return atomic_load(&wall_hook_line.on) ? wall.signo : 0; }

static void block_our_signal(struct wall_call *c)
{
	uint64_t set = 1ull << (wall.signo - 1);
	c->masked = sys_rt_sigprocmask(SIG_BLOCK, &set, &c->old_mask) == 0;
}

/* The rarer ways into and out of a call are functions of their own, so that
 * the common path (an outermost call published without the handshake) saves
 * no registers and makes only tail calls. */
__attribute__((noinline)) static void enter_nested(struct wall_call *c, struct thread_slot *t)
{
	/* Called from a signal handler inside another blocking call: that
	 * call's frame stays published. */
	t->wall_depth++;
	if (wall_hook_line.calls_block)
		block_our_signal(c);
}

__attribute__((noinline)) static void enter_handshake(struct wall_call *c, struct thread_slot *t, uint32_t odd)
{
	atomic_store(&t->wall_seq, odd);
	if (atomic_load(&t->wall_inflight))
		block_our_signal(c);
}

static inline __attribute__((always_inline)) void enter_slot(struct wall_call *c, int s, const struct wall_frame *f,
							     enum wall_state kind, int fd)
{
	struct thread_slot *t = &thread_slots[s];
	c->slot = s;
	if (t->wall_depth > 0 && f->sp < atomic_load_explicit(&t->wall_sp, memory_order_relaxed)) {
		enter_nested(c, t);
		return;
	}
	/* Outermost (a deeper published frame belongs to a call that was left
	 * by longjmp, which is forgotten here). */
	t->wall_depth = 1;
	atomic_store_explicit(&t->wall_pc, f->pc, memory_order_relaxed);
	atomic_store_explicit(&t->wall_sp, f->sp, memory_order_relaxed);
	atomic_store_explicit(&t->wall_fp, f->fp, memory_order_relaxed);
	atomic_store_explicit(&t->wall_ra, f->ra, memory_order_relaxed);
	atomic_store_explicit(&t->wall_callee, f->callee, memory_order_relaxed);
	atomic_store_explicit(&t->wall_kind, (unsigned short)kind, memory_order_relaxed);
	atomic_store_explicit(&t->wall_fd, fd, memory_order_relaxed);
	uint32_t seq = atomic_load_explicit(&t->wall_seq, memory_order_relaxed);
	uint32_t odd = (seq | 1u) + ((seq & 1u) ? 2u : 0u);
	if (wall_hook_line.calls_block) {
		enter_handshake(c, t, odd);
		return;
	}
	/* No handshake: the sampler only needs the frame before the seq. */
	atomic_store_explicit(&t->wall_seq, odd, memory_order_release);
}

__attribute__((noinline)) static void enter_unmapped(struct wall_call *c, uint64_t tp, const struct wall_frame *f,
						     enum wall_state kind, int fd)
{
	int s = self_slot_unmapped(tp);
	c->slot = s;
	if (s >= 0)
		enter_slot(c, s, f, kind, fd);
}

void wall_call_enter(struct wall_call *c, enum wall_state kind, int fd)
{
	const struct wall_frame *f = &c->frame;
	c->masked = false;
	uint64_t tp = rt_thread_pointer();
	int s = self_slot_mapped(tp);
	if (s < 0) {
		enter_unmapped(c, tp, f, kind, fd);
		return;
	}
	enter_slot(c, s, f, kind, fd);
}

/* The first thread to leave a timed call, or to start, during a quiet tick
 * wakes the sampler thread: the tick ends now. [signal-safe] */
static void end_quiet_tick(void)
{
	if (atomic_load_explicit(&wall.stretched, memory_order_relaxed) &&
	    atomic_exchange(&wall.stretched, 0))
		thread_own_interrupt();
}

/* Unblocking our signal after a call that blocked it. */
__attribute__((noinline)) static void leave_unmask(struct thread_slot *t)
{
	uint64_t set = 1ull << (wall.signo - 1);
	atomic_store_explicit(&t->wall_leave_state, 1, memory_order_relaxed);
	(void)sys_rt_sigprocmask(SIG_UNBLOCK, &set, NULL);
	atomic_store_explicit(&t->wall_leave_state, 0, memory_order_relaxed);
}

static inline __attribute__((always_inline)) void leave_mask(struct wall_call *c, struct thread_slot *t)
{
	if (c->masked && !(c->old_mask & (1ull << (wall.signo - 1))))
		leave_unmask(t);
}

/* Leaving a call whose end the sampler asked to have timed. */
__attribute__((noinline)) static void leave_timed(struct wall_call *c, struct thread_slot *t, uint32_t seq)
{
	atomic_store_explicit(&t->wall_left_ns, rt_monotonic_ns(), memory_order_relaxed);
	atomic_store_explicit(&t->wall_left_seq, seq, memory_order_relaxed);
	atomic_store_explicit(&t->wall_seq, seq + 1, memory_order_release);
	end_quiet_tick();
	leave_mask(c, t);
}

void wall_call_leave(struct wall_call *c)
{
	if (c->slot < 0)
		return;
	struct thread_slot *t = &thread_slots[c->slot];
	if (t->wall_depth > 0 && --t->wall_depth == 0) {
		uint32_t seq = atomic_load_explicit(&t->wall_seq, memory_order_relaxed);
		if (seq & 1u) {
			if (atomic_load_explicit(&t->wall_stamp_seq, memory_order_relaxed) == seq) {
				leave_timed(c, t, seq);
				return;
			}
			atomic_store_explicit(&t->wall_seq, seq + 1, memory_order_release);
		}
	}
	leave_mask(c, t);
}

/* ---- registry hooks ---- */

void wall_thread_added(int slot, int tid, bool self)
{
	struct thread_slot *t = &thread_slots[slot];
	t->wall_depth = 0;
	atomic_store(&t->wall_seq, 0);
	atomic_store(&t->wall_stamp_seq, 0);
	atomic_store(&t->wall_left_seq, 0);
	atomic_store(&t->wall_inflight, 0);
	atomic_store(&t->wall_tp, 0);
	atomic_store(&t->wall_owed_ns, 0);
	atomic_store(&t->wall_leave_state, 0);
	priv_prepare(slot);
	mark_slot(slot);
	if (self) {
		tp_bind(slot, rt_thread_pointer());
		atomic_store(&t->wall_born_ns, rt_monotonic_ns());
		atomic_store(&t->wall_born_tid, tid);
	}
	atomic_store(&wall.cut_to_period, 1);
	end_quiet_tick(); /* its first visit comes at the configured rate */
}

void wall_thread_removed(int slot, int tid)
{
	RT_UNUSED(tid);
	atomic_store(&thread_slots[slot].wall_tp, 0);
}

/* ---- start and stop ---- */

static int choose_signal(void) { return rt_signal_find_free(63, 40); }

static int descriptor_floor(void)
{
	uint64_t lim[2] = { 0, 0 };
	if (SYS4(__NR_prlimit64, 0, 7 /* RLIMIT_NOFILE */, 0, lim) != 0 || lim[0] < 128)
		return 3;
	return (int)RT_MIN(lim[0] / 2, 4096);
}

/* Whether an interposed call must block our signal while a request runs.
 * Where CPU-clock timers expire in task work, the signal is raised on the
 * return to user mode after the system call: it never interrupts a call
 * (no EINTR), and lands inside the call's wrapper (wall_seq odd), where the
 * handler takes the call's published frame, as it does for a signal left
 * pending until the call unblocked it.  Skipping the block saves two
 * rt_sigprocmask system calls per interposed call while a request runs. */
static bool calls_need_blocking(void)
{
#if ARCH_CPU_TIMERS_TASK_WORK_SINCE == 0
	return true;
#else
	struct new_utsname uts = { 0 };
	if (sys_uname(&uts) != 0)
		return true;
	const char *r = uts.release, *dot = r;
	while (*dot >= '0' && *dot <= '9')
		dot++;
	const char *end = *dot == '.' ? dot + 1 : dot;
	while (*end >= '0' && *end <= '9')
		end++;
	uint64_t major, minor;
	if (*dot != '.' || !rt_parse_u64(r, (size_t)(dot - r), &major) ||
	    !rt_parse_u64(dot + 1, (size_t)(end - dot - 1), &minor))
		return true;
	return major * 256 + minor < ARCH_CPU_TIMERS_TASK_WORK_SINCE;
#endif
}

int wall_start(const struct sw_config *cfg, struct recorder *rec)
{
	if (atomic_load(&wall.running))
		return 0;
	wall.cfg = cfg;
	wall.rec = rec;
	wall.max_frames = cfg->max_frames;
	wall.configured_hz = cfg->wall_hz ? cfg->wall_hz : 100;
	atomic_store(&wall.period_ns, RT_NS_PER_SEC / wall.configured_hz);
	wall.fd_floor = descriptor_floor();
	if (ring_init(&wall.ring, RING_RECORDS,
		      sizeof(struct wall_record) + (cfg->max_frames + 2) * sizeof(uint64_t)) < 0)
		return -ENOMEM;
	if (!wall.scratch)
		wall.scratch = rt_malloc((cfg->max_frames + 2) * sizeof(uint64_t));
	if (!wall.scratch)
		return -ENOMEM;
	wall_hook_line.calls_block = calls_need_blocking();
	wall.signo = choose_signal();
	if (wall.signo > 0) {
		if (rt_signal_install(wall.signo, wall_signal_handler, &wall.previous) == 0)
			atomic_store(&wall.signals_on, 1);
	}
	if (!atomic_load(&wall.signals_on))
		rt_warn("no free real-time signal: wall profiling samples blocked threads only");
	atomic_store(&wall.cpu_carries, atomic_load(&wall.signals_on) && !wall_hook_line.calls_block);
	for (int s = threads_next_used(0); s >= 0; s = threads_next_used(s + 1))
		if (atomic_load(&thread_slots[s].tid)) {
			atomic_store(&thread_slots[s].wall_owed_ns, 0);
			priv_prepare(s);
			mark_slot(s);
		}
	restart_ticks();
	atomic_store(&wall_hook_line.on, 1);
	atomic_store(&wall.running, 1);
	rt_info("wall profiling at %u Hz, %u threads per tick, signal %d", cfg->wall_hz,
		cfg->wall_max_threads, wall.signo);
	return 0;
}

void wall_stop(void)
{
	if (!atomic_exchange(&wall.running, 0))
		return;
	atomic_store(&wall_hook_line.on, 0);
	atomic_store(&wall.cpu_carries, 0);
	/* A tick under way ends first (the sampler thread serves no other). */
	int one = 1;
	if (atomic_compare_exchange_strong(&wall.ticking, &one, 2) || one == 2) {
		if (!thread_flag_wait_clear(&wall.ticking, STOP_WAIT_MS * 1000000ull))
			return; /* still sampling: leave its descriptors and timers alone */
	}
	uint64_t now = rt_monotonic_ns();
	for (int s = next_prepared(0); s >= 0; s = next_prepared(s + 1))
		final_visit(s, now);
	for (int s = next_prepared(0); s >= 0; s = next_prepared(s + 1)) {
		struct thread_slot *t = &thread_slots[s];
		if (priv[s].timer_id >= 0)
			cancel_request(t, &priv[s]);
		forget_private_fds(&priv[s]);
		private_release(&priv[s]);
	}
	/* The handler stays installed but finds no request: a signal already
	 * queued must not meet the default action, which would end the process. */
	if (wall.ring.mem)
		drain_ring();
	struct wall_stats st;
	wall_get_stats(&st);
	rt_debug("wall sampler: %llu ticks; samples: %llu published, %llu cached, %llu syscall, "
		 "%llu running (%llu taken by CPU signals); %llu requests cancelled, %llu unstable, "
		 "%llu dropped",
		 (unsigned long long)st.ticks, (unsigned long long)st.samples_blocked_published,
		 (unsigned long long)st.samples_blocked_cached, (unsigned long long)st.samples_blocked_syscall,
		 (unsigned long long)st.samples_running, (unsigned long long)st.samples_carried,
		 (unsigned long long)st.requests_cancelled,
		 (unsigned long long)st.unstable, (unsigned long long)st.dropped);
}

bool wall_running(void) { return atomic_load(&wall.running) != 0; }

void wall_after_fork_child(void)
{
	if (!wall.ring.mem)
		return; /* never started: priv[] holds no descriptor */
	/* Descriptors name the parent's threads (and, in the sampler's private
	 * table, are not in the child's at all); timers are not inherited (an
	 * id may already name a timer of the child's, so none is deleted). */
	for (int s = next_prepared(0); s >= 0; s = next_prepared(s + 1)) {
		struct wall_private *w = &priv[s];
		if (w->proc_fd >= 0 && !wall.private_files)
			(void)sys_close(w->proc_fd);
		if (w->sched_fd >= 0 && !wall.private_files)
			(void)sys_close(w->sched_fd);
		w->proc_fd = -1;
		w->sched_fd = -1;
		w->timer_id = -1;
		w->pend_count = 0; /* the parent's samples */
		w->unseen_ns = 0;
		private_release(w);
	}
	/* The registry was reset before us; wall_thread_added clears a slot's
	 * wall fields when a thread claims it. */
	wall.open_fds = 0;
	for (int b = rt_bitmap_next(tp_map_used, (int)RT_ARRAY_LEN(tp_map_used), 0); b >= 0;
	     b = rt_bitmap_next(tp_map_used, (int)RT_ARRAY_LEN(tp_map_used), b + 1))
		if (atomic_load(&tp_map[b]))
			atomic_store(&tp_map[b], 0);
	for (int word = 0; word < SLOT_WORDS; word++)
		atomic_store(&slot_bits[word], 0);
	atomic_store(&slot_words, 0);
	ring_clear(&wall.ring);
	atomic_store(&wall.alive, 0);
	atomic_store(&wall.ticking, 0);
	wall.served_tid = 0;
	/* The sampler thread starts later, if the child lives on, and serves
	 * the ticks from then (wall_served). */
}

void wall_clocks_begin_here(int slot, int tid)
{
	if (!atomic_load(&wall.running) || slot < 0 || slot >= THREADS_MAX)
		return;
	struct wall_private *w = &priv[slot];
	w->tid = tid;
	w->first_seen_ns = rt_monotonic_ns();
	/* A fork child's CPU clock restarts at the fork; the constructor's
	 * thread has run the loader and our start before now. */
	clocks_began(w, w->first_seen_ns, rt_thread_cpu_ns());
	/* Its birth is claimed: the visits place its time from now. */
	atomic_store(&thread_slots[slot].wall_born_ns, 0);
}

void wall_get_stats(struct wall_stats *out)
{
	out->ticks = atomic_load(&wall.ticks);
	out->samples_blocked_published = atomic_load(&wall.published);
	out->samples_blocked_cached = atomic_load(&wall.cached);
	out->samples_blocked_syscall = atomic_load(&wall.syscall_samples);
	out->samples_running = atomic_load(&wall.running_samples);
	out->samples_carried = atomic_load(&wall.carried);
	out->requests_cancelled = atomic_load(&wall.cancelled);
	out->unstable = atomic_load(&wall.unstable);
	out->dropped = atomic_load(&wall.dropped);
}

void wall_set_rate(uint32_t hz)
{
	if (hz == 0)
		return;
	/* Each sample is weighted by the time since the thread's previous one,
	 * so totals stay true at any rate. */
	atomic_store(&wall.period_ns, RT_NS_PER_SEC / hz);
}

uint32_t wall_rate(void)
{
	uint64_t period = atomic_load(&wall.period_ns);
	return period ? (uint32_t)(RT_NS_PER_SEC / period) : 0;
}


static void wall_flush(struct profile *finished)
{
	RT_UNUSED(finished);
	wall_drain();
}

static int64_t wall_period(const struct sw_config *cfg, enum sw_kind kind)
{
	RT_UNUSED(kind);
	return (int64_t)(RT_NS_PER_SEC / cfg->wall_hz);
}

const struct collector wall_collector = {
	.name = "wall",
	.kinds = SW_KIND_BIT(SW_KIND_WALL),
	.needs_threads = true,
	.start = wall_start,
	.stop = wall_stop,
	.after_fork_child = wall_after_fork_child,
	.flush = wall_flush,
	.period = wall_period,
};
