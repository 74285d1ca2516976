/* The memory map, written to the spool as maps-PID.txt at start and again
 * at exit (libraries dlopen'd meanwhile): one mapping a line,
 *   start-end perms offset buildid path
 * with buildid "-" (the launcher fills in build-ids when it joins).  Only
 * open/read/write/rename: usable at exit and from a fatal signal handler. */
#include "rt.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

uintptr_t rt_text_lo, rt_text_hi;

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	uintptr_t me = (uintptr_t)data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (me >= lo && me < hi) {
			rt_text_lo = lo;
			rt_text_hi = hi;
			return 1;
		}
	}
	return 0;
}

void rt_find_own_text(void)
{
	dl_iterate_phdr(find_self, (void *)(uintptr_t)&rt_find_own_text);
}

static size_t put_str(char *out, size_t pos, size_t cap, const char *s, size_t n)
{
	if (pos + n > cap)
		n = pos < cap ? cap - pos : 0;
	memcpy(out + pos, s, n);
	return pos + n;
}

static size_t put_num(char *out, size_t pos, size_t cap, unsigned long v)
{
	char b[24];
	int n = 0;
	do {
		b[sizeof b - 1 - n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return put_str(out, pos, cap, b + sizeof b - n, (size_t)n);
}

/* "start-end perms offset dev inode   path" -> "start-end perms offset - path" */
static size_t convert_line(const char *l, size_t n, char *out, size_t pos, size_t cap)
{
	const char *f[6];
	size_t fl[6];
	size_t i = 0;
	int k = 0;
	while (k < 5) {
		while (i < n && l[i] == ' ')
			i++;
		f[k] = l + i;
		while (i < n && l[i] != ' ')
			i++;
		fl[k] = (size_t)(l + i - f[k]);
		k++;
	}
	while (i < n && l[i] == ' ')
		i++;
	f[5] = l + i;
	fl[5] = n - i;
	if (!fl[0] || !fl[1] || !fl[2])
		return pos;
	pos = put_str(out, pos, cap, f[0], fl[0]);
	pos = put_str(out, pos, cap, " ", 1);
	pos = put_str(out, pos, cap, f[1], fl[1]);
	pos = put_str(out, pos, cap, " ", 1);
	pos = put_str(out, pos, cap, f[2], fl[2]);
	pos = put_str(out, pos, cap, " -", 2);
	if (fl[5]) {
		pos = put_str(out, pos, cap, " ", 1);
		pos = put_str(out, pos, cap, f[5], fl[5]);
	}
	return put_str(out, pos, cap, "\n", 1);
}

/* Write len bytes; the count written.  Beyond RLIMIT_FSIZE the kernel
 * sends SIGXFSZ to the writing thread: it is blocked meanwhile and the one
 * the write raised is taken back, so the program never sees it (the file
 * is then incomplete and dropped). */
static size_t write_quietly(int fd, const char *p, size_t len)
{
	sigset_t xfsz, old, pending;
	sigemptyset(&xfsz);
	sigaddset(&xfsz, SIGXFSZ);
	pthread_sigmask(SIG_BLOCK, &xfsz, &old);
	sigpending(&pending);
	bool was_pending = sigismember(&pending, SIGXFSZ);
	size_t done = 0;
	while (done < len) {
		ssize_t w = write(fd, p + done, len - done);
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	if (done < len && !was_pending) {
		struct timespec zero = { 0, 0 };
		sigtimedwait(&xfsz, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return done;
}

void rt_write_maps(void)
{
	static char *in, *out;
	static const size_t cap = 4 << 20;
	if (!in) {
		void *m = mmap(NULL, 2 * cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return;
		in = m;
		out = (char *)m + cap;
	}
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	size_t len = 0;
	for (;;) {
		ssize_t r = read(fd, in + len, cap - len);
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == cap)
			break;
	}
	close(fd);
	size_t pos = 0, start = 0;
	for (size_t i = 0; i < len; i++) {
		if (in[i] != '\n')
			continue;
		pos = convert_line(in + start, i - start, out, pos, cap);
		start = i + 1;
	}
	char path[4200], tmp[4220];
	size_t p = put_str(path, 0, sizeof path - 1, rt_cfg.spool, strlen(rt_cfg.spool));
	p = put_str(path, p, sizeof path - 1, "/maps-", 6);
	p = put_num(path, p, sizeof path - 1, (unsigned long)rt_pid);
	p = put_str(path, p, sizeof path - 1, ".txt", 4);
	path[p] = 0;
	memcpy(tmp, path, p);
	memcpy(tmp + p, ".tmp", 5);
	/* a new file: a leftover of ours goes first, and whatever is there
	 * then (a link someone planted) makes the exclusive create fail */
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	size_t done = write_quietly(fd, out, pos);
	close(fd);
	if (done == pos)
		rename(tmp, path);
	else
		unlink(tmp);
}
