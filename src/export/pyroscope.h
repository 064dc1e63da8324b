/* Pieces of the Pyroscope exporter shared with tests (the exporter itself
 * is export_pyroscope_create in export.h). */
#ifndef STOWAWAY_EXPORT_PYROSCOPE_H
#define STOWAWAY_EXPORT_PYROSCOPE_H

#include <stdint.h>

#include "config/config.h"
#include "rt/rt.h"

/* "<prefix>/ingest?name=<service>{env=..,version=..,k=v}&from=..&until=..
 * &format=pprof&spyName=stowaway" (URL-encoded), plus "&sampleRate=<hz>"
 * for CPU profiles.  The service keeps Pyroscope's name characters
 * [A-Za-z0-9_.-/], label keys [A-Za-z0-9_] (encode/pyroscope.h), values
 * [A-Za-z0-9_.-/:]; other bytes become '_' so the name stays parseable.
 * DD_TAGS entries named env or version give way to DD_ENV/DD_VERSION. */
void export_pyroscope_target(const struct sw_config *cfg, const char *path_prefix,
			     enum sw_kind kind, uint64_t start_ns, uint64_t end_ns,
			     struct rt_buf *out);

#endif
