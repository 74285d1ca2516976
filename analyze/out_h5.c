/* HDF5 writer: the file is created anew (truncated); one 2-D float64
 * dataset (n x n, row-major like struct matrix_out) per matrix, at the root,
 * named m->name ('/' replaced by '_'; "_2", "_3"... appended to repeated
 * names; "matrix_K" when there is no name).  Each dataset carries scalar
 * UTF-8 string attributes kind, index, units and every attr of the matrix,
 * plus "labels", a 1-D array of n variable-length strings (row and column
 * labels, same order).  The file itself carries "creator" (commtrace and its
 * version), "format" ("commtrace matrices") and "matrices" (how many).
 *
 * The HDF5 automatic error printing is switched off while writing (and
 * restored afterwards); failures come back as -1 with err->msg naming the
 * file and the dataset. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "out_util.h"

#ifndef CT_VERSION
#define CT_VERSION "unknown"
#endif

#ifndef HAVE_HDF5

int write_matrices_h5(const char *path, const struct matrix_out *m, size_t nm,
                      struct ct_error *err)
{
	(void)m, (void)nm, (void)path;
	if (err)
		snprintf(err->msg, sizeof err->msg, "built without HDF5: install libhdf5-dev and rebuild");
	errno = ENOTSUP;
	return -1;
}

#else

#include <hdf5.h>

/* err->msg = prefix 'path' suffix */
static void seterr(struct ct_error *err, const char *prefix, const char *path, const char *suffix)
{
	if (err)
		snprintf(err->msg, sizeof err->msg, "%s'%s'%s", prefix, path ? path : "", suffix);
}

/* Scalar string attribute. */
static int attr_str(hid_t obj, hid_t strtype, const char *key, const char *value)
{
	if (!key || !*key)
		return 0;
	const char *v = value ? value : "";
	hid_t sp = H5Screate(H5S_SCALAR);
	if (sp < 0)
		return -1;
	int rc = -1;
	/* an attribute of that name may already exist (a repeated key): replace it */
	if (H5Aexists(obj, key) > 0)
		H5Adelete(obj, key);
	hid_t a = H5Acreate2(obj, key, strtype, sp, H5P_DEFAULT, H5P_DEFAULT);
	if (a >= 0) {
		if (H5Awrite(a, strtype, &v) >= 0)
			rc = 0;
		H5Aclose(a);
	}
	H5Sclose(sp);
	return rc;
}

static int attr_labels(hid_t obj, hid_t strtype, const struct matrix_out *m)
{
	size_t n = m->n;
	hsize_t dim = n;
	hid_t sp = n ? H5Screate_simple(1, &dim, NULL) : H5Screate(H5S_NULL);
	if (sp < 0)
		return -1;
	int rc = -1;
	const char **v = calloc(n ? n : 1, sizeof *v);
	char (*bufs)[32] = calloc(n ? n : 1, sizeof *bufs);
	if (v && bufs) {
		for (size_t i = 0; i < n; i++)
			v[i] = out_label(m, i, bufs[i], sizeof bufs[i]);
		hid_t a = H5Acreate2(obj, "labels", strtype, sp, H5P_DEFAULT, H5P_DEFAULT);
		if (a >= 0) {
			if (n == 0 || H5Awrite(a, strtype, v) >= 0)
				rc = 0;
			H5Aclose(a);
		}
	}
	free(v);
	free(bufs);
	H5Sclose(sp);
	return rc;
}

static int write_one(hid_t file, hid_t strtype, const struct matrix_out *m, size_t k,
                     char *name, size_t namelen)
{
	if (m->name && *m->name) {
		snprintf(name, namelen, "%s", m->name);
		for (char *p = name; *p; p++)
			if (*p == '/')
				*p = '_';
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			snprintf(name, namelen, "matrix_%zu", k);
	} else {
		snprintf(name, namelen, "matrix_%zu", k);
	}
	if (H5Lexists(file, name, H5P_DEFAULT) > 0) {
		size_t base = strlen(name);
		for (unsigned s = 2;; s++) {
			snprintf(name + base, namelen - base, "_%u", s);
			if (H5Lexists(file, name, H5P_DEFAULT) <= 0)
				break;
		}
	}
	hsize_t dims[2] = { m->n, m->n };
	hid_t sp = H5Screate_simple(2, dims, NULL);
	if (sp < 0)
		return -1;
	hid_t d = H5Dcreate2(file, name, H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	H5Sclose(sp);
	if (d < 0)
		return -1;
	int rc = 0;
	if (m->n) {
		double *zero = NULL;
		const double *data = m->cell;
		if (!data)
			data = zero = calloc(m->n * m->n, sizeof *zero);
		if (!data || H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
			rc = -1;
		free(zero);
	}
	if (rc == 0 && (attr_str(d, strtype, "kind", m->kind) < 0 ||
	                attr_str(d, strtype, "index", m->index) < 0 ||
	                attr_str(d, strtype, "units", m->units) < 0 ||
	                attr_labels(d, strtype, m) < 0))
		rc = -1;
	for (size_t a = 0; rc == 0 && m->attrs && a < m->nattrs; a++) {
		const char *key = m->attrs[a].key;
		/* "labels" and the fixed keys are ours: keep the attr under a prefix */
		char alt[256];
		if (key && (!strcmp(key, "labels") || !strcmp(key, "kind") || !strcmp(key, "index") ||
		            !strcmp(key, "units"))) {
			snprintf(alt, sizeof alt, "attr_%s", key);
			key = alt;
		}
		if (attr_str(d, strtype, key, m->attrs[a].value) < 0)
			rc = -1;
	}
	if (H5Dclose(d) < 0)
		rc = -1;
	return rc;
}

int write_matrices_h5(const char *path, const struct matrix_out *m, size_t nm,
                      struct ct_error *err)
{
	H5E_auto2_t old_fn = NULL;
	void *old_data = NULL;
	H5Eget_auto2(H5E_DEFAULT, &old_fn, &old_data);
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);

	int rc = -1, saved = 0;
	char name[300];
	hid_t strtype = -1;
	errno = 0;
	hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	if (file < 0) {
		saved = errno ? errno : EIO;
		seterr(err, "cannot create HDF5 file ", path, "");
		if (err && saved != EIO) {
			size_t l = strlen(err->msg);
			snprintf(err->msg + l, sizeof err->msg - l, ": %s", strerror(saved));
		}
		goto out;
	}
	strtype = H5Tcopy(H5T_C_S1);
	if (strtype < 0 || H5Tset_size(strtype, H5T_VARIABLE) < 0 ||
	    H5Tset_cset(strtype, H5T_CSET_UTF8) < 0) {
		saved = EIO;
		seterr(err, "cannot write HDF5 file ", path, ": string type");
		goto out;
	}
	char count[32];
	snprintf(count, sizeof count, "%zu", nm);
	if (attr_str(file, strtype, "creator", "commtrace " CT_VERSION) < 0 ||
	    attr_str(file, strtype, "format", "commtrace matrices") < 0 ||
	    attr_str(file, strtype, "matrices", count) < 0) {
		saved = errno ? errno : EIO;
		seterr(err, "cannot write HDF5 file ", path, ": file attributes");
		goto out;
	}
	for (size_t k = 0; k < nm; k++) {
		errno = 0;
		if (write_one(file, strtype, &m[k], k, name, sizeof name) < 0) {
			saved = errno ? errno : EIO;
			if (err)
				snprintf(err->msg, sizeof err->msg, "cannot write dataset '%s' to HDF5 file '%s'",
				         name, path);
			goto out;
		}
	}
	rc = 0;
out:
	if (strtype >= 0)
		H5Tclose(strtype);
	if (file >= 0) {
		errno = 0;
		if (H5Fclose(file) < 0 && rc == 0) {
			saved = errno ? errno : EIO;
			seterr(err, "cannot write HDF5 file ", path, "");
			rc = -1;
		}
	}
	H5Eset_auto2(H5E_DEFAULT, old_fn, old_data);
	if (rc < 0)
		errno = saved;
	return rc;
}

#endif
