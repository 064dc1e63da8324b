/* Wiring and scheduling: every upload period the active profile is swapped
 * for an empty one, encoded per kind, compressed and handed to each
 * exporter on the scheduler thread.  At exit the last period is exported on
 * the exiting thread within the exit timeout. */
#include "core/profiler.h"
#include "collect/collect.h"
#include "collect/overhead.h"
#include "deflate/deflate.h"
#include "rt/thread.h"
#include "encode/otlp.h"
#include "encode/pprof.h"
#include "encode/pyroscope.h"
#include "export/export.h"
#include "export/otlp.h"
#include "profile/family.h"
#include "profile/profile.h"
#include "rt/host.h"
#include "rt/rt.h"
#include "rt/sys.h"
#include "symbols/symbols.h"

#define MAX_EXPORTERS 4
#define FLUSH_MIN_TIMEOUT_NS (10ull * RT_NS_PER_SEC)
/* A process, or fork child, starts its sampler thread only once it has
 * lived this long: most children of a process-per-connection server are
 * gone by then, and so is a shell's /bin/true; one that exits before made
 * one thread (the scheduler, which its start does not wait for) instead of
 * two.  Its CPU samples wait in the rings meanwhile, and its threads' wall
 * time is counted from their start (wall_clocks_begin_here). */
#define SAMPLER_DELAY_NS (20ull * 1000000ull)
/* The part of STOWAWAY_MAX_OVERHEAD_PCT inflating debug sections may use. */
#define INFLATE_SHARE_OF_CAP 4u

/* How long the last export waits for children handing over samples. */
#define FAMILY_CLOSE_WAIT_NS (50 * 1000000ull)

static struct {
	atomic_int running;
	const struct sw_config *cfg;
	struct recorder *rec;
	struct sw_exporter *exporters[MAX_EXPORTERS];
	int n_exporters;
	bool wants_combined; /* an exporter reads the batch's combined profile */
	bool forked;         /* this process is a fork child */
	/* Children hand their last samples to this process (family.h). */
	bool family_on;
	uint64_t code_changes_at_fork; /* symbols_code_changes() when forked */
	uint64_t forked_ns;  /* when, on the monotonic clock (0: not a child) */
	uint64_t sampler_at_ns; /* when the scheduler starts the sampler thread */
	struct sw_otlp_config otlp; /* OpenTelemetry export settings (immutable once loaded) */
	/* Serialises period exports (scheduler, flush, exit). */
	struct rt_mutex export_lock;
	/* Futex word: bumped to wake the scheduler early (stop, a first fork). */
	atomic_int wake;
	/* The stack of the first fork, whose modules the scheduler prepares
	 * for the children (fork_parent): 0 none yet, 1 being captured,
	 * 2 waiting for the scheduler, 3 done; at a later fork, 4 waiting to
	 * prepare them again with the children's own allowance, 5 done. */
	atomic_int fork_warm;
	uint32_t fork_depth;
	uint64_t fork_pcs[64];
	atomic_int stop_requested;
	uint32_t seq;
	/* Guards runtime_id: a tracer may adopt its own id at any time. */
	struct rt_mutex id_lock;
	char runtime_id[37];
	bool runtime_id_adopted; /* set by profiler_set_runtime_id before start */
} prof;

static void make_runtime_id(char out[37])
{
	uint8_t b[16];
	if (!rt_random_bytes(b, sizeof(b))) {
		struct rt_rng rng;
		rt_rng_seed(&rng);
		uint64_t x = rt_rng_next(&rng), y = rt_rng_next(&rng);
		rt_memcpy(b, &x, 8);
		rt_memcpy(b + 8, &y, 8);
	}
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40); /* version 4 */
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[b[i] >> 4];
		out[o++] = hex[b[i] & 15];
	}
	out[o] = 0;
}

int profiler_runtime_id(char *buf, size_t size)
{
	if (!buf || size == 0)
		return -EINVAL;
	if (!atomic_load(&prof.running))
		return -ESRCH;
	rt_mutex_lock(&prof.id_lock);
	size_t n = rt_strlcpy(buf, prof.runtime_id, size);
	rt_mutex_unlock(&prof.id_lock);
	return n >= size ? -ERANGE : 0;
}

/* 8-4-4-4-12 hex digits, either case. */
static bool is_uuid_text(const char *s)
{
	for (int i = 0; i < 36; i++) {
		char c = s[i];
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
		if (dash ? c != '-' : !hex)
			return false;
	}
	return s[36] == '\0';
}

int profiler_set_runtime_id(const char *id)
{
	if (!id || rt_strnlen(id, 37) != 36 || !is_uuid_text(id))
		return -EINVAL;
	rt_mutex_lock(&prof.id_lock);
	for (int i = 0; i < 36; i++) {
		char c = id[i];
		prof.runtime_id[i] = (c >= 'A' && c <= 'F') ? (char)(c - 'A' + 'a') : c;
	}
	prof.runtime_id[36] = '\0';
	prof.runtime_id_adopted = true;
	rt_mutex_unlock(&prof.id_lock);
	return 0;
}

/* The CPU one export spent in each step, and the bytes it made (its
 * debug line: what an export costs the process, step by step). */
struct export_cost {
	uint64_t names_ns, encode_ns, compress_ns, exporters_ns;
	uint64_t raw_bytes, gz_bytes;
};

/* The thread's CPU clock for an export's debug line; 0 when debug lines
 * are off (a short-lived process exports once: eight clock reads are a
 * measurable part of a small export). */
static uint64_t cost_clock(void)
{
	return rt_log_get_level() >= RT_LOG_DEBUG ? rt_thread_cpu_ns() : 0;
}

/* Encodes `mask` of the profile and gzips it into *gz at `level`, adding
 * the time and bytes to *cost.  0 or -errno. */
static int encode_compressed(const struct profile *p, uint32_t mask, const struct pprof_opts *o,
			     int level, struct rt_buf *raw, struct rt_buf *gz, struct export_cost *cost)
{
	rt_buf_reset(raw);
	uint64_t t0 = cost_clock();
	int r = pprof_encode(p, mask, o, symbols_resolve, NULL, raw);
	uint64_t t1 = cost_clock();
	cost->encode_ns += t1 - t0;
	if (r < 0)
		return r;
	if (raw->failed)
		return -ENOMEM;
	r = gz_compress(raw->data, raw->len, level, gz);
	cost->compress_ns += cost_clock() - t1;
	cost->raw_bytes += raw->len;
	cost->gz_bytes += r == 0 ? gz->len : 0;
	return r;
}

struct endpoint_counts {
	struct sw_endpoint_count items[SW_MAX_ENDPOINT_COUNTS];
	size_t n;
};

static void add_endpoint_count(void *ctx, const char *name, uint64_t count)
{
	struct endpoint_counts *ec = ctx;
	if (ec->n < SW_MAX_ENDPOINT_COUNTS)
		ec->items[ec->n++] = (struct sw_endpoint_count){ name, count };
}

/* The options of one kind's file in an export, to whichever destination. */
static void export_opts(struct pprof_opts *o, enum sw_kind kind, const char *const *comments,
			uint32_t n_comments, struct pprof_names *names)
{
	pprof_opts_for_kind(o, kind, collect_period(prof.cfg, kind));
	o->main_pc = host_entry_pc();
	o->late_comment = symbols_describe;
	o->comments = comments;
	o->n_comments = n_comments;
	o->names = names;
}

/* Pyroscope's profiles of every enabled kind, compressed; returns how many. */
static size_t encode_pyroscope(const struct profile *p, uint32_t kinds, const char *const *comments,
			       uint32_t n_comments, struct pprof_names *names, int level,
			       struct sw_export_pyro_item *items, struct rt_buf *gz)
{
	const struct sw_config *cfg = prof.cfg;
	uint32_t app_labels = export_pyroscope_series_labels(cfg);
	struct pyro_limits lim = {
		.max_samples = cfg->pyroscope_max_samples,
		.max_bytes = cfg->pyroscope_max_bytes,
		.max_sample_labels = app_labels < PYRO_MAX_SERIES_LABELS ?
					     PYRO_MAX_SERIES_LABELS - app_labels : 0,
		.thread_ids = cfg->pyroscope_thread_ids,
	};
	size_t n = 0;
	for (unsigned k = 0; k < SW_KIND_COUNT; k++) {
		if (!(kinds & SW_KIND_BIT(k)))
			continue;
		struct pprof_opts o;
		export_opts(&o, (enum sw_kind)k, comments, n_comments, names);
		struct pyro_output out[PYRO_MAX_OUTPUTS];
		int r = pyro_encode_kind(p, (enum sw_kind)k, &o, &lim, symbols_resolve, NULL, out);
		if (r < 0)
			rt_log_once(RT_LOG_WARN, "could not encode the %s profile for Pyroscope (error %d)",
				    sw_kind_name((enum sw_kind)k), -r);
		for (int i = 0; i < r; i++) {
			if (gz_compress(out[i].raw.data, out[i].raw.len, level, &gz[n]) == 0) {
				items[n] = (struct sw_export_pyro_item){
					.kind = (enum sw_kind)k,
					.series = out[i].series,
					.sample_type_config = out[i].sample_type_config,
					.gz = gz[n].data,
					.len = gz[n].len,
				};
				n++;
			} else {
				rt_buf_free(&gz[n]);
			}
			rt_buf_free(&out[i].raw);
		}
	}
	return n;
}

/* The OTLP request of the profiles added to enc, with the resource of the
 * settings plus this process's pid; an empty buffer on failure. */
static void encode_otlp_request(struct otlp_encoder *enc, struct rt_buf *out)
{
	struct otlp_attribute attrs[SW_OTLP_MAX_ATTRIBUTES + 1];
	uint32_t n = 0;
	for (uint32_t i = 0; i < prof.otlp.n_resource; i++)
		attrs[n++] = (struct otlp_attribute){ prof.otlp.resource[i].key,
						      prof.otlp.resource[i].value };
	char pid[24];
	rt_snprintf(pid, sizeof(pid), "%ld", sys_getpid());
	attrs[n++] = (struct otlp_attribute){ "process.pid", pid };
	int r = otlp_encode_request(enc, attrs, n, STOWAWAY_VERSION, out);
	if (r < 0 || out->failed) {
		rt_log_once(RT_LOG_WARN, "could not encode the OTLP request (error %d)", r < 0 ? -r : 12);
		rt_buf_free(out);
	}
}

/* The value slots some sample of p fills.  At a process's exit, a kind
 * none of whose slots is filled is not exported (no file, no OTLP profile,
 * nothing uploaded; a process without any sample exports nothing): a
 * short-lived process (a server's process per connection, each command of
 * a shell script or a build) usually has samples of a kind or two at most,
 * and each file costs an inode, a sync and a retention scan, and pushes an
 * older profile out of the directory's bound.  Periodic exports send every
 * kind.  Nothing is lost for the kinds that
 * count what happened in the period (an empty period adds nothing); the
 * live heap is a snapshot, so an empty one is skipped only by a process
 * that exported none before (an earlier snapshot would stand as its last).
 * A fork child also skips a live heap that holds only allocations its
 * parent made (collect_heap_only_inherited): the parent's own heap
 * profiles show them, and a server forking a process per connection would
 * otherwise write one copy of its parent's heap per connection. */
static uint32_t slots_with_values(const struct profile *p)
{
	uint32_t filled = 0, n = profile_sample_count(p);
	struct profile_sample_view v;
	for (uint32_t i = 0; i < n; i++) {
		if (!profile_sample_get(p, i, &v))
			continue;
		for (uint32_t s = 0; s < SW_V_COUNT; s++)
			if (v.values[s] != 0)
				filled |= 1u << s;
	}
	return filled;
}

/* Hands the distinct pcs of p's stacks to symbols_prepare_names, so that a
 * large library of which the export names a few hundred functions is
 * scanned once rather than tabled.  Each stack once (a bit per stack id),
 * each pc once (an open-addressed set, doubled at half full). */
static void prepare_names(const struct profile *p)
{
	uint32_t n_stacks = profile_stack_count(p), n_samples = profile_sample_count(p);
	uint64_t *seen_stacks = rt_calloc(((size_t)n_stacks + 63) / 64, sizeof(uint64_t));
	uint32_t cap = 4096, n = 0;
	uint64_t *set = rt_calloc(cap, sizeof(uint64_t)); /* 0: empty (no code at 0) */
	bool ok = seen_stacks != NULL && set != NULL;
	struct profile_sample_view v;
	for (uint32_t i = 0; ok && i < n_samples; i++) {
		if (!profile_sample_get(p, i, &v) || v.stack_id >= n_stacks ||
		    (seen_stacks[v.stack_id / 64] >> (v.stack_id % 64) & 1))
			continue;
		seen_stacks[v.stack_id / 64] |= (uint64_t)1 << (v.stack_id % 64);
		for (uint32_t d = 0; ok && d < v.depth; d++) {
			uint64_t pc = v.pcs[d];
			if (pc == 0 || sw_synthetic_frame_name(pc) != NULL)
				continue;
			if (n + 1 > cap / 2) {
				uint64_t *bigger = cap <= UINT32_MAX / 4 ? rt_calloc((size_t)cap * 2, sizeof(uint64_t)) : NULL;
				if (bigger == NULL) {
					ok = false;
					break;
				}
				for (uint32_t j = 0; j < cap; j++) {
					if (set[j] == 0)
						continue;
					uint32_t h = (uint32_t)((set[j] * RT_HASH_MUL64) >> 32) & (cap * 2 - 1);
					while (bigger[h] != 0)
						h = (h + 1) & (cap * 2 - 1);
					bigger[h] = set[j];
				}
				rt_free(set);
				set = bigger;
				cap *= 2;
			}
			uint32_t h = (uint32_t)((pc * RT_HASH_MUL64) >> 32) & (cap - 1);
			while (set[h] != 0 && set[h] != pc)
				h = (h + 1) & (cap - 1);
			if (set[h] == 0) {
				set[h] = pc;
				n++;
			}
		}
	}
	if (ok) {
		uint32_t k = 0;
		for (uint32_t j = 0; j < cap; j++)
			if (set[j] != 0)
				set[k++] = set[j];
		rt_sort_u64(set, k, set + k); /* k <= cap / 2 */
		symbols_prepare_names(set, k);
	}
	rt_free(set);
	rt_free(seen_stacks);
}

/* A fork child that exits within its first period hands its samples to
 * its parent's profile (family.h) when the parent maps the same code: the
 * child mapped none since the fork (the refresh its samples asked for
 * found none; its pcs are named with the parent's tables); and when it
 * counted no request by endpoint, which the upload of its own profile
 * would carry.  Its live heap dies with it.  A child that has exported
 * before keeps its own series to the end. */
static bool hand_to_parent(const struct profile *p)
{
	if (!prof.forked || !prof.family_on || prof.seq != 0)
		return false;
	const char *why = NULL;
	if (symbols_code_changes() != prof.code_changes_at_fork)
		why = "code mapped since the fork";
	else if (collect_endpoint_counts_pending())
		why = "requests counted by endpoint";
	if (why == NULL) {
		uint32_t mask = 0;
		for (unsigned k = 0; k < SW_KIND_COUNT; k++)
			if ((prof.cfg->kinds & SW_KIND_BIT(k)) && k != SW_KIND_HEAP)
				mask |= sw_kind_value_mask((enum sw_kind)k);
		enum family_result r = family_deliver(p, mask);
		if (r != FAMILY_HANDED)
			why = family_result_text(r);
	}
	if (why != NULL) {
		rt_debug("exporting this process's last samples itself, not through its parent: %s",
			 why);
		return false;
	}
	rt_debug("handed this process's last samples to its parent (pid %ld) instead of "
		 "exporting them", sys_getppid());
	return true;
}

/* Ends the current period and exports it; `trigger` (or NULL) is the
 * memory threshold that asked for this export out of period.  Caller holds
 * export_lock. */
static int export_period(bool final, uint64_t deadline_ns, const struct memguard_trigger *trigger)
{
	const struct sw_config *cfg = prof.cfg;
	/* What the children handed over goes out in this period's profiles;
	 * at the last export no child hands over any more (family.h). */
	if (final) {
		family_close(prof.rec, FAMILY_CLOSE_WAIT_NS);
		struct family_stats fs;
		family_get_stats(&fs);
		if (fs.drained || fs.malformed || fs.abandoned)
			rt_debug("fork family: %llu children's last samples taken over (%llu samples), "
				 "%llu malformed, %llu abandoned by children that died handing them over; "
				 "in %llu slots",
				 (unsigned long long)fs.groups, (unsigned long long)fs.drained_samples,
				 (unsigned long long)fs.malformed, (unsigned long long)fs.abandoned,
				 (unsigned long long)fs.drained);
	} else {
		(void)family_drain(prof.rec);
	}
	struct profile *p = recorder_swap(prof.rec);
	if (!p) {
		rt_log_once(RT_LOG_WARN, "out of memory swapping profiles; this period is merged "
					 "into the next");
		return -ENOMEM;
	}
	collect_before_export(p);
	/* At exit, code mapped since the last refresh is named too: samples
	 * met it (the unwinder flags a pc outside every known module).  A
	 * process whose samples all fell in known code (a forked worker with
	 * its parent's registry) reads no /proc/self/maps at exit. */
	if (final && collect_take_unknown_code())
		(void)symbols_refresh();
	if (final && hand_to_parent(p)) {
		profile_release(p);
		return 0;
	}
	/* The encodes below free and allocate big tables in turn (function
	 * tables' sort buffers, each profile's tables and buffers): their pages
	 * are faulted in once, not once per profile. */
	rt_heap_keep_begin();
	/* The exit export compresses at the fast level (as Go's runtime/pprof
	 * writes every profile): about 9% larger, a third less gzip CPU,
	 * paid by a process at its end, often a short one. */
	int gz_level = final ? GZ_LEVEL_FAST : GZ_LEVEL_DEFAULT;
	/* Names for the first exports and the last: a process exporting again
	 * and again has built its tables by then (symbols.h). */
	struct export_cost cost = { 0 };
	/* Lines are read with what the CPU cap leaves after the rest of us. */
	symbols_note_profiler_cost(overhead_spent_ns());
	uint64_t names_from = cost_clock();
	if (final || prof.seq < 2)
		prepare_names(p);
	cost.names_ns = cost_clock() - names_from;
	char overhead_line[320], trigger_line[MEMGUARD_PATH_MAX + 200];
	char oom_line[MEMGUARD_PATH_MAX + 120], trigger_tags[256], symbols_line[PPROF_LATE_COMMENT_CAP];
	/* The symbols line is each file's late comment: it counts the lookups
	 * that naming that file's own locations deferred. */
	const char *comments[3] = { overhead_line };
	uint32_t n_comments = 1;
	(void)collect_describe(overhead_line, sizeof(overhead_line));
	if (trigger) {
		memguard_describe(trigger, trigger_line, sizeof(trigger_line));
		memguard_tags(trigger, trigger_tags, sizeof(trigger_tags));
		comments[n_comments++] = trigger_line;
	}
	if (memguard_take_oom_note(oom_line, sizeof(oom_line)))
		comments[n_comments++] = oom_line;
	struct profile_stats st;
	profile_get_stats(p, &st);

	uint32_t filled = final ? slots_with_values(p) : UINT32_MAX;
	bool heap_inherited = final && prof.forked && prof.seq == 0 && collect_heap_only_inherited();
	struct sw_export_item items[SW_KIND_COUNT];
	struct rt_buf gz[SW_KIND_COUNT];
	struct rt_buf combined = { 0 }, raw = { 0 };
	rt_memset(gz, 0, sizeof(gz));
	size_t n_items = 0;
	uint32_t all_slots = 0;
	/* OTLP is translated from each kind's pprof as it is made. */
	struct otlp_encoder *otlp_enc = prof.otlp.enabled ? otlp_encoder_create() : NULL;
	/* Every profile of this export demangles into one memo (NULL: each its own). */
	struct pprof_names *names = pprof_names_create();
	int result = 0;
	for (unsigned k = 0; k < SW_KIND_COUNT; k++) {
		if (!(cfg->kinds & SW_KIND_BIT(k)))
			continue;
		struct pprof_opts o;
		export_opts(&o, (enum sw_kind)k, comments, n_comments, names);
		uint32_t mask = sw_kind_value_mask((enum sw_kind)k);
		all_slots |= mask;
		if ((!(filled & mask) && (k != SW_KIND_HEAP || prof.seq == 0)) ||
		    (k == SW_KIND_HEAP && heap_inherited))
			continue; /* see slots_with_values */
		int r = encode_compressed(p, mask, &o, gz_level, &raw, &gz[n_items], &cost);
		if (r < 0) {
			rt_log_once(RT_LOG_WARN, "could not encode the %s profile (error %d)",
				    sw_kind_name((enum sw_kind)k), -r);
			result = r;
			rt_buf_free(&gz[n_items]);
			continue;
		}
		if (otlp_enc && otlp_add_pprof(otlp_enc, raw.data, raw.len) < 0)
			rt_log_once(RT_LOG_WARN, "could not translate the %s profile to OTLP",
				    sw_kind_name((enum sw_kind)k));
		items[n_items].kind = (enum sw_kind)k;
		items[n_items].gz = gz[n_items].data;
		items[n_items].len = gz[n_items].len;
		n_items++;
	}
	struct pprof_opts all_opts = { .period_slot = PPROF_NO_SLOT, .default_slot = PPROF_NO_SLOT,
				       .names = names };
	/* The kinds exported, for the uploads that go by kind; an exit with
	 * none (no sample of any kind) uploads nothing either. */
	uint32_t exported = final ? 0 : cfg->kinds;
	for (size_t i = 0; i < n_items && final; i++)
		exported |= SW_KIND_BIT(items[i].kind);
	if (all_slots && exported && prof.wants_combined &&
	    encode_compressed(p, all_slots, &all_opts, gz_level, &raw, &combined, &cost) < 0)
		rt_buf_free(&combined);
	rt_buf_free(&raw);
	struct rt_buf otlp_req = { 0 };
	if (otlp_enc)
		encode_otlp_request(otlp_enc, &otlp_req);
	otlp_encoder_destroy(otlp_enc);

	struct sw_export_pyro_item pyro_items[SW_KIND_COUNT * PYRO_MAX_OUTPUTS];
	struct rt_buf pyro_gz[SW_KIND_COUNT * PYRO_MAX_OUTPUTS];
	rt_memset(pyro_gz, 0, sizeof(pyro_gz));
	size_t n_pyro = 0;
	if (cfg->pyroscope_url[0])
		n_pyro = encode_pyroscope(p, exported, comments, n_comments, names, gz_level, pyro_items,
					  pyro_gz);
	pprof_names_free(names);
	struct endpoint_counts ec = { .n = 0 };
	uint64_t uncounted = collect_endpoint_counts_take(add_endpoint_count, &ec);
	if (uncounted)
		rt_log_once(RT_LOG_INFO, "more than %u distinct endpoints: %llu requests were not "
					 "counted in endpoint_counts",
			    SW_MAX_ENDPOINT_COUNTS, (unsigned long long)uncounted);

	char runtime_id[37];
	rt_mutex_lock(&prof.id_lock);
	rt_memcpy(runtime_id, prof.runtime_id, sizeof(runtime_id));
	rt_mutex_unlock(&prof.id_lock);
	struct sw_export_batch batch = {
		.start_ns = st.start_ns,
		.end_ns = st.end_ns,
		.seq = prof.seq++,
		.pid = (uint32_t)sys_getpid(),
		.runtime_id = runtime_id,
		.items = items,
		.n_items = n_items,
		.combined_gz = combined.data,
		.combined_len = combined.len,
		.final = final,
		.pyro_items = pyro_items,
		.n_pyro_items = n_pyro,
		.endpoint_counts = ec.items,
		.n_endpoint_counts = ec.n,
		.tags = trigger ? trigger_tags : NULL,
		.otlp_request = otlp_req.data,
		.otlp_len = otlp_req.len,
	};
	rt_heap_keep_end();
	uint64_t exporters_from = cost_clock();
	for (int i = 0; i < prof.n_exporters; i++) {
		int r = prof.exporters[i]->export_batch(prof.exporters[i], &batch, deadline_ns);
		if (r < 0)
			result = r;
	}
	cost.exporters_ns = cost_clock() - exporters_from;
	rt_debug("export %u: %llu us of CPU naming pcs, %llu us encoding, %llu us compressing "
		 "(%llu KiB of pprof to %llu KiB), %llu us in the exporters",
		 (unsigned)batch.seq, (unsigned long long)(cost.names_ns / 1000),
		 (unsigned long long)(cost.encode_ns / 1000), (unsigned long long)(cost.compress_ns / 1000),
		 (unsigned long long)(cost.raw_bytes >> 10), (unsigned long long)(cost.gz_bytes >> 10),
		 (unsigned long long)(cost.exporters_ns / 1000));
	for (size_t i = 0; i < n_items; i++)
		rt_buf_free(&gz[i]);
	for (size_t i = 0; i < n_pyro; i++)
		rt_buf_free(&pyro_gz[i]);
	rt_buf_free(&combined);
	rt_buf_free(&otlp_req);
	profile_release(p);
	symbols_collect_garbage();
	if (final) {
		(void)symbols_describe(symbols_line, sizeof(symbols_line));
		rt_debug("%s", symbols_line + sizeof("stowaway: ") - 1);
	}
	return result;
}

/* Waits until the monotonic deadline or a wake-up; false when asked to stop. */
static bool wait_until(uint64_t deadline_ns)
{
	for (int spins = 0; spins < 1000000; spins++) {
		if (atomic_load(&prof.stop_requested))
			return false;
		int seen = atomic_load(&prof.wake);
		thread_own_service();
		uint64_t now = rt_monotonic_ns();
		int warm = atomic_load(&prof.fork_warm);
		if (now >= deadline_ns || warm == 2 || warm == 4)
			return true;
		uint64_t left = deadline_ns - now;
		struct __kernel_timespec ts = sys_timespec_of_ns(left);
		(void)sys_futex((volatile int *)&prof.wake, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, seen,
				&ts);
	}
	return !atomic_load(&prof.stop_requested);
}

/* Exports at once when the memory guard reports a threshold crossed: files
 * first (the file exporter is first in the list), then uploads. */
static void export_for_memory(const struct memguard_trigger *t, uint64_t period_ns)
{
	char line[MEMGUARD_PATH_MAX + 200];
	memguard_describe(t, line, sizeof(line));
	rt_info("%s: exporting the live heap now", line);
	rt_mutex_lock(&prof.export_lock);
	if (!atomic_load(&prof.stop_requested))
		(void)export_period(false, rt_monotonic_ns() + period_ns, t);
	rt_mutex_unlock(&prof.export_lock);
}

/* Scheduler thread: resolves the frames fork_parent noted (see there). */
static void prepare_for_children(void)
{
	int warm = atomic_load(&prof.fork_warm);
	if (warm != 2 && warm != 4)
		return;
	rt_mutex_lock(&prof.export_lock);
	symbols_resolve_for_children(prof.fork_pcs, RT_MIN(prof.fork_depth, RT_ARRAY_LEN(prof.fork_pcs)),
				     warm == 4);
	rt_mutex_unlock(&prof.export_lock);
	atomic_store(&prof.fork_warm, warm + 1);
}

static void *scheduler_main(void *arg)
{
	RT_UNUSED(arg);
	(void)sys_prctl(15 /* PR_SET_NAME */, (long)"stowaway-sched", 0, 0, 0);
	thread_own_wake_word(&prof.wake);
	uint64_t period_ns = (uint64_t)prof.cfg->upload_period_s * RT_NS_PER_SEC;
	uint64_t next = rt_monotonic_ns() + period_ns;
	/* The sampler thread, and the memory guard (polled from this thread
	 * between periods; its start reads the cgroup files and the mount
	 * table), once the process has lived on. */
	uint64_t next_poll = UINT64_MAX;
	uint64_t threads_at = prof.sampler_at_ns;
	while (wait_until(RT_MIN(RT_MIN(next, next_poll), threads_at))) {
		prepare_for_children();
		uint64_t now = rt_monotonic_ns();
		if (now >= threads_at) {
			collect_start_threads();
			threads_at = UINT64_MAX;
			next_poll = memguard_start(prof.cfg) ? now : UINT64_MAX;
		}
		if (now >= next_poll) {
			struct memguard_trigger t;
			next_poll = memguard_poll(now, &t);
			if (t.fired)
				export_for_memory(&t, period_ns);
		}
		now = rt_monotonic_ns();
		if (now < next)
			continue;
		rt_mutex_lock(&prof.export_lock);
		if (!atomic_load(&prof.stop_requested))
			(void)export_period(false, rt_monotonic_ns() + period_ns, NULL);
		rt_mutex_unlock(&prof.export_lock);
		memguard_period_begin();
		next += period_ns;
		now = rt_monotonic_ns();
		if (next < now) /* an export overran: skip the missed ticks */
			next = now + period_ns;
	}
	return NULL;
}

/* ---- fork: the child is a new process with a profile of its own ---- */

static void fork_prepare(void)
{
	/* The inbox the children hand their last samples to (family.h). */
	if (atomic_load(&prof.running) && prof.family_on)
		(void)family_open();
	rt_heap_fork_prepare();
}

/* A process that forks once usually forks again (a prefork server, a
 * postmaster starting a backend per connection).  Every child inherits the
 * parent's symbol tables and DWARF indexes copy-on-write, but builds at its
 * first export whatever the parent had not built yet: for a short-lived
 * child that is most of its cost (a libc with separate debug info is
 * ~100 ms of inflating and indexing).  So at its first fork the parent
 * notes the forking stack, and its scheduler resolves those frames once:
 * the modules every child runs (the program, libc) are then indexed in the
 * parent and shared by the children forked after it.  Debug information
 * those frames need is read within the parent's share of its own CPU, which
 * a parent that has done little yet does not have (a postmaster's backends
 * each read libc's debug file on their own, ~1.5 ms apiece); a second fork
 * shows a parent that keeps forking, and its scheduler resolves them again
 * with the children's own allowance (symbols_resolve_for_children), once,
 * where a shell forking a single command pays nothing. */
static void fork_parent(void)
{
	rt_heap_fork_parent();
	if (!atomic_load(&prof.running))
		return;
	int expected = 3;
	if (atomic_compare_exchange_strong(&prof.fork_warm, &expected, 4)) {
		atomic_fetch_add(&prof.wake, 1);
		(void)sys_futex((volatile int *)&prof.wake, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL);
		return;
	}
	expected = 0;
	if (!atomic_compare_exchange_strong(&prof.fork_warm, &expected, 1))
		return;
	prof.fork_depth = collect_stack_of_caller(prof.fork_pcs, RT_ARRAY_LEN(prof.fork_pcs));
	atomic_store(&prof.fork_warm, 2);
	atomic_fetch_add(&prof.wake, 1);
	(void)sys_futex((volatile int *)&prof.wake, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL);
}

static struct sw_exporter *(*const exporter_makers[])(const struct sw_config *) = {
	export_file_create,
	export_datadog_create,
	export_pyroscope_create,
};

static void create_exporters(const struct sw_config *cfg)
{
	prof.n_exporters = 0;
	prof.wants_combined = false;
	for (size_t i = 0; i < sizeof(exporter_makers) / sizeof(exporter_makers[0]); i++) {
		struct sw_exporter *e = exporter_makers[i](cfg);
		if (!e)
			continue;
		prof.exporters[prof.n_exporters++] = e;
		prof.wants_combined |= e->wants_combined;
	}
	struct sw_exporter *e = export_otlp_create(cfg, &prof.otlp);
	if (e && prof.n_exporters < MAX_EXPORTERS)
		prof.exporters[prof.n_exporters++] = e;
}

/* Runs in the child right after fork, on the only thread there is.  Locks
 * held by threads that do not exist here are reset; the parent's pending
 * samples are dropped; exporters are made anew (the parent's may have been
 * mid-upload on its scheduler thread); threads and timers restart. */
static void fork_child(void)
{
	rt_heap_after_fork_child();
	if (!atomic_load(&prof.running))
		return;
	rt_mutex_reset(&prof.export_lock);
	rt_mutex_reset(&prof.id_lock);
	/* A new process: its tracer makes a new id too and may adopt it again. */
	make_runtime_id(prof.runtime_id);
	prof.runtime_id_adopted = false;
	prof.seq = 0;
	prof.forked = true;
	prof.forked_ns = rt_monotonic_ns();
	prof.sampler_at_ns = prof.forked_ns + SAMPLER_DELAY_NS;
	atomic_store(&prof.fork_warm, 0); /* its own first fork prepares its own children */
	recorder_after_fork_child(prof.rec);
	family_after_fork_child();
	symbols_after_fork_child();
	prof.code_changes_at_fork = symbols_code_changes(); /* its lock reset above */
	create_exporters(prof.cfg);
	atomic_store(&prof.stop_requested, 0);
	memguard_after_fork_child();
	collect_after_fork_child();
	int r = thread_spawn_unwaited(scheduler_main, NULL);
	if (r < 0)
		rt_warn("cannot restart the scheduler after fork (error %d); this process's "
			"profiles are exported only at exit", -r);
}

static void register_fork_handlers(void)
{
	static atomic_int registered;
	if (atomic_exchange(&registered, 1))
		return;
	int r = -1;
	if (__register_atfork)
		r = __register_atfork(fork_prepare, fork_parent, fork_child, NULL);
	else if (pthread_atfork)
		r = pthread_atfork(fork_prepare, fork_parent, fork_child);
	if (r != 0)
		rt_warn("cannot register fork handlers; a forked child is not profiled correctly");
}

/* Takes export_lock, giving up at the deadline (another export in progress). */
static bool lock_before(uint64_t deadline_ns)
{
	while (!rt_mutex_trylock(&prof.export_lock)) {
		if (rt_monotonic_ns() >= deadline_ns)
			return false;
		(void)rt_sleep_ns(1000000);
	}
	return true;
}

int profiler_start(const struct sw_config *cfg)
{
	if (atomic_load(&prof.running))
		return 0;
	prof.cfg = cfg;
	prof.family_on = cfg->children_to_parent;
	struct profile_limits limits = { .max_samples = cfg->max_stacks };
	if (cfg->timeline) {
		limits.timeline_slots = sw_kind_value_mask(SW_KIND_CPU) | sw_kind_value_mask(SW_KIND_WALL);
		limits.max_timeline_samples = cfg->timeline_max_samples;
	}
	if (!prof.rec)
		prof.rec = recorder_create(&limits);
	if (!prof.rec)
		return -ENOMEM;
	rt_mutex_lock(&prof.id_lock);
	if (!prof.runtime_id_adopted)
		make_runtime_id(prof.runtime_id);
	rt_mutex_unlock(&prof.id_lock);
	config_otlp_load(cfg, &prof.otlp);
	create_exporters(cfg);
	register_fork_handlers();
	if (prof.n_exporters == 0)
		rt_warn("no profile destination is usable; profiles are collected but not exported");
	/* Inflating debug sections is one cost among several under the cap
	 * (sampling, unwinding, export): lines get a quarter of it at most, and
	 * no more than the rest of us leaves (export_period notes what that
	 * cost). */
	symbols_configure(cfg->debug_dirs, (size_t)cfg->debug_memory_mb << 20,
			  cfg->max_overhead_ppm / INFLATE_SHARE_OF_CAP, cfg->max_overhead_ppm);
	if (!symbols_refresh())
		rt_warn("cannot read /proc/self/maps: stacks will have no symbols");
	atomic_store(&prof.stop_requested, 0);
	atomic_store(&prof.running, 1);
	int collectors = collect_start(cfg, prof.rec);
	prof.sampler_at_ns = rt_monotonic_ns() + SAMPLER_DELAY_NS;
	int r = thread_spawn_unwaited(scheduler_main, NULL);
	if (r < 0) {
		rt_warn("could not start the scheduler thread (error %d); profiles are exported "
			"only at exit", -r);
		collect_start_threads();
	}
	rt_info("profiling %s (pid %ld, %d collectors, upload period %us, runtime id %s, clocks "
		"read through %s)",
		cfg->service, sys_getpid(), collectors, cfg->upload_period_s, prof.runtime_id,
		rt_clock_source());
	return 0;
}

int profiler_stop(bool final_flush)
{
	if (!atomic_exchange(&prof.running, 0))
		return 0;
	const struct sw_config *cfg = prof.cfg;
	uint64_t deadline = rt_monotonic_ns() + (uint64_t)cfg->exit_timeout_ms * 1000000ull;
	atomic_store(&prof.stop_requested, 1);
	atomic_fetch_add(&prof.wake, 1);
	(void)sys_futex((volatile int *)&prof.wake, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL);
	collect_stop();
	if (!final_flush)
		return 0;
	if (!lock_before(deadline)) {
		rt_warn("the final profile was not exported: an export was still running at the "
			"exit timeout (%u ms)", cfg->exit_timeout_ms);
		return -ETIMEDOUT;
	}
	int r = export_period(true, deadline, NULL);
	rt_mutex_unlock(&prof.export_lock);
	return r;
}

int profiler_flush(void)
{
	if (!atomic_load(&prof.running))
		return -ESRCH;
	uint64_t timeout = RT_MAX(FLUSH_MIN_TIMEOUT_NS, (uint64_t)prof.cfg->exit_timeout_ms * 1000000ull);
	uint64_t deadline = rt_monotonic_ns() + timeout;
	if (!lock_before(deadline))
		return -ETIMEDOUT;
	int r = export_period(false, deadline, NULL);
	rt_mutex_unlock(&prof.export_lock);
	return r;
}
