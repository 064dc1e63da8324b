/* The container id of this process, from /proc/self/cgroup, for the
 * Datadog-Container-ID header (the agent uses it to tag profiles). */
#ifndef STOWAWAY_EXPORT_CGROUP_H
#define STOWAWAY_EXPORT_CGROUP_H

#include <stdbool.h>
#include <stddef.h>

#define EXPORT_CONTAINER_ID_MAX 65 /* 64 hex digits + NUL */

/* Parses /proc/self/cgroup text (cgroup v1 "ID:controllers:/path" lines and
 * the v2 "0::/path" line).  Recognises, as the last path component, a
 * 64-hex-digit id (bare or in runtime scopes such as "docker-<id>.scope",
 * "cri-containerd-<id>.scope", "crio-<id>.scope", "libpod-<id>.scope"), a
 * UUID (Fargate) and the ECS "<32 hex>-<digits>" form; a 64-hex id wins
 * over the others when several lines name one.  Pod slices
 * ("...-pod<uuid>.slice") are not containers and never match.
 * Writes the id into out (cap >= EXPORT_CONTAINER_ID_MAX); false if none. */
bool export_container_id_parse(const char *text, size_t n, char *out, size_t cap);

/* Reads /proc/self/cgroup; false when not in a container (or unreadable). */
bool export_container_id_read(char *out, size_t cap);

#endif
