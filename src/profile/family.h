/* A fork family's inbox: the samples a forked child recorded in its last
 * period, handed to its parent at the child's exit instead of being named,
 * encoded, compressed and written by the child itself.
 *
 * A process opens its inbox before its first fork (family_open): shared
 * anonymous pages its children inherit.  A child at its exit copies its
 * profile's samples into free slots, as many as they need, and commits
 * them as one group (family_deliver): the group's first slot, its head,
 * is committed last and names the others, so the parent takes all of a
 * group or none of it; the parent's
 * sampler thread moves delivered slots into its recorder (family_drain), so
 * they go out with the parent's own next export, under the parent's name.
 * They aggregate there by stack and labels: a child's thread id and its
 * samples' timestamps are left out, or a server forking a process per
 * connection would fill the parent's profile with one sample per
 * connection and stack.  A server that
 * forks a process per connection (postgres without a pooler) then pays one
 * export per period, not one per connection, and its profile directory
 * holds the profile of its work rather than a few seconds of single-child
 * files.
 *
 * Every step can refuse, and a refusal means the child exports itself as
 * before: no inbox, a parent that is not the one that opened it (the child
 * was reparented), a closed inbox (the parent is exporting for the last
 * time), too few free slots, samples that do not fit FAMILY_GROUP_SLOTS
 * slots (every slot claimed is then given back).  The parent
 * trusts nothing in a slot: it copies the slot out, checks every length,
 * and drops a malformed group whole (counted).  A slot claimed by a child
 * that died before committing is reclaimed after FAMILY_ABANDON_NS (a
 * group's later slot only once its head is gone); the child's late
 * commit then fails and it exports itself.
 *
 * Live-heap values are not delivered: an exited child holds no memory. */
#ifndef STOWAWAY_PROFILE_FAMILY_H
#define STOWAWAY_PROFILE_FAMILY_H

#include "profile/profile.h"
#include "rt/rt.h"

#define FAMILY_SLOTS 256u
#define FAMILY_SLOT_BYTES 8192u
/* A child's samples take as many slots as they need, up to this many,
 * handed over all at once or not at all. */
#define FAMILY_GROUP_SLOTS 8u
#define FAMILY_ABANDON_NS (2 * RT_NS_PER_SEC)

/* This process's inbox for the children it forks from now on: made once
 * (later calls return the same answer); false when shared pages could not
 * be had.  Before fork, on the forking thread. */
bool family_open(void);
/* In a fork child: the inbox inherited from the parent becomes the one it
 * delivers to (if the parent opened one); it has none of its own until it
 * forks itself. */
void family_after_fork_child(void);
/* Whether a delivery could be accepted now (an inbox opened by this
 * process's parent, which is still its parent, and not closed). */
bool family_can_deliver(void);
/* What a delivery came to: handed over, or why the caller must export its
 * samples itself. */
enum family_result {
	FAMILY_HANDED,
	FAMILY_NO_INBOX,   /* none, not the parent's, or closed */
	FAMILY_NO_SLOT,    /* too few free slots */
	FAMILY_TOO_BIG,    /* more than FAMILY_GROUP_SLOTS slots hold */
	FAMILY_TOO_SLOW,   /* a slot was reclaimed before the commit */
	FAMILY_CLOSED,     /* the inbox closed before the parent took them */
};
/* The result's reason in words ("" for FAMILY_HANDED). */
const char *family_result_text(enum family_result r);
/* Copies the samples of p (their values in value_mask; others are left
 * out) into free slots of the parent's inbox, committed as one group. */
enum family_result family_deliver(const struct profile *p, uint32_t value_mask);
/* The owner: adds every committed group's samples to rec; returns how
 * many slots it took.  Any thread; calls are serialized. */
uint32_t family_drain(struct recorder *rec);
/* The owner's last export: no delivery is accepted from now on, those in
 * progress are waited for (at most wait_ns) and everything delivered is
 * drained into rec. */
void family_close(struct recorder *rec, uint64_t wait_ns);

/* The drain's parser of one slot's payload (n_samples samples, len bytes,
 * as family_deliver writes them): adds them to rec, counting them in
 * *samples; false when the payload is malformed (the samples before the
 * fault are added).  Never reads outside data.  Single-threaded (it uses
 * one static stack buffer); the drain holds its lock. */
bool family_parse_record(struct recorder *rec, const uint8_t *data, uint32_t len, uint32_t n_samples,
			 uint64_t *samples);
/* Before this process execs itself (not a vfork child's exec): the
 * inbox is closed, since the image that drains it is about to go. */
void family_before_exec(void);

struct family_stats {
	uint64_t delivered;       /* deliveries this process made (as a child) */
	uint64_t refused;         /* deliveries it could not make */
	uint64_t groups;          /* children's deliveries it took whole (as a parent) */
	uint64_t drained;         /* slots it took */
	uint64_t drained_samples; /* samples they held */
	uint64_t malformed;       /* deliveries dropped by the checks, whole or in part */
	uint64_t abandoned;       /* slots reclaimed from children that never finished */
};
void family_get_stats(struct family_stats *out);

#endif
