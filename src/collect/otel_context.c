/* Reader of OTEP 4947 thread context records (see otel_context.h). */
#include "collect/otel_context.h"

#include "rt/host.h"
#include "symbols/tls.h"

#define OTEL_SITES_MAX 8
/* At the first refresh every module with TLS was loaded with the program:
 * its block is in static TLS whatever its distance from the thread pointer
 * (a large __thread array in the executable pushes libraries far). */
#define STARTUP_EXTENT ((size_t)64 << 20)
/* Later (dlopen), a block is static only if it sits in the static area,
 * which ends a little past the startup modules (glibc's surplus). */
#define SURPLUS_EXTENT ((size_t)64 << 10)

struct otel_site {
	uint64_t module_base;
	uint64_t symbol_value;
	intptr_t tp_delta;  /* immutable once published */
	atomic_bool live;   /* false once its module is gone */
};

static struct {
	struct rt_mutex lock; /* refreshes */
	atomic_uint n;        /* published sites; entries below n never change but `live` */
	struct otel_site sites[OTEL_SITES_MAX];
	bool scanned;         /* a first refresh happened */
	size_t static_extent; /* for later refreshes */
	uint32_t dynamic;     /* modules skipped at the last refresh */
	atomic_ullong reads;
} oc;

struct refresh_walk {
	bool seen[OTEL_SITES_MAX];
	uint32_t dynamic;
	uintptr_t max_distance;
	/* A module just loaded with dlopen, and where the calling thread's copy
	 * of the variable is (dlsym), for when the loader's per-thread table is
	 * not yet current for it (glibc). */
	uint64_t hint_base;
	intptr_t hint_delta;
	bool hint;
};

static void site_found(const struct tls_symbol_site *found, void *ctx)
{
	struct refresh_walk *w = ctx;
	struct tls_symbol_site fixed = *found;
	const struct tls_symbol_site *site = &fixed;
	/* A site already published stays (its module is still loaded), even if
	 * this thread's view of it is not current. */
	uint32_t published = atomic_load(&oc.n);
	for (uint32_t i = 0; i < published; i++) {
		if (oc.sites[i].module_base == site->module_base &&
		    oc.sites[i].symbol_value == site->symbol_value) {
			w->seen[i] = true;
			return;
		}
	}
	if (!fixed.is_static && w->hint && fixed.module_base == w->hint_base) {
		uintptr_t d = w->hint_delta < 0 ? (uintptr_t)-w->hint_delta : (uintptr_t)w->hint_delta;
		if (d <= oc.static_extent) {
			fixed.is_static = true;
			fixed.tp_delta = w->hint_delta;
		}
	}
	if (site->symbol_size != 0 && site->symbol_size < sizeof(void *)) {
		rt_log_once(RT_LOG_WARN, "%s in %s is %llu bytes, not a pointer; not read",
			    OTEL_CONTEXT_SYMBOL, site->module[0] ? site->module : "the executable",
			    (unsigned long long)site->symbol_size);
		return;
	}
	if (!site->is_static) {
		w->dynamic++;
		rt_log_once(RT_LOG_INFO, "%s in %s lives in dynamic TLS; its thread context is not read",
			    OTEL_CONTEXT_SYMBOL, site->module[0] ? site->module : "the executable");
		return;
	}
	uintptr_t distance = site->tp_delta < 0 ? (uintptr_t)-site->tp_delta : (uintptr_t)site->tp_delta;
	if (distance > w->max_distance)
		w->max_distance = distance;
	uint32_t n = published;
	if (n >= OTEL_SITES_MAX) {
		rt_log_once(RT_LOG_WARN, "more than %d modules define %s; the others are not read",
			    OTEL_SITES_MAX, OTEL_CONTEXT_SYMBOL);
		return;
	}
	struct otel_site *s = &oc.sites[n];
	s->module_base = site->module_base;
	s->symbol_value = site->symbol_value;
	s->tp_delta = site->tp_delta;
	atomic_store(&s->live, true);
	w->seen[n] = true;
	atomic_store_explicit(&oc.n, n + 1, memory_order_release);
	rt_debug("reading %s from %s (thread pointer %ld)", OTEL_CONTEXT_SYMBOL,
		 site->module[0] ? site->module : "the executable", (long)site->tp_delta);
}

static void refresh(struct refresh_walk *walk)
{
	rt_mutex_lock(&oc.lock);
	struct refresh_walk w = *walk;
	size_t extent = oc.scanned ? oc.static_extent : STARTUP_EXTENT;
	int found = tls_symbol_sites(OTEL_CONTEXT_SYMBOL, extent, site_found, &w);
	if (found >= 0) {
		uint32_t n = atomic_load(&oc.n);
		for (uint32_t i = 0; i < n; i++)
			atomic_store(&oc.sites[i].live, w.seen[i]);
		oc.dynamic = w.dynamic;
		if (!oc.scanned) {
			oc.scanned = true;
			oc.static_extent = w.max_distance + SURPLUS_EXTENT;
		}
	}
	rt_mutex_unlock(&oc.lock);
}

void otel_context_refresh(void)
{
	struct refresh_walk w = { 0 };
	refresh(&w);
}

void otel_context_dlopened(void *handle)
{
	struct refresh_walk w = { 0 };
	/* This thread's copy of the library's variable (dlsym of a TLS symbol
	 * gives the calling thread's address, allocating it if needed).  The
	 * handle's first word is the module's load bias in glibc (struct
	 * link_map's l_addr, public through dlinfo) and musl (struct dso's
	 * base). */
	void *addr = handle && dlsym ? dlsym(handle, OTEL_CONTEXT_SYMBOL) : NULL;
	if (addr) {
		w.hint = true;
		w.hint_base = *(const uint64_t *)handle;
		w.hint_delta = (intptr_t)((uintptr_t)addr - rt_thread_pointer());
	}
	refresh(&w);
}

bool otel_context_present(void) { return atomic_load_explicit(&oc.n, memory_order_relaxed) != 0; }

static uint64_t big_endian64(const uint8_t *b)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | b[i];
	return v;
}

/* Takes a record header if it is valid and names a span. */
static bool accept(const uint8_t *hdr, struct otel_span *out)
{
	if (hdr[24] != 1)
		return false;
	uint64_t span = big_endian64(hdr + 16);
	if (span == 0)
		return false;
	out->span_id = span;
	rt_memcpy(out->trace_id, hdr, 16);
	return true;
}

bool otel_context_read_self(struct otel_span *out)
{
	out->span_id = 0;
	uint32_t n = atomic_load_explicit(&oc.n, memory_order_acquire);
	if (n == 0)
		return false;
	uintptr_t tp = rt_thread_pointer();
	for (uint32_t i = 0; i < n; i++) {
		const struct otel_site *s = &oc.sites[i];
		if (!atomic_load_explicit(&s->live, memory_order_relaxed))
			continue;
		/* Our own static TLS: mapped as long as the thread lives. */
		uintptr_t rec = *(const volatile uintptr_t *)(tp + (uintptr_t)s->tp_delta);
		if (rec == 0)
			continue;
		uint8_t hdr[OTEL_RECORD_HEADER];
		atomic_fetch_add_explicit(&oc.reads, 1, memory_order_relaxed);
		if (rt_peek(hdr, rec, sizeof(hdr)) && accept(hdr, out))
			return true;
	}
	return false;
}

bool otel_context_read_thread(uintptr_t thread_pointer, struct otel_span *out)
{
	out->span_id = 0;
	uint32_t n = atomic_load_explicit(&oc.n, memory_order_acquire);
	if (n == 0 || thread_pointer == 0)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		const struct otel_site *s = &oc.sites[i];
		if (!atomic_load_explicit(&s->live, memory_order_relaxed))
			continue;
		uintptr_t slot = thread_pointer + (uintptr_t)s->tp_delta;
		uintptr_t rec = 0, again = 0;
		if (!rt_peek(&rec, slot, sizeof(rec)) || rec == 0)
			continue;
		uint8_t hdr[OTEL_RECORD_HEADER];
		void *dst[2] = { hdr, &again };
		uintptr_t src[2] = { rec, slot };
		size_t len[2] = { sizeof(hdr), sizeof(again) };
		atomic_fetch_add_explicit(&oc.reads, 1, memory_order_relaxed);
		/* The kernel copies the ranges in order: a pointer unchanged after
		 * the record means the record was not detached while we read it. */
		if (rt_peek_ranges(dst, src, len, 2) < 0 || again != rec)
			continue;
		if (accept(hdr, out))
			return true;
	}
	return false;
}

void otel_trace_id_hex(const uint8_t id[16], char out[33])
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < 16; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	out[32] = '\0';
}

void otel_context_stats(uint32_t *readable, uint32_t *dynamic, uint64_t *reads)
{
	uint32_t live = 0, n = atomic_load(&oc.n);
	for (uint32_t i = 0; i < n; i++)
		live += atomic_load(&oc.sites[i].live) ? 1u : 0u;
	*readable = live;
	*dynamic = oc.dynamic;
	*reads = atomic_load(&oc.reads);
}
