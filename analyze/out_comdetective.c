/* ComDetective's CSV layout (--comdetective-csv DIR), for the scripts
 * written for ComDetective's output.
 *
 * Files, named as ComDetective's hpcrun writer names them, with the
 * "<exe>-<pid>-" prefix (the recorded program's name and process id):
 *
 *               all sharing             true sharing            false sharing
 *   thread      <p>as_matrix.csv        <p>ts_matrix.csv        <p>fs_matrix.csv
 *   cpu         <p>as_core_matrix.csv   <p>ts_core_matrix.csv   <p>fs_core_matrix.csv
 *
 * chosen by m->kind ("all", "true", "false") and m->index ("thread", or
 * "cpu": ComDetective's "core" files are indexed by the logical cpu that
 * sched_getcpu returned, and leave out the events whose two accesses ran
 * on the same cpu; cd_cpus_consumer builds those matrices).  Other matrices
 * (physical cores, sockets, other kinds) have no ComDetective file and are
 * skipped; when two matrices map to the same file the first one is written.
 *
 * Layout, as ComDetective writes it: no labels, one line per row, values
 * "%.2f" separated by commas (no trailing comma), lines ending in LF; the
 * rows come LAST FIRST (row n-1 on the first line, row 0 on the last; the
 * ComDetective plotting scripts flip the array back), columns in order.
 * ComDetective's matrices are symmetric: it writes M[i][j] + M[j][i] of its
 * directed matrix M.  We do the same for a directed matrix; a matrix that
 * is already symmetric (attribute "symmetric", or equal to its transpose;
 * see out_is_symmetric) is taken as M + M^T and written as is.  An empty
 * matrix (n = 0) gives an empty file.
 *
 * And <p>comdetective.log, with the line ComDetective's hpcrun writes into
 * its log, which ComDetective's scripts find by "COMDETECTIVE STATS:" and
 * read as nine numbers in this order:
 *   COMDETECTIVE STATS: fs_volume:F, fs_core_volume:F, ts_volume:F,
 *   ts_core_volume:F, as_volume:F, as_core_volume:F, cache_line_transfer:F,
 *   cache_line_transfer_millions:F, cache_line_transfer_gbytes:F
 * (one line, "%.2f" each): a volume is the sum of the directed matrix
 * (half the sum of the symmetric file), cache_line_transfer is
 * as_core_volume, its millions / 1e6, its gbytes x line size / 2^30. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "out_util.h"

/* mkdir -p; 0 or -1 with errno. */
static int mkdirs(const char *dir)
{
	size_t len = strlen(dir);
	char *p = malloc(len + 1);
	if (!p)
		return -1;
	memcpy(p, dir, len + 1);
	for (size_t i = 1; i <= len; i++) {
		if (p[i] != '/' && p[i] != 0)
			continue;
		char c = p[i];
		p[i] = 0;
		if (mkdir(p, 0777) < 0 && errno != EEXIST) {
			free(p);
			return -1;
		}
		p[i] = c;
	}
	free(p);
	struct stat st;
	if (stat(dir, &st) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

static const char *prefix_of(const char *kind)
{
	if (!kind)
		return NULL;
	if (!strcmp(kind, "all"))
		return "as";
	if (!strcmp(kind, "true"))
		return "ts";
	if (!strcmp(kind, "false"))
		return "fs";
	return NULL;
}

static const char *level_of(const char *index)
{
	if (!index)
		return NULL;
	if (!strcmp(index, "thread"))
		return "";
	if (!strcmp(index, "cpu"))
		return "_core";
	return NULL;
}

/* out_finish, then fclose: 0, or -1 with errno from the first failure. */
static int finish_close(FILE *f)
{
	int rc = out_finish(f);
	int saved = errno;
	if (fclose(f) != 0 && rc == 0) {
		rc = -1;
		saved = errno;
	}
	errno = saved;
	return rc;
}

/* Writes m in ComDetective's layout; *volume: the sum of its directed matrix. */
static int write_file(const char *path, const struct matrix_out *m, double *volume)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	bool sym = out_is_symmetric(m);
	size_t n = m->n;
	double sum = 0;
	for (size_t r = n; r-- > 0;) {
		for (size_t j = 0; j < n; j++) {
			double v = out_cell(m, r, j);
			if (!sym)
				v += out_cell(m, j, r);
			sum += v;
			v += 0.0; /* no "-0.00" */
			fprintf(f, j + 1 < n ? "%.2f," : "%.2f", v);
		}
		putc('\n', f);
	}
	*volume = sum / 2;
	return finish_close(f);
}

/* The stats line, volumes by slot (as, ts, fs; then their _core files). */
static int write_stats(const char *path, const double vol[6], unsigned line_size)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	double clt = vol[3];
	fprintf(f, "COMDETECTIVE STATS: fs_volume:%.2f, fs_core_volume:%.2f, ts_volume:%.2f, "
	        "ts_core_volume:%.2f, as_volume:%.2f, as_core_volume:%.2f, "
	        "cache_line_transfer:%.2f, cache_line_transfer_millions:%.2f, "
	        "cache_line_transfer_gbytes:%.2f\n",
	        vol[2], vol[5], vol[1], vol[4], vol[0], vol[3], clt, clt / 1e6,
	        clt * line_size / (1024.0 * 1024 * 1024));
	return finish_close(f);
}

static int fail_path(struct ct_error *err, const char *what, const char *path)
{
	int e = errno;
	if (err)
		snprintf(err->msg, sizeof err->msg, "cannot %s '%s': %s", what, path, strerror(e));
	errno = e;
	return -1;
}

int write_comdetective_csv(const char *dir, const struct cd_files *id, const struct matrix_out *m,
                           size_t nm, struct ct_error *err)
{
	if (!dir || !*dir) {
		if (err)
			snprintf(err->msg, sizeof err->msg, "no directory given for the ComDetective CSV files");
		errno = EINVAL;
		return -1;
	}
	if (mkdirs(dir) < 0)
		return fail_path(err, "create directory", dir);
	bool done[6] = { false };
	double vol[6] = { 0 };
	static const char *const pre[3] = { "as", "ts", "fs" };
	size_t written = 0;
	size_t plen = strlen(dir) + strlen(id->exe) + 64;
	char *path = malloc(plen);
	if (!path)
		return -1;
	for (size_t k = 0; k < nm; k++) {
		const char *p = prefix_of(m[k].kind), *l = level_of(m[k].index);
		if (!p || !l)
			continue;
		size_t slot = (size_t)(*l ? 3 : 0);
		for (size_t q = 0; q < 3; q++)
			if (!strcmp(pre[q], p))
				slot += q;
		if (done[slot])
			continue;
		done[slot] = true;
		snprintf(path, plen, "%s/%s-%ld-%s%s_matrix.csv", dir, id->exe, id->pid, p, l);
		if (write_file(path, &m[k], &vol[slot]) < 0) {
			fail_path(err, "write", path);
			free(path);
			return -1;
		}
		written++;
	}
	if (nm && !written) {
		free(path);
		if (err)
			snprintf(err->msg, sizeof err->msg,
			         "no thread- or cpu-level all/true/false sharing matrix to write to '%s'", dir);
		errno = EINVAL;
		return -1;
	}
	snprintf(path, plen, "%s/%s-%ld-comdetective.log", dir, id->exe, id->pid);
	int rc = write_stats(path, vol, id->line_size) < 0 ? fail_path(err, "write", path) : 0;
	free(path);
	return rc;
}

/* ---- the cpu matrices of the _core files ---------------------------------- */

static bool cd_cpus_grow(struct cd_cpus *c, size_t n)
{
	double *cell[3];
	for (int k = 0; k < 3; k++) {
		cell[k] = calloc(n * n, sizeof **cell);
		if (!cell[k]) {
			while (k-- > 0)
				free(cell[k]);
			return false;
		}
		for (size_t i = 0; i < c->n; i++)
			memcpy(cell[k] + i * n, c->cell[k] + i * c->n, c->n * sizeof **cell);
	}
	for (int k = 0; k < 3; k++) {
		free(c->cell[k]);
		c->cell[k] = cell[k];
	}
	c->n = n;
	return true;
}

int cd_cpus_init(struct cd_cpus *c, size_t ncpus)
{
	memset(c, 0, sizeof *c);
	return ncpus && ncpus <= CD_CPUS_MAX && !cd_cpus_grow(c, ncpus) ? -1 : 0;
}

void cd_cpus_free(struct cd_cpus *c)
{
	for (int k = 0; k < 3; k++)
		free(c->cell[k]);
	memset(c, 0, sizeof *c);
}

static void cd_cpus_event(void *self, const struct comm_event *ev)
{
	struct cd_cpus *c = self;
	uint32_t d = ev->dst_cpu, s = ev->src_cpu;
	if (d == UINT32_MAX || s == UINT32_MAX || d >= CD_CPUS_MAX || s >= CD_CPUS_MAX) {
		c->unknown++;
		return;
	}
	if (d == s) {
		c->same_cpu++;
		return;
	}
	size_t need = (d > s ? d : s) + 1u;
	if (need > c->n && !cd_cpus_grow(c, need)) {
		c->oom = true;
		return;
	}
	size_t at = (size_t)d * c->n + s;
	c->cell[0][at] += ev->weight;
	c->cell[ev->true_sharing ? 1 : 2][at] += ev->weight;
}

struct event_consumer cd_cpus_consumer(struct cd_cpus *c)
{
	return (struct event_consumer){ .self = c, .event = cd_cpus_event };
}
