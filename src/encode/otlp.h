/* OTLP profiles (opentelemetry-proto v1.11.0,
 * opentelemetry/proto/profiles/v1development/profiles.proto and
 * collector/profiles/v1development/profiles_service.proto): our pprof
 * profiles translated into one ExportProfilesServiceRequest.
 *
 * The translation reads the uncompressed pprof our own encoder wrote for
 * each kind (so symbols, mappings and inlined lines are exactly those of the
 * pprof files) and builds the shared ProfilesDictionary: every string,
 * mapping, function, location, stack, attribute and link is stored once
 * (deduplicated by its encoded bytes), with the zero value at index 0 of
 * every table as the format requires.  Each pprof sample type becomes one
 * OTLP Profile (an OTLP profile has a single sample type); samples whose
 * value is zero are left out.  Labels become attributes ("thread id" and
 * "thread name" under the semantic-convention keys thread.id and
 * thread.name); a sample with a `span id` number and a 32-hex-digit
 * `trace_id` string gets a Link instead of those two attributes.
 *
 * Not signal-safe; allocates with rt_malloc. */
#ifndef STOWAWAY_ENCODE_OTLP_H
#define STOWAWAY_ENCODE_OTLP_H

#include "rt/rt.h"

/* The development-version header value the schema above corresponds to
 * (OTLP-Profiles-Development-Version; missing means 1). */
#define OTLP_PROFILES_DEVELOPMENT_VERSION "1"

struct otlp_encoder;

struct otlp_encoder *otlp_encoder_create(void);
void otlp_encoder_destroy(struct otlp_encoder *e);

/* Adds the profiles of one uncompressed pprof.  0, -EINVAL (not a pprof
 * this translation understands: nothing of it is added) or -ENOMEM. */
int otlp_add_pprof(struct otlp_encoder *e, const uint8_t *pprof, size_t len);

/* A resource attribute (string value). */
struct otlp_attribute {
	const char *key;
	const char *value;
};

/* The whole ExportProfilesServiceRequest into out: one ResourceProfiles
 * with these resource attributes and one ScopeProfiles (scope "stowaway",
 * `version`) holding every profile added, and the dictionary.  0 or
 * -ENOMEM. */
int otlp_encode_request(struct otlp_encoder *e, const struct otlp_attribute *resource, uint32_t n,
			const char *version, struct rt_buf *out);

/* Profiles added so far. */
uint32_t otlp_profile_count(const struct otlp_encoder *e);

#endif
