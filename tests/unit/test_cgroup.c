/* cgroup_parse against the layouts of docker, containerd, CRI-O and podman
 * under the systemd and cgroupfs drivers, cgroup v1 and v2, paths seen from
 * inside a cgroup namespace, host processes, the same names where a user or
 * a container's root put them, and hostile or broken lines. */
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
#define STATIC_UID "d4e5f60718293a4b5c6d7e8f90a1b2c3" /* a static pod's: md5 of its manifest */
#define PODMAN_POD "0a7c8532b5e0fb5064b894cc1381a62b53253dd450ad088ef0822ce37efceb04"

#define K_SD "/kubepods.slice"
#define BURST_SD K_SD "/kubepods-burstable.slice"
#define BEST_SD K_SD "/kubepods-besteffort.slice"
#define BURST_POD_SD BURST_SD "/kubepods-burstable-pod" UID_ ".slice"
#define BEST_POD_SD BEST_SD "/kubepods-besteffort-pod" UID_ ".slice"
#define GUAR_POD_SD K_SD "/kubepods-pod" UID_ ".slice"
/* A user's delegated subtree, as systemd makes it for their manager. */
#define DELEGATED "/user.slice/user-1000.slice/user@1000.service"

static int parse(const char *text, struct cgroup_ident *id)
{
	return cgroup_parse(text, strlen(text), id);
}

/* text gives exactly that container and pod ("" for none), and says so. */
#define EXPECT(text, ctr, pod) expect(__LINE__, text, ctr, pod)
static void expect(int line, const char *text, const char *ctr, const char *pod)
{
	struct cgroup_ident c;
	int found = parse(text, &c);

	CHECK_MSG(strcmp(c.container, ctr) == 0, "line %d: container \"%s\", expected \"%s\"", line, c.container, ctr);
	CHECK_MSG(strcmp(c.pod, pod) == 0, "line %d: pod \"%s\", expected \"%s\"", line, c.pod, pod);
	CHECK_MSG(found == (ctr[0] || pod[0]), "line %d: returned %d", line, found);
}
#define NOTHING(text) EXPECT(text, "", "")

static void test_kubepods_systemd(void)
{
	/* The three QoS classes; containerd, CRI-O, cri-dockerd. */
	EXPECT("0::" BURST_POD_SD "/cri-containerd-" ID ".scope\n", ID, UID);
	EXPECT("0::" BEST_POD_SD "/crio-" ID ".scope\n", ID, UID);
	EXPECT("0::" GUAR_POD_SD "/docker-" ID ".scope\n", ID, UID);
	/* The pod's slice alone (no container scope): the pod is known. */
	EXPECT("0::" BEST_POD_SD "\n", "", UID);
	/* CRI-O's conmon runs beside the container in the pod's slice. */
	EXPECT("0::" BURST_POD_SD "/crio-conmon-" ID ".scope\n", "", UID);
	/* Below the container's scope (crun's /container): that container. */
	EXPECT("0::" BURST_POD_SD "/crio-" ID ".scope/container\n", ID, UID);
	/* A static pod's uid is no API uid: its containers are known, it is not. */
	EXPECT("0::" BURST_SD "/kubepods-burstable-pod" STATIC_UID ".slice/cri-containerd-" ID ".scope\n", ID, "");
	EXPECT("0::" K_SD "/kubepods-pod" STATIC_UID ".slice/crio-" ID ".scope\n", ID, "");
	/* cgroup v1: every controller line carries the path. */
	EXPECT("12:memory:" BEST_POD_SD "/docker-" ID ".scope\n1:name=systemd:" BEST_POD_SD "/docker-" ID ".scope\n",
	       ID, UID);
	/* No newline at the end. */
	EXPECT("0::" GUAR_POD_SD "/cri-containerd-" ID ".scope", ID, UID);
}

static void test_kubepods_cgroupfs(void)
{
	EXPECT("11:memory:/kubepods/besteffort/pod" UID "/" ID "\n1:name=systemd:/kubepods/besteffort/pod" UID "/" ID
	       "\n",
	       ID, UID);
	EXPECT("0::/kubepods/burstable/pod" UID "/crio-" ID "\n", ID, UID);
	/* Guaranteed QoS: the pod in /kubepods itself. */
	EXPECT("0::/kubepods/pod" UID "/" ID, ID, UID);
	EXPECT("0::/kubepods/pod" UID "\n", "", UID);
	EXPECT("0::/kubepods/besteffort/pod" STATIC_UID "/" ID "\n", ID, "");
	EXPECT("0::/kubepods/burstable/pod" UID "/crio-conmon-" ID "\n", "", UID);
}

static void test_runtimes(void)
{
	EXPECT("0::/system.slice/docker-" ID ".scope\n", ID, "");
	EXPECT("0::/docker/" ID "\n", ID, "");
	/* cgroup v1, cgroupfs driver, with a v2 line elsewhere. */
	EXPECT("12:pids:/docker/" ID "\n11:memory:/docker/" ID "\n0::/system.slice/containerd.service\n", ID, "");
	/* Rootful podman: its scope, crun's /container child, a podman pod's
	 * slice (no Kubernetes pod), the cgroupfs manager. */
	EXPECT("0::/machine.slice/libpod-" ID ".scope\n", ID, "");
	EXPECT("0::/machine.slice/libpod-" ID ".scope/container\n", ID, "");
	EXPECT("0::/machine.slice/machine-libpod_pod_" PODMAN_POD ".slice/libpod-" ID ".scope\n", ID, "");
	EXPECT("0::/libpod_parent/libpod-" ID "\n", ID, "");
	/* Docker in docker: the host's runtime made the outer one; the inner
	 * one was named by the outer container's root. */
	EXPECT("0::/docker/" ID "/docker/" ID2 "\n", ID, "");
	EXPECT("0::/system.slice/docker-" ID ".scope/docker/" ID2 "\n", ID, "");
	/* The first line that yields decides. */
	EXPECT("1:cpu:/docker/" ID2 "\n0::/docker/" ID "\n", ID2, "");
}

/* Seen from a guard in a cgroup namespace (a DaemonSet's pod): paths climb
 * out of its root first, and may start at any level of a layout. */
static void test_namespaced(void)
{
	/* The guard in a besteffort pod's container; another pod's. */
	EXPECT("0::/../../../kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/cri-containerd-" ID
	       ".scope\n",
	       ID, UID);
	EXPECT("0::/../../kubepods-besteffort-pod" UID_ ".slice/crio-" ID ".scope\n", ID, UID);
	EXPECT("0::/../../../kubepods-pod" UID_ ".slice/docker-" ID ".scope/container\n", ID, UID);
	/* A container of the guard's own pod: the pod is not in the path. */
	EXPECT("0::/../cri-containerd-" ID ".scope\n", ID, "");
	/* A host's Docker container, from a guard four levels down. */
	EXPECT("0::/../../../../system.slice/docker-" ID ".scope\n", ID, "");
	EXPECT("0::/../../../../kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice/crio-" ID
	       ".scope\n",
	       ID, UID);
	/* cgroupfs driver. */
	EXPECT("0::/../../burstable/pod" UID "/" ID "\n", ID, UID);
	EXPECT("0::/../pod" UID "/" ID "\n", ID, UID);
	EXPECT("0::/../" ID "\n", ID, "");
	/* A pod's slice under the wrong QoS class is no slice systemd made. */
	NOTHING("0::/../kubepods-besteffort.slice/kubepods-burstable-pod" UID_ ".slice/crio-" ID ".scope\n");
	/* The guard's own cgroup, or one above it. */
	NOTHING("0::/\n");
	NOTHING("0::/..\n");
	NOTHING("0::/../..\n");
}

static void test_host(void)
{
	NOTHING("0::/user.slice/user-1000.slice/session-3.scope\n");
	NOTHING("0::/\n");
	NOTHING("0::/system.slice/containerd.service\n");
	NOTHING("0::/system.slice/docker.service\n");
	NOTHING("");
	/* conmon runs beside a container, not in it. */
	NOTHING("0::/machine.slice/crio-conmon-" ID ".scope\n");
	NOTHING("0::/machine.slice/libpod-conmon-" ID ".scope\n");
	/* Rootless containers live in their user's delegated subtree: they
	 * cannot be told from a user's own names. */
	NOTHING("0::" DELEGATED "/user.slice/libpod-" ID ".scope/container\n");
	NOTHING("0::" DELEGATED "/app.slice/docker.service/docker/" ID "\n");
	NOTHING("0::" DELEGATED "/user.slice/libpod-" ID ".scope\n1:name=systemd:" DELEGATED "/user.slice/libpod-" ID
	        ".scope\n");
}

/* Names of the right shape in the wrong places. */
static void test_claimed(void)
{
	/* The attack: the kubelet's and Docker's names under user@UID.service. */
	NOTHING("0::" DELEGATED "/kubepods-besteffort-pod" UID_ ".slice/docker-" ID ".scope\n");
	NOTHING("0::" DELEGATED BEST_POD_SD "/cri-containerd-" ID ".scope\n");
	NOTHING("0::" DELEGATED "/kubepods/besteffort/pod" UID "/" ID "\n");
	NOTHING("0::" DELEGATED "/system.slice/docker-" ID ".scope\n");
	NOTHING("0::" DELEGATED "/docker/" ID "\n");
	NOTHING("0::" DELEGATED "/machine.slice/libpod-" ID ".scope\n");
	NOTHING("0::" DELEGATED "/libpod-" ID ".scope\n");
	NOTHING("0::" DELEGATED "/" ID "\n");
	NOTHING("0::" DELEGATED "/pod" UID "\n");
	/* The same on every line of a hybrid system. */
	NOTHING("9:name=systemd:" DELEGATED "/kubepods-besteffort-pod" UID_ ".slice/docker-" ID
	        ".scope\n4:memory:/\n0::" DELEGATED "/kubepods-besteffort-pod" UID_ ".slice/docker-" ID ".scope\n");
	/* Seen from a guard in a cgroup namespace: the climb out, then the
	 * user's subtree. */
	NOTHING("0::/../../../.." DELEGATED "/kubepods-besteffort-pod" UID_ ".slice/docker-" ID ".scope\n");
	NOTHING("0::/../user@1000.service/kubepods-besteffort-pod" UID_ ".slice/docker-" ID ".scope\n");
	/* A service another user runs with Delegate=yes. */
	NOTHING("0::/system.slice/build.service/docker-" ID ".scope\n");
	NOTHING("0::/system.slice/build.service" BEST_POD_SD "/crio-" ID ".scope\n");
	/* A pod's or a container's names at the top, without their parents. */
	NOTHING("0::/kubepods-besteffort-pod" UID_ ".slice/docker-" ID ".scope\n");
	NOTHING("0::/cri-containerd-" ID ".scope\n");
	NOTHING("0::/" ID "\n");
	NOTHING("0::/pod" UID "/" ID "\n");
	NOTHING("0::/user.slice/pod" UID "\n");
	/* The layouts out of order, or with a runtime in another's place. */
	NOTHING("0::" BEST_SD "/kubepods-burstable-pod" UID_ ".slice/crio-" ID ".scope\n");
	NOTHING("0::" K_SD "/kubepods-besteffort-pod" UID_ ".slice/crio-" ID ".scope\n");
	NOTHING("0::" K_SD "/crio-" ID ".scope\n");
	NOTHING("0::/kubepods/" ID "\n");
	NOTHING("0::/kubepods/besteffort/" ID "\n");
	NOTHING("0::/system.slice/cri-containerd-" ID ".scope\n");
	NOTHING("0::/machine.slice/docker-" ID ".scope\n");
	NOTHING("0::/docker/docker-" ID ".scope\n");
	EXPECT("0::" BEST_POD_SD "/libpod-" ID ".scope\n", "", UID);
	/* A container's root naming a pod beneath its container: the
	 * container stays, the pod is not taken. */
	EXPECT("0::/system.slice/docker-" ID ".scope" BEST_POD_SD "/cri-containerd-" ID2 ".scope\n", ID, "");
	EXPECT("0::" GUAR_POD_SD "/crio-" ID
	       ".scope/kubepods-burstable-pod9a8b7c6d_0000_4f00_8e1a_0123456789ab.slice\n",
	       ID, UID);
}

static void test_hostile(void)
{
	struct cgroup_ident c;

	/* Upper case, one digit short, one too many, a quote inside. */
	NOTHING("0::/docker/3F4E5D6C7B8A99887766554433221100FFEEDDCCBBAA00112233445566778899\n");
	NOTHING("0::/docker/3f4e5d6c7b8a99887766554433221100ffeeddccbbaa0011223344556677889\n");
	NOTHING("0::/system.slice/docker-" ID "0.scope\n");
	NOTHING("0::/system.slice/docker-3f4e5d6c7b8a9988776655443322\"100ffeeddccbbaa00112233445566778899.scope\n");
	NOTHING("0::/kubepods.slice/kubepods-pod9a8b7c6d_1234_4f00_8e1a_0123456789a\".slice\n");
	NOTHING("0::/kubepods/pod9a8b7c6d-1234-4f00-8e1a-0123456789a\n/x\n");
	/* A pod uid with the other separator for its driver. */
	NOTHING("0::" K_SD "/kubepods-pod" UID ".slice\n");
	NOTHING("0::/kubepods/pod" UID_ "\n");
	/* No colons, one colon, no leading '/'. */
	NOTHING("docker-" ID ".scope\n");
	NOTHING("0:/docker/" ID "\n");
	NOTHING("0::docker/" ID "\n");
	/* What the kernel never writes: an empty name, ".", ".." after a
	 * name, a trailing '/'. */
	NOTHING("0:://docker/" ID "\n");
	NOTHING("0::/docker//" ID "\n");
	NOTHING("0::/./docker/" ID "\n");
	NOTHING("0::/docker/./" ID "\n");
	NOTHING("0::/docker/" ID "/\n");
	NOTHING("0::" DELEGATED "/../../../docker/" ID "\n");
	NOTHING("0::/../" DELEGATED "/../../../../system.slice/docker-" ID ".scope\n");
	NOTHING("0::/...\n");
	/* Garbage bytes, a NUL inside the line. */
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
	t = "0::/kubepods/pod" UID "/" ID "\n";
	CHECK(cgroup_parse(t, strlen(t) - 2, &c) == 1);
	CHECK_STR(c.container, "");
	CHECK_STR(c.pod, UID);
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
	test_kubepods_systemd();
	test_kubepods_cgroupfs();
	test_runtimes();
	test_namespaced();
	test_host();
	test_claimed();
	test_hostile();
	test_self_and_short();
	return check_done();
}
