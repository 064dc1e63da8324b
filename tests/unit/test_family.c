/* A fork family's inbox (profile/family.h): a child's samples reach the
 * parent's recorder with their stacks, values and labels, but for the
 * values left out of the mask and the labels that would keep every child
 * apart (thread id, timestamp), and the parent stamps no timestamp of its
 * own on them; samples that need several slots go over in one group, and
 * too many for a group are refused with nothing left claimed; a full
 * inbox and a closed one refuse; the parser refuses
 * every truncation of a valid payload and garbage without reading outside
 * it. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "profile/family.h"
#include "profile/profile.h"
#include "unit/check.h"

static const uint64_t PCS_A[3] = { 0x401000, 0x402000, 0x403000 };
static const uint64_t PCS_B[2] = { 0x501000, 0x502000 };

/* Two samples: A with CPU and heap values, the thread's id, a string label
 * and (a timeline slot) its end_timestamp_ns; B with an allocation and the
 * thread's id. */
static struct profile *child_profile(void)
{
	struct profile_limits lim = { .timeline_slots = SW_V_BIT(SW_V_CPU_SAMPLES) | SW_V_BIT(SW_V_CPU_TIME),
				      .max_timeline_samples = 100 };
	struct profile *p = profile_create(&lim);
	struct sw_value va[3] = { { SW_V_CPU_SAMPLES, 2 }, { SW_V_CPU_TIME, 20000000 },
				  { SW_V_HEAP_LIVE_SIZE, 4096 } };
	struct sw_label la[2] = { { SW_LABEL_THREAD_ID, NULL, 4242, NULL }, { "role", "worker", 0, NULL } };
	struct sw_sample a = { PCS_A, 3, va, 3, la, 2 };
	struct sw_value vb[2] = { { SW_V_ALLOC_SAMPLES, 1 }, { SW_V_ALLOC_SPACE, 524288 } };
	struct sw_label lb[1] = { { SW_LABEL_THREAD_ID, NULL, 4242, NULL } };
	struct sw_sample b = { PCS_B, 2, vb, 2, lb, 1 };
	if (p == NULL || profile_add(p, &a) != PROFILE_ADD_OK || profile_add(p, &b) != PROFILE_ADD_OK)
		return NULL;
	return p;
}

static uint32_t deliverable(void)
{
	return sw_kind_value_mask(SW_KIND_CPU) | sw_kind_value_mask(SW_KIND_ALLOC);
}

/* Forks a child that delivers `times` times; returns how many it did. */
static int child_delivers(int times)
{
	int fds[2];
	if (pipe(fds) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		family_after_fork_child();
		struct profile *p = child_profile();
		int done = 0;
		for (int i = 0; i < times && p != NULL; i++)
			done += family_deliver(p, deliverable()) == FAMILY_HANDED ? 1 : 0;
		_exit(write(fds[1], &done, sizeof(done)) == (ssize_t)sizeof(done) ? 0 : 1);
	}
	close(fds[1]);
	int done = -1, st = 0;
	if (read(fds[0], &done, sizeof(done)) != (ssize_t)sizeof(done))
		done = -1;
	close(fds[0]);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -1;
	return done;
}

static const char *label_string(const struct profile *p, uint32_t id)
{
	uint32_t len = 0;
	const char *s = profile_string(p, id, &len);
	return s ? s : "";
}

static void test_round_trip(void)
{
	struct profile_limits lim = { .timeline_slots = SW_V_BIT(SW_V_CPU_SAMPLES) | SW_V_BIT(SW_V_CPU_TIME),
				      .max_timeline_samples = 100 };
	struct recorder *rec = recorder_create(&lim);
	CHECK(rec != NULL && family_open());
	CHECK(child_delivers(1) == 1);
	CHECK(family_drain(rec) == 1);
	CHECK(family_drain(rec) == 0);
	struct profile *got = recorder_swap(rec);
	CHECK(got != NULL && profile_sample_count(got) == 2);
	bool seen_a = false, seen_b = false;
	for (uint32_t i = 0; got != NULL && i < profile_sample_count(got); i++) {
		struct profile_sample_view v;
		CHECK(profile_sample_get(got, i, &v));
		CHECK(v.values[SW_V_HEAP_LIVE_SIZE] == 0); /* not in the mask */
		uint32_t timestamps = 0, tid = 0, role = 0;
		for (uint32_t k = 0; k < v.n_labels; k++) {
			const char *key = label_string(got, v.labels[k].key);
			timestamps += strcmp(key, SW_LABEL_END_TIMESTAMP) == 0;
			tid += strcmp(key, SW_LABEL_THREAD_ID) == 0 && v.labels[k].is_num && v.labels[k].num == 4242;
			role += strcmp(key, "role") == 0 && strcmp(label_string(got, v.labels[k].str), "worker") == 0;
		}
		if (v.depth == 3 && memcmp(v.pcs, PCS_A, sizeof(PCS_A)) == 0) {
			seen_a = true;
			CHECK(v.values[SW_V_CPU_SAMPLES] == 2 && v.values[SW_V_CPU_TIME] == 20000000);
			CHECK(timestamps == 0 && tid == 0 && role == 1 && v.n_labels == 1);
		} else if (v.depth == 2 && memcmp(v.pcs, PCS_B, sizeof(PCS_B)) == 0) {
			seen_b = true;
			CHECK(v.values[SW_V_ALLOC_SPACE] == 524288 && v.values[SW_V_ALLOC_SAMPLES] == 1);
			CHECK(timestamps == 0 && tid == 0 && v.n_labels == 0);
		}
	}
	CHECK(seen_a && seen_b);
	struct family_stats fs;
	family_get_stats(&fs);
	CHECK(fs.drained == 1 && fs.drained_samples == 2 && fs.malformed == 0);
	profile_release(got);
	recorder_destroy(rec);
}

/* A child whose samples need several slots: n samples of distinct 20-frame
 * stacks, each with one allocation of i + 1 bytes.  1: handed over, 0:
 * refused as too big, -1: anything else. */
static int child_delivers_many(uint32_t n)
{
	pid_t pid = fork();
	if (pid == 0) {
		family_after_fork_child();
		struct profile *p = profile_create(&(struct profile_limits){ 0 });
		for (uint32_t i = 0; i < n && p != NULL; i++) {
			uint64_t pcs[20];
			for (uint32_t d = 0; d < 20; d++)
				pcs[d] = 0x600000u + i * 0x100u + d;
			struct sw_value v[2] = { { SW_V_ALLOC_SAMPLES, 1 }, { SW_V_ALLOC_SPACE, (int64_t)i + 1 } };
			struct sw_sample smp = { pcs, 20, v, 2, NULL, 0 };
			if (profile_add(p, &smp) != PROFILE_ADD_OK)
				_exit(2);
		}
		enum family_result r = p != NULL ? family_deliver(p, deliverable()) : FAMILY_NO_INBOX;
		_exit(r == FAMILY_HANDED ? 0 : r == FAMILY_TOO_BIG ? 1 : 3);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st) == 0 ? 1 : WEXITSTATUS(st) == 1 ? 0 : -1;
}

/* 200 samples of about 190 bytes take five slots, handed over at once:
 * the parent adds every sample with its value; 1000 do not fit eight
 * slots: refused, with every slot it claimed given back. */
static void test_group(void)
{
	struct recorder *rec = recorder_create(&(struct profile_limits){ 0 });
	CHECK(rec != NULL && family_open());
	CHECK(child_delivers_many(200) == 1);
	uint32_t slots = family_drain(rec);
	CHECK(slots >= 4 && slots <= FAMILY_GROUP_SLOTS);
	struct profile *got = recorder_swap(rec);
	CHECK(got != NULL && profile_sample_count(got) == 200);
	int64_t bytes = 0;
	for (uint32_t i = 0; got != NULL && i < profile_sample_count(got); i++) {
		struct profile_sample_view v;
		CHECK(profile_sample_get(got, i, &v) && v.depth == 20);
		bytes += v.values[SW_V_ALLOC_SPACE];
	}
	CHECK(bytes == 200 * 201 / 2);
	profile_release(got);
	CHECK(child_delivers_many(1000) == 0);
	CHECK(family_drain(rec) == 0);
	/* Nothing left claimed: the whole inbox still takes single slots. */
	CHECK(child_delivers((int)FAMILY_SLOTS) == (int)FAMILY_SLOTS);
	CHECK(family_drain(rec) == FAMILY_SLOTS);
	struct family_stats fs;
	family_get_stats(&fs);
	CHECK(fs.malformed == 0 && fs.abandoned == 0);
	recorder_destroy(rec);
}

/* FAMILY_SLOTS deliveries fill the inbox; the next is refused; a drain
 * frees them all. */
static void test_full_then_drained(void)
{
	struct recorder *rec = recorder_create(&(struct profile_limits){ 0 });
	CHECK(rec != NULL && family_open());
	CHECK(child_delivers((int)FAMILY_SLOTS + 1) == (int)FAMILY_SLOTS);
	CHECK(family_drain(rec) == FAMILY_SLOTS);
	CHECK(child_delivers(1) == 1);
	CHECK(family_drain(rec) == 1);
	recorder_destroy(rec);
}

/* Every proper prefix of a valid payload, and bytes flipped in it, are
 * refused or parsed without reading outside the buffer (ASan build). */
static void test_parser_refuses_truncation(void)
{
	struct recorder *rec = recorder_create(&(struct profile_limits){ 0 });
	CHECK(rec != NULL && family_open());
	/* A valid payload: a child delivers, the parent reads the slot through
	 * the drain once; here the same bytes are rebuilt by hand. */
	uint8_t buf[256];
	uint32_t n = 0, depth = 2, labels = 1, mask = SW_V_BIT(SW_V_ALLOC_SPACE);
	int64_t value = 100, num = 7;
	memcpy(buf + n, &depth, 4), n += 4;
	memcpy(buf + n, &labels, 4), n += 4;
	memcpy(buf + n, &mask, 4), n += 4;
	memcpy(buf + n, &value, 8), n += 8;
	memcpy(buf + n, PCS_B, 16), n += 16;
	buf[n++] = 1;
	uint32_t key_len = 9, unit_len = 0;
	memcpy(buf + n, &key_len, 4), n += 4;
	memcpy(buf + n, "thread id", 10), n += 10;
	memcpy(buf + n, &num, 8), n += 8;
	memcpy(buf + n, &unit_len, 4), n += 4;
	buf[n++] = 0;
	uint64_t samples = 0;
	CHECK(family_parse_record(rec, buf, n, 1, &samples) && samples == 1);
	uint32_t refused = 0;
	for (uint32_t len = 0; len < n; len++) {
		uint8_t *copy = malloc(len ? len : 1);
		memcpy(copy, buf, len);
		samples = 0;
		refused += !family_parse_record(rec, copy, len, 1, &samples);
		free(copy);
	}
	CHECK(refused == n);
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *copy = malloc(n);
		memcpy(copy, buf, n);
		copy[i] ^= 0xff;
		(void)family_parse_record(rec, copy, n, 1, &samples);
		free(copy);
	}
	recorder_destroy(rec);
}

/* After the owner's close, a child's delivery is refused (it then exports
 * itself). */
static void test_closed_refuses(void)
{
	struct recorder *rec = recorder_create(&(struct profile_limits){ 0 });
	CHECK(rec != NULL && family_open());
	family_close(rec, 0);
	CHECK(child_delivers(1) == 0);
	recorder_destroy(rec);
}

int main(void)
{
	RUN(test_round_trip);
	RUN(test_full_then_drained);
	RUN(test_group);
	RUN(test_parser_refuses_truncation);
	RUN(test_closed_refuses); /* last: the inbox stays closed */
	return CHECK_DONE();
}
