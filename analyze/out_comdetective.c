/* ComDetective's CSV layout (--comdetective-csv DIR), for the scripts
 * written for ComDetective's output.
 *
 * File names (as the ComDetective tools name them; their hpcrun writer adds
 * an "<executable>-<pid>-" prefix, which their experiment scripts then
 * expect as plain names in the working directory):
 *
 *               all sharing          true sharing         false sharing
 *   thread      as_matrix.csv        ts_matrix.csv        fs_matrix.csv
 *   core        as_core_matrix.csv   ts_core_matrix.csv   fs_core_matrix.csv
 *
 * chosen by m->kind ("all", "true", "false") and m->index ("thread",
 * "core"); other matrices (socket level, other kinds) have no ComDetective
 * file and are skipped; when two matrices map to the same file the first
 * one is written.
 *
 * Layout, as ComDetective writes it: no labels, one line per row, values
 * "%.2f" separated by commas (no trailing comma), lines ending in LF; the
 * rows come LAST FIRST (row n-1 on the first line, row 0 on the last; the
 * ComDetective plotting scripts flip the array back), columns in order.
 * ComDetective's matrices are symmetric: it writes M[i][j] + M[j][i].  We
 * do the same for a directed matrix; a matrix that is already symmetric
 * (attribute "symmetric", or equal to its transpose; see out_is_symmetric)
 * is written as is, since commtrace symmetrizes the same way.
 * An empty matrix (n = 0) gives an empty file. */
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
	if (!strcmp(index, "core"))
		return "_core";
	return NULL;
}

static int write_file(const char *path, const struct matrix_out *m)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	bool sym = out_is_symmetric(m);
	size_t n = m->n;
	for (size_t r = n; r-- > 0;) {
		for (size_t j = 0; j < n; j++) {
			double v = out_cell(m, r, j);
			if (!sym)
				v += out_cell(m, j, r);
			v += 0.0; /* no "-0.00" */
			fprintf(f, j + 1 < n ? "%.2f," : "%.2f", v);
		}
		putc('\n', f);
	}
	int rc = out_finish(f);
	int saved = errno;
	if (fclose(f) != 0 && rc == 0) {
		rc = -1;
		saved = errno;
	}
	errno = saved;
	return rc;
}

int write_comdetective_csv(const char *dir, const struct matrix_out *m, size_t nm,
                           struct ct_error *err)
{
	if (!dir || !*dir) {
		if (err)
			snprintf(err->msg, sizeof err->msg, "no directory given for the ComDetective CSV files");
		errno = EINVAL;
		return -1;
	}
	if (mkdirs(dir) < 0) {
		int e = errno;
		if (err)
			snprintf(err->msg, sizeof err->msg, "cannot create directory '%s': %s", dir, strerror(e));
		errno = e;
		return -1;
	}
	bool done[6] = { false };
	static const char *const pre[3] = { "as", "ts", "fs" };
	size_t written = 0;
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
		size_t plen = strlen(dir) + 32;
		char *path = malloc(plen);
		if (!path)
			return -1;
		snprintf(path, plen, "%s/%s%s_matrix.csv", dir, p, l);
		if (write_file(path, &m[k]) < 0) {
			int e = errno;
			if (err)
				snprintf(err->msg, sizeof err->msg, "cannot write '%s': %s", path, strerror(e));
			free(path);
			errno = e;
			return -1;
		}
		free(path);
		written++;
	}
	if (nm && !written) {
		if (err)
			snprintf(err->msg, sizeof err->msg,
			         "no thread- or core-level all/true/false sharing matrix to write to '%s'", dir);
		errno = EINVAL;
		return -1;
	}
	return 0;
}
