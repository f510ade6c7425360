/* cgroup_parse against the layouts of docker, containerd, CRI-O and podman
 * under the systemd and cgroupfs drivers, cgroup v1 and v2, a host process,
 * and hostile or broken lines. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "dumpwatch/cgroup.h"

#define ID "3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899"
#define ID2 "aaaa5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899"
#define UID "9a8b7c6d-1234-4f00-8e1a-0123456789ab"
#define UID_ "9a8b7c6d_1234_4f00_8e1a_0123456789ab"

static int parse(const char *text, struct cgroup_ident *id)
{
	return cgroup_parse(text, strlen(text), id);
}

static void test_layouts(void)
{
	struct cgroup_ident c;

	CHECK(parse("0::/system.slice/docker-" ID ".scope\n", &c) == 1);
	CHECK_STR(c.container, ID);
	CHECK_STR(c.pod, "");

	parse("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/cri-containerd-" ID
	      ".scope\n",
	      &c);
	CHECK_STR(c.container, ID);
	CHECK_STR(c.pod, UID);

	/* Guaranteed QoS has no class in its slice name. */
	parse("0::/kubepods.slice/kubepods-pod" UID_ ".slice/crio-" ID ".scope\n", &c);
	CHECK_STR(c.container, ID);
	CHECK_STR(c.pod, UID);

	parse("0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope/container\n", &c);
	CHECK_STR(c.container, ID);

	/* cgroup v1, cgroupfs driver: every controller line carries the path. */
	parse("12:pids:/docker/" ID "\n11:memory:/docker/" ID "\n0::/system.slice/containerd.service\n", &c);
	CHECK_STR(c.container, ID);
	CHECK_STR(c.pod, "");

	parse("11:memory:/kubepods/besteffort/pod" UID "/" ID "\n1:name=systemd:/kubepods/besteffort/pod" UID "/" ID
	      "\n",
	      &c);
	CHECK_STR(c.container, ID);
	CHECK_STR(c.pod, UID);

	/* No newline at the end; guaranteed QoS under cgroupfs. */
	parse("0::/kubepods/pod" UID "/" ID, &c);
	CHECK_STR(c.pod, UID);
	CHECK_STR(c.container, ID);

	/* The pod's slice alone (no container scope): the pod is known. */
	CHECK(parse("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice\n", &c) == 1);
	CHECK_STR(c.pod, UID);
	CHECK_STR(c.container, "");

	/* Docker in docker: the innermost container. */
	parse("0::/docker/" ID "/docker/" ID2 "\n", &c);
	CHECK_STR(c.container, ID2);
}

static void test_host(void)
{
	struct cgroup_ident c;

	CHECK(parse("0::/user.slice/user-1000.slice/session-3.scope\n", &c) == 0);
	CHECK_STR(c.container, "");
	CHECK_STR(c.pod, "");
	CHECK(parse("0::/\n", &c) == 0);
	CHECK(parse("0::/system.slice/containerd.service\n", &c) == 0);
	/* conmon runs beside a CRI-O container, not in it. */
	CHECK(parse("0::/machine.slice/crio-conmon-" ID ".scope\n", &c) == 0);
	CHECK(parse("", &c) == 0);
	/* A pod-looking component outside kubepods is somebody's name. */
	CHECK(parse("0::/user.slice/pod" UID "\n", &c) == 0);
}

static void test_hostile(void)
{
	struct cgroup_ident c;

	/* Upper case, one digit short, one too many, a quote inside. */
	CHECK(parse("0::/docker/3F4E5D6C7B8A99887766554433221100FFEEDDCCBBAA00112233445566778899\n", &c) == 0);
	CHECK(parse("0::/docker/3f4e5d6c7b8a99887766554433221100ffeeddccbbaa0011223344556677889\n", &c) == 0);
	CHECK(parse("0::/system.slice/docker-" ID "0.scope\n", &c) == 0);
	CHECK(parse("0::/system.slice/docker-3f4e5d6c7b8a9988776655443322\"100ffeeddccbbaa00112233445566778899.scope\n",
	            &c) == 0);
	CHECK(parse("0::/kubepods.slice/kubepods-pod9a8b7c6d_1234_4f00_8e1a_0123456789a\".slice\n", &c) == 0);
	CHECK(parse("0::/kubepods/pod9a8b7c6d-1234-4f00-8e1a-0123456789a\n/x\n", &c) == 0);
	/* No colons, one colon, garbage bytes, a NUL inside the line. */
	CHECK(parse("docker-" ID ".scope\n", &c) == 0);
	CHECK(parse("0:/docker/" ID "\n", &c) == 0);
	{
		char bin[200];
		for (size_t i = 0; i < sizeof(bin); i++)
			bin[i] = (char)(i * 37 + 1);
		CHECK(cgroup_parse(bin, sizeof(bin), &c) == 0);
		char withnul[] = "0::/docker/" ID "\0/x\n";
		CHECK(cgroup_parse(withnul, sizeof(withnul) - 1, &c) == 0);
	}
	/* An overlong line is skipped whole; the next one still counts. */
	{
		size_t n = CGROUP_LINE_MAX + 200;
		char *t = malloc(n + 200);
		if (!t)
			return;
		strcpy(t, "0::/");
		for (size_t i = 4; i < n; i++)
			t[i] = 'a';
		strcpy(t + n, "/docker/" ID "\n1:cpu:/docker/" ID2 "\n");
		CHECK(cgroup_parse(t, strlen(t), &c) == 1);
		CHECK_STR(c.container, ID2);
		free(t);
	}
	/* The length given bounds the parse (no terminator needed). */
	const char *t = "0::/docker/" ID "\n";
	CHECK(cgroup_parse(t, 20, &c) == 0);
}

static void test_self_and_short(void)
{
	struct cgroup_ident c;
	char err[256], s[CGROUP_ID_SHORT + 1];

	CHECK(cgroup_read(getpid(), &c, err, sizeof(err)) == 0);
	CHECK(strlen(c.container) == 0 || strlen(c.container) == CGROUP_ID_LEN);
	CHECK(cgroup_read(0x7ffffff0, &c, err, sizeof(err)) == -ESRCH);
	cgroup_short_id(ID, s, sizeof(s));
	CHECK_STR(s, "3f4e5d6c7b8a");
	cgroup_short_id("", s, sizeof(s));
	CHECK_STR(s, "");
}

int main(void)
{
	test_layouts();
	test_host();
	test_hostile();
	test_self_and_short();
	return check_done();
}
