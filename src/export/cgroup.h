/* The container id and entity id of this process, from /proc/self/cgroup,
 * for the Datadog-Container-ID and Datadog-Entity-ID headers (the agent
 * uses them to tag profiles), as libdatadog (libdd-common entity_id)
 * computes them. */
#ifndef STOWAWAY_EXPORT_CGROUP_H
#define STOWAWAY_EXPORT_CGROUP_H

#include <stdbool.h>
#include <stddef.h>

#define EXPORT_CONTAINER_ID_MAX 65 /* 64 hex digits + NUL */

/* Parses /proc/self/cgroup text (cgroup v1 "ID:controllers:/path" lines and
 * the v2 "0::/path" line).  Recognises, as the last path component, a
 * 64-hex-digit id (bare or in runtime scopes such as "docker-<id>.scope",
 * "cri-containerd-<id>.scope", "crio-<id>.scope", "libpod-<id>.scope"), a
 * UUID (Fargate), the Cloud Foundry "8-4-4-4-4" hex form and the ECS
 * "<32 hex>-<digits>" form; a 64-hex id wins
 * over the others when several lines name one.  Pod slices
 * ("...-pod<uuid>.slice") are not containers and never match.
 * Writes the id into out (cap >= EXPORT_CONTAINER_ID_MAX); false if none. */
bool export_container_id_parse(const char *text, size_t n, char *out, size_t cap);

/* Reads cgroup_file (NULL or "": /proc/self/cgroup); false when not in a
 * container (or unreadable). */
bool export_container_id_read(const char *cgroup_file, char *out, size_t cap);

/* The cgroup directory of this process relative to the cgroup mount:
 * "memory/<path>" from the v1 memory controller's line (which wins), else
 * "<path>" from the v2 "0::" line.  false when neither is present or the
 * result would not fit in cap. */
bool export_cgroup_node_path(const char *text, size_t n, char *out, size_t cap);

#define EXPORT_HOST_CGROUP_NS_INODE 0xEFFFFFFBu
#define EXPORT_ENTITY_ID_MAX 80

/* "ci-<container id>", else (outside the host's cgroup namespace)
 * "in-<inode of the process's cgroup directory under cgroup_mount>"
 * (NULL or "": /sys/fs/cgroup).  false when neither is known. */
bool export_entity_id_read(const char *cgroup_file, const char *cgroup_mount, char *out,
			   size_t cap);

#endif
