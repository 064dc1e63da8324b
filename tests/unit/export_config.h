/* A configuration with quotes, commas and backslashes in its names, shared
 * by the exporter format tests (test_datadog, test_pyroscope). */
#ifndef STOWAWAY_TEST_EXPORT_CONFIG_H
#define STOWAWAY_TEST_EXPORT_CONFIG_H

#include <string.h>

#include "config/config.h"

static void fill_cfg(struct sw_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	strcpy(cfg->service, "my\"svc,x");
	strcpy(cfg->env, "prod");
	strcpy(cfg->version, "");
	strcpy(cfg->tags, "team:a,k:v\\w,env:dup,service:dup,version:kept");
	cfg->cpu_hz = 100;
}

#endif
