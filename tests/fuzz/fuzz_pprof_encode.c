/* Fuzz target: recorder + pprof encoder.  The input drives limits, stacks,
 * labels and values; the encoded profile is decoded by the protoc-c
 * generated decoder (independent of our writer) and must obey the pprof
 * rules, with per-type totals equal to what was added. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode/pprof.h"
#include "encode/pyroscope.h"
#include "profile.pb-c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct reader {
	const uint8_t *p;
	size_t n;
};

static uint8_t next(struct reader *r)
{
	if (!r->n)
		return 0;
	r->n--;
	return *r->p++;
}

/* pcs below 0x1000 are named in the "app" mapping (except every 5th),
 * below 0x2000 belong to an unnamed mapping, the rest are unknown. */
static bool resolve(void *ctx, uint64_t pc, struct sw_frame_info *out)
{
	static char names[256][8];
	(void)ctx;
	if (pc >= 0x2000)
		return false;
	out->map_start = pc < 0x1000 ? 0 : 0x1000;
	out->map_limit = pc < 0x1000 ? 0x1000 : 0x2000;
	out->map_path = pc < 0x1000 ? "app" : "lib";
	out->build_id = pc < 0x1000 ? "abcd" : "";
	if (pc < 0x1000 && (pc >> 4) % 5) {
		unsigned i = (unsigned)(pc >> 4) & 0xff;
		names[i][0] = 'f';
		names[i][1] = (char)('a' + i % 26);
		names[i][2] = (char)('a' + i / 26);
		names[i][3] = 0;
		out->function = names[i];
		out->file = (pc >> 4) % 2 ? "a.c" : NULL;
		out->line = (int64_t)(pc & 0xf);
	}
	return true;
}

static const char *const keys[] = {"thread id", "thread name", "state", "span id", "custom"};
static const char *const vals[] = {"", "a", "bb", "had cpu", "x y z"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader r = {data, size};
	struct profile_limits lim = {
		.max_samples = 1u + next(&r) % 64,
		.max_string_bytes = next(&r),
		.max_frames = 1u + next(&r) * 2u,
		.max_depth = 1u + next(&r) % 40,
	};
	uint32_t mask = ((uint32_t)next(&r) << 8 | next(&r)) & SW_V_ALL;
	if (!mask)
		mask = SW_V_BIT(SW_V_CPU_TIME);
	struct profile *p = profile_create(&lim);
	if (!p)
		return 0;
	int64_t expect[SW_V_COUNT] = {0};
	uint64_t pcs[64];
	while (r.n) {
		uint32_t depth = next(&r) % 64;
		for (uint32_t i = 0; i < depth; i++) {
			uint8_t b = next(&r);
			pcs[i] = b < 8 ? b : (uint64_t)b << 5;
		}
		struct sw_value v[3];
		uint32_t nv = 1 + next(&r) % 3;
		for (uint32_t i = 0; i < nv; i++) {
			v[i].slot = (enum sw_value_slot)(next(&r) % SW_V_COUNT);
			v[i].value = (int8_t)next(&r);
		}
		struct sw_label l[3];
		uint32_t nl = next(&r) % 4;
		for (uint32_t i = 0; i < nl; i++) {
			uint8_t b = next(&r);
			l[i].key = keys[b % 5];
			l[i].str = (b & 0x80) ? NULL : vals[(b >> 3) % 5];
			l[i].num = (int8_t)next(&r);
			l[i].num_unit = (b & 0x40) ? "bytes" : NULL;
		}
		struct sw_sample s = {pcs, depth, v, nv, l, nl};
		if (profile_add(p, &s) == PROFILE_ADD_INVALID)
			abort();
		for (uint32_t i = 0; i < nv; i++)
			expect[v[i].slot] += v[i].value;
	}
	struct pprof_opts o = {.period_slot = PPROF_NO_SLOT, .default_slot = PPROF_NO_SLOT, .period = 7};
	struct rt_buf b = {0};
	if (pprof_encode(p, mask, &o, resolve, NULL, &b) != 0)
		abort();
	Perftools__Profiles__Profile *pr = perftools__profiles__profile__unpack(NULL, b.len, b.data);
	if (!pr || pr->n_string_table < 1 || pr->string_table[0][0] != 0)
		abort();
	size_t n_types = (size_t)__builtin_popcount(mask);
	if (pr->n_sample_type != n_types)
		abort();
	int64_t got[SW_V_COUNT] = {0};
	for (size_t i = 0; i < pr->n_sample; i++) {
		const Perftools__Profiles__Sample *s = pr->sample[i];
		if (s->n_value != n_types)
			abort();
		for (size_t k = 0; k < s->n_location_id; k++)
			if (s->location_id[k] == 0 || s->location_id[k] > pr->n_location ||
			    pr->location[s->location_id[k] - 1]->id != s->location_id[k])
				abort();
		for (size_t k = 0; k < s->n_label; k++)
			if ((size_t)s->label[k]->key >= pr->n_string_table ||
			    (size_t)s->label[k]->str >= pr->n_string_table ||
			    (s->label[k]->str && s->label[k]->num))
				abort();
		size_t col = 0;
		for (uint32_t slot = 0; slot < SW_V_COUNT; slot++)
			if (mask & SW_V_BIT(slot))
				got[slot] += s->value[col++];
	}
	for (size_t i = 0; i < pr->n_location; i++) {
		const Perftools__Profiles__Location *l = pr->location[i];
		if (l->mapping_id > pr->n_mapping)
			abort();
		for (size_t k = 0; k < l->n_line; k++)
			if (l->line[k]->function_id == 0 || l->line[k]->function_id > pr->n_function)
				abort();
	}
	for (uint32_t slot = 0; slot < SW_V_COUNT; slot++)
		if ((mask & SW_V_BIT(slot)) && got[slot] != expect[slot])
			abort();
	perftools__profiles__profile__free_unpacked(pr, NULL);
	rt_buf_free(&b);

	/* Pyroscope's view of each kind: merged and trimmed to tiny limits, the
	 * totals of its slots are kept, only string labels with names of
	 * [A-Za-z0-9_], never more samples than the limit. */
	struct pyro_limits plim = {.max_samples = 2u + (uint32_t)(size % 7), .max_bytes = 1u << 20,
				   .max_sample_labels = 1u + (uint32_t)(size % 3)};
	for (unsigned k = 0; k < SW_KIND_COUNT; k++) {
		struct pprof_opts ko;
		pprof_opts_for_kind(&ko, (enum sw_kind)k, 7);
		struct pyro_output out[PYRO_MAX_OUTPUTS];
		int n = pyro_encode_kind(p, (enum sw_kind)k, &ko, &plim, resolve, NULL, out);
		if (n < 0 || n > PYRO_MAX_OUTPUTS)
			abort();
		for (int i = 0; i < n; i++) {
			Perftools__Profiles__Profile *q =
				perftools__profiles__profile__unpack(NULL, out[i].raw.len, out[i].raw.data);
			/* (values here may cancel out to an empty profile) */
			if (!q || q->n_sample > plim.max_samples)
				abort();
			for (size_t t = 0; t < q->n_sample_type; t++)
				if (strchr(q->string_table[q->sample_type[t]->type], '-'))
					abort();
			for (size_t j = 0; j < q->n_sample; j++)
				for (size_t m = 0; m < q->sample[j]->n_label; m++) {
					const Perftools__Profiles__Label *l = q->sample[j]->label[m];
					const char *key = q->string_table[l->key];
					if (l->num || l->str == 0 || !key[0] || (key[0] >= '0' && key[0] <= '9'))
						abort();
					for (const char *c = key; *c; c++)
						if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
						      (*c >= '0' && *c <= '9') || *c == '_'))
							abort();
				}
			perftools__profiles__profile__free_unpacked(q, NULL);
			rt_buf_free(&out[i].raw);
		}
	}
	profile_release(p);
	return 0;
}
