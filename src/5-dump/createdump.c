/* Which createdump the exec path runs: the operator's (--createdump), or the
 * host runtime's of exactly the version the target reports, found in the
 * usual installation places and trusted only when root alone can change it;
 * see dump.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dumpwatch/dump.h"
#include "dumpwatch/trust.h"

int dump_version_ok(const char *v)
{
	size_t n;

	if (!v || !(v[0] >= '0' && v[0] <= '9') || strstr(v, ".."))
		return 0;
	for (n = 0; v[n]; n++) {
		char c = v[n];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' ||
		      c == '-' || c == '+'))
			return 0;
		if (n >= 63)
			return 0;
	}
	return 1;
}

/* The places a host's .NET runtime is installed (Microsoft's packages and
 * tarballs, distributions' packages): DOTNET_ROOT and the dotnet on our PATH
 * are looked at first. */
static const char *const host_dotnet_roots[] = {
    "/usr/share/dotnet", "/usr/lib/dotnet", "/usr/lib64/dotnet", "/usr/local/share/dotnet", "/opt/dotnet",
};

/* The directory of the dotnet found on PATH, resolved, into out ("" when none). */
static void dotnet_on_path(char *out, size_t outlen)
{
	const char *path = getenv("PATH");
	char cand[PATH_MAX], real[PATH_MAX];

	out[0] = '\0';
	while (path && *path) {
		size_t n = strcspn(path, ":");
		if (n > 0 && path[0] == '/' &&
		    snprintf(cand, sizeof(cand), "%.*s/dotnet", (int)n, path) < (int)sizeof(cand) &&
		    access(cand, X_OK) == 0 && realpath(cand, real)) {
			char *slash = strrchr(real, '/');
			if (slash) {
				*slash = '\0';
				snprintf(out, outlen, "%s", real);
			}
			return;
		}
		path += n;
		if (*path == ':')
			path++;
	}
}

int dump_find_createdump(const char *runtime_version, const char *configured, char *out, size_t outlen, char *err,
                         size_t errlen)
{
	char version[64], on_path[PATH_MAX], looked[1024] = "", first_err[512] = "";
	const char *roots[8];
	size_t n_roots = 0, used = 0;
	int unsafe = 0;

	if (configured && configured[0])
		return trust_exec_path(configured, "createdump", out, outlen, err, errlen);
	if (!runtime_version || !runtime_version[0]) {
		snprintf(err, errlen,
		         "the runtime did not report its version, so no createdump of the host can be matched to it: "
		         "pass --createdump PATH, or use the runtime's dump command (--dump-via runtime)");
		return -ENOENT;
	}
	/* "10.0.12+abcdef" names the directory "10.0.12". */
	snprintf(version, sizeof(version), "%.*s", (int)strcspn(runtime_version, "+"), runtime_version);
	if (!dump_version_ok(version)) {
		snprintf(err, errlen,
		         "the runtime reported a version that names no runtime directory: pass --createdump PATH, "
		         "or use the runtime's dump command (--dump-via runtime)");
		return -EINVAL;
	}
	const char *env_root = getenv("DOTNET_ROOT");
	if (env_root && env_root[0] == '/')
		roots[n_roots++] = env_root;
	dotnet_on_path(on_path, sizeof(on_path));
	if (on_path[0])
		roots[n_roots++] = on_path;
	for (size_t i = 0; i < sizeof(host_dotnet_roots) / sizeof(host_dotnet_roots[0]); i++)
		roots[n_roots++] = host_dotnet_roots[i];
	for (size_t i = 0; i < n_roots; i++) {
		char cand[PATH_MAX];
		struct stat st;
		int again = 0;

		/* The dotnet on PATH or DOTNET_ROOT is often one of the usual
		 * places: look, and say so, once. */
		for (size_t j = 0; j < i; j++)
			again |= strcmp(roots[j], roots[i]) == 0;
		if (again)
			continue;
		if (snprintf(cand, sizeof(cand), "%s/shared/Microsoft.NETCore.App/%s/createdump", roots[i], version) >=
		    (int)sizeof(cand))
			continue;
		if (used < sizeof(looked))
			used +=
			    (size_t)snprintf(looked + used, sizeof(looked) - used, "%s%s", used ? ", " : "", roots[i]);
		if (stat(cand, &st) < 0)
			continue;
		/* Found: it must be safe, or the next place is tried. */
		char why[512];
		int r = trust_exec_path(cand, "createdump", out, outlen, why, sizeof(why));
		if (r == 0)
			return 0;
		if (!unsafe) {
			unsafe = r;
			snprintf(first_err, sizeof(first_err), "%s", why);
		}
	}
	if (unsafe) {
		snprintf(err, errlen,
		         "%s; install the .NET %s runtime where only root can change it, or pass --createdump PATH",
		         first_err, version);
		return unsafe;
	}
	snprintf(err, errlen,
	         "no createdump of .NET %s on this host (looked in %s): install the .NET %s runtime, pass "
	         "--createdump PATH, or use the runtime's dump command (--dump-via runtime)",
	         version, looked, version);
	return -ENOENT;
}
