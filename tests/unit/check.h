/* A minimal unit-test harness: each TEST prints "PASS name" or "FAIL name". */
#ifndef STOWAWAY_TEST_CHECK_H
#define STOWAWAY_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static int check_failures_in_test;
static int check_total_failed;
static int check_total_passed;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, \
				__LINE__, #cond);                              \
			check_failures_in_test++;                              \
		}                                                              \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                     \
	do {                                                                   \
		unsigned long long check_a_ = (unsigned long long)(a);         \
		unsigned long long check_b_ = (unsigned long long)(b);         \
		if (check_a_ != check_b_) {                                    \
			fprintf(stderr, "  %s:%d: %s == %s failed: %llu != %llu\n", \
				__FILE__, __LINE__, #a, #b, check_a_, check_b_); \
			check_failures_in_test++;                              \
		}                                                              \
	} while (0)

#define RUN(fn)                                                                \
	do {                                                                   \
		check_failures_in_test = 0;                                    \
		fn();                                                          \
		if (check_failures_in_test) {                                  \
			printf("FAIL %s\n", #fn);                              \
			check_total_failed++;                                  \
		} else {                                                       \
			printf("PASS %s\n", #fn);                              \
			check_total_passed++;                                  \
		}                                                              \
		fflush(stdout);                                                \
	} while (0)

#define CHECK_DONE() (check_total_failed ? 1 : 0)

#endif
