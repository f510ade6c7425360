/* corecheck FILE PID: exits 0 when FILE is an ELF core dump of process PID
 * (ET_CORE, and its NT_PRPSINFO note names that pid), else prints why and
 * exits 1. Used by the integration tests to check real createdump output. */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/procfs.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct stat st;
	const unsigned char *p;
	const Elf64_Ehdr *eh;
	int fd;
	long want;

	if (argc != 3) {
		fprintf(stderr, "usage: corecheck FILE PID\n");
		return 2;
	}
	want = strtol(argv[2], NULL, 10);
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		fprintf(stderr, "corecheck: %s: cannot read or too small\n", argv[1]);
		return 1;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	eh = (const Elf64_Ehdr *)p;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64) {
		fprintf(stderr, "corecheck: %s is not a 64-bit ELF file\n", argv[1]);
		return 1;
	}
	if (eh->e_type != ET_CORE) {
		fprintf(stderr, "corecheck: %s is ELF type %u, not a core file\n", argv[1], eh->e_type);
		return 1;
	}
	if (eh->e_phoff + (size_t)eh->e_phnum * sizeof(Elf64_Phdr) > (size_t)st.st_size) {
		fprintf(stderr, "corecheck: program headers out of bounds\n");
		return 1;
	}
	for (int i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(p + eh->e_phoff) + i;
		if (ph->p_type != PT_NOTE || ph->p_offset + ph->p_filesz > (size_t)st.st_size)
			continue;
		size_t off = ph->p_offset, end = ph->p_offset + ph->p_filesz;
		while (off + sizeof(Elf64_Nhdr) <= end) {
			const Elf64_Nhdr *nh = (const Elf64_Nhdr *)(p + off);
			size_t name = off + sizeof(*nh), desc = name + ((nh->n_namesz + 3) & ~3u);
			if (desc + nh->n_descsz > end)
				break;
			if (nh->n_type == NT_PRPSINFO && nh->n_descsz >= sizeof(prpsinfo_t)) {
				prpsinfo_t ps;
				memcpy(&ps, p + desc, sizeof(ps));
				if (ps.pr_pid != want) {
					fprintf(stderr, "corecheck: core is of pid %d, not %ld\n", ps.pr_pid, want);
					return 1;
				}
				printf("corecheck: %s is an ELF core of pid %d (%.16s), %lld bytes\n", argv[1],
				       ps.pr_pid, ps.pr_fname, (long long)st.st_size);
				return 0;
			}
			off = desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	fprintf(stderr, "corecheck: %s has no NT_PRPSINFO note\n", argv[1]);
	return 1;
}
