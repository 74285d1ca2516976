/* HDF5 writer: the file is created anew (truncated); one 2-D float64
 * dataset (n x n, row-major like struct matrix_out) per matrix, at the root,
 * named m->name ('/' replaced by '_'; "_2", "_3"... appended to repeated
 * names; "matrix_K" when there is no name).  Each dataset carries scalar
 * UTF-8 string attributes kind, index, units, every attr of the matrix (a
 * number as a uint64 or float64), plus "labels", a 1-D array of n
 * variable-length strings (row and column labels, same order), also as the
 * dimension scales INDEX_row and INDEX_column (datasets at the root, shared
 * by the matrices of one index).  The file itself carries "creator"
 * (commtrace and its version), "format" ("commtrace matrices") and
 * "matrices" (how many, uint64).
 *
 * Sparse (out_sparse: past OUT_DENSE_MAX rows, or --cells sparse): the
 * dataset is 1-D, one element per non-zero cell by row then column, of the
 * compound type {row uint32, column uint32, value float64}; it has the
 * attributes layout ("sparse") and n (uint64) besides kind, index, units
 * and the matrix's own, and no "labels" attribute (an attribute holds at
 * most 64 KiB): the labels are in the datasets INDEX_row and INDEX_column,
 * not attached as scales.  A dense matrix of more than OUT_DENSE_MAX rows
 * (--cells dense) has no "labels" attribute either, only its scales.
 *
 * The HDF5 automatic error printing is switched off while writing (and
 * restored afterwards); failures come back as -1 with err->msg naming the
 * file and the dataset. */
#include <errno.h>
#include <stddef.h>
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

#include <hdf5_hl.h>
#include <math.h>

#include "out_h5.h"

/* ---- helpers (out_h5.h) ---------------------------------------------------- */

void h5w_fail(struct h5w *h)
{
	if (!h->bad)
		h->err_no = errno ? errno : EIO;
	h->bad = 1;
}

int h5w_create(struct h5w *h, const char *path, struct ct_error *err)
{
	memset(h, 0, sizeof *h);
	h->str = -1;
	H5Eget_auto2(H5E_DEFAULT, &h->old_fn, &h->old_data);
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	errno = 0;
	h->file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	if (h->file < 0) {
		int e = errno ? errno : EIO;
		snprintf(err->msg, sizeof err->msg, "cannot create HDF5 file '%s'%s%s", path,
		         e != EIO ? ": " : "", e != EIO ? strerror(e) : "");
		H5Eset_auto2(H5E_DEFAULT, h->old_fn, h->old_data);
		errno = e;
		return -1;
	}
	h->str = H5Tcopy(H5T_C_S1);
	if (h->str < 0 || H5Tset_size(h->str, H5T_VARIABLE) < 0 ||
	    H5Tset_cset(h->str, H5T_CSET_UTF8) < 0)
		h5w_fail(h);
	return 0;
}

int h5w_close(struct h5w *h)
{
	if (h->str >= 0)
		H5Tclose(h->str);
	errno = 0;
	if (H5Fclose(h->file) < 0)
		h5w_fail(h);
	H5Eset_auto2(H5E_DEFAULT, h->old_fn, h->old_data);
	if (h->bad)
		errno = h->err_no ? h->err_no : EIO;
	return h->bad ? -1 : 0;
}

/* A scalar attribute; one of that name already there (a repeated key) is
 * replaced. */
static void attr_scalar(struct h5w *h, hid_t obj, const char *key, hid_t ftype, hid_t mtype,
                        const void *v)
{
	if (!key || !*key)
		return;
	hid_t sp = H5Screate(H5S_SCALAR);
	if (H5Aexists(obj, key) > 0)
		H5Adelete(obj, key);
	hid_t a = sp < 0 ? -1 : H5Acreate2(obj, key, ftype, sp, H5P_DEFAULT, H5P_DEFAULT);
	if (a < 0 || H5Awrite(a, mtype, v) < 0)
		h5w_fail(h);
	if (a >= 0)
		H5Aclose(a);
	if (sp >= 0)
		H5Sclose(sp);
}

void h5w_attr_str(struct h5w *h, hid_t obj, const char *key, const char *value)
{
	const char *v = value ? value : "";
	attr_scalar(h, obj, key, h->str, h->str, &v);
}

void h5w_attr_u64(struct h5w *h, hid_t obj, const char *key, uint64_t v)
{
	attr_scalar(h, obj, key, H5T_STD_U64LE, H5T_NATIVE_UINT64, &v);
}

void h5w_attr_i64(struct h5w *h, hid_t obj, const char *key, int64_t v)
{
	attr_scalar(h, obj, key, H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
}

void h5w_attr_f64(struct h5w *h, hid_t obj, const char *key, double v)
{
	attr_scalar(h, obj, key, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
}

/* text as a number: 'u' a decimal integer (*u), 'f' another finite number
 * (*f), 0 not a number. */
static int text_number(const char *text, uint64_t *u, double *f)
{
	if (!text || !*text || strchr(" \t\n", *text))
		return 0;
	char *end;
	errno = 0;
	if (*text >= '0' && *text <= '9') {
		unsigned long long v = strtoull(text, &end, 10);
		if (!*end && !errno) {
			*u = v;
			return 'u';
		}
	}
	errno = 0;
	double d = strtod(text, &end);
	if (*end || errno || !isfinite(d) || !strpbrk(text, "0123456789"))
		return 0;
	*f = d;
	return 'f';
}

void h5w_attr_value(struct h5w *h, hid_t obj, const char *key, const char *text)
{
	uint64_t u;
	double f;
	switch (text_number(text, &u, &f)) {
	case 'u':
		h5w_attr_u64(h, obj, key, u);
		return;
	case 'f':
		h5w_attr_f64(h, obj, key, f);
		return;
	}
	h5w_attr_str(h, obj, key, text);
}

hid_t h5w_dataset_values(struct h5w *h, hid_t loc, const char *name, const char *const *v,
                         size_t n)
{
	uint64_t *u = calloc(n ? n : 1, sizeof *u);
	double *f = calloc(n ? n : 1, sizeof *f);
	int kind = u && f && n ? 'u' : 0;
	for (size_t i = 0; kind && i < n; i++) {
		int k = text_number(v[i], &u[i], &f[i]);
		if (k == 'u')
			f[i] = (double)u[i];
		else if (k == 'f')
			kind = 'f';
		else
			kind = 0;
	}
	hsize_t dim = n;
	hid_t d = kind == 'u' ? h5w_dataset(h, loc, name, 1, &dim, H5T_STD_U64LE, H5T_NATIVE_UINT64, u)
	        : kind == 'f' ? h5w_dataset(h, loc, name, 1, &dim, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, f)
	        : h5w_dataset(h, loc, name, 1, &dim, h->str, h->str, v);
	free(u);
	free(f);
	return d;
}

void h5w_attach_scale(struct h5w *h, hid_t d, hid_t scale, unsigned dim)
{
	if (H5DSis_scale(scale) <= 0 && H5DSset_scale(scale, NULL) < 0)
		h5w_fail(h);
	else if (H5DSattach_scale(d, scale, dim) < 0)
		h5w_fail(h);
}

void h5w_attr_strs(struct h5w *h, hid_t obj, const char *key, const char *const *v, size_t n)
{
	hsize_t dim = n;
	hid_t sp = n ? H5Screate_simple(1, &dim, NULL) : H5Screate(H5S_NULL);
	hid_t a = sp < 0 ? -1 : H5Acreate2(obj, key, h->str, sp, H5P_DEFAULT, H5P_DEFAULT);
	if (a < 0 || (n && H5Awrite(a, h->str, v) < 0))
		h5w_fail(h);
	if (a >= 0)
		H5Aclose(a);
	if (sp >= 0)
		H5Sclose(sp);
}

hid_t h5w_dataset(struct h5w *h, hid_t loc, const char *name, int rank, const hsize_t *dims,
                  hid_t ftype, hid_t mtype, const void *data)
{
	hid_t sp = H5Screate_simple(rank, dims, NULL);
	hid_t d = sp < 0 ? -1 : H5Dcreate2(loc, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	hsize_t total = 1;
	for (int i = 0; i < rank; i++)
		total *= dims[i];
	if (d < 0 || (total && H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0))
		h5w_fail(h);
	if (sp >= 0)
		H5Sclose(sp);
	return d;
}

void h5w_dataset_strs(struct h5w *h, hid_t loc, const char *name, const char *const *v, size_t n)
{
	hsize_t dim = n;
	hid_t d = h5w_dataset(h, loc, name, 1, &dim, h->str, h->str, v);
	if (d >= 0)
		H5Dclose(d);
}

/* The labels as datasets INDEX_row and INDEX_column of loc, made by the
 * first matrix of that index; one there already of another length (the
 * labels of another kind of matrix) is left alone.  With d >= 0 they
 * become the scales of its rows and columns. */
static void label_datasets(struct h5w *h, hid_t loc, hid_t d, const struct matrix_out *m,
                           const char *const *labels)
{
	static const char *const side[] = { "row", "column" };
	for (unsigned dim = 0; dim < 2; dim++) {
		char name[96];
		snprintf(name, sizeof name, "%s_%s", m->index && *m->index ? m->index : "label",
		         side[dim]);
		hid_t sc;
		if (H5Lexists(loc, name, H5P_DEFAULT) > 0) {
			sc = H5Dopen2(loc, name, H5P_DEFAULT);
			hid_t sp = sc < 0 ? -1 : H5Dget_space(sc);
			hssize_t len = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
			if (sp >= 0)
				H5Sclose(sp);
			if (len != (hssize_t)m->n) {
				if (sc >= 0)
					H5Dclose(sc);
				continue;
			}
		} else {
			hsize_t dim_n = m->n;
			sc = h5w_dataset(h, loc, name, 1, &dim_n, h->str, h->str, labels);
		}
		if (sc < 0)
			continue;
		if (d >= 0)
			h5w_attach_scale(h, d, sc, dim);
		H5Dclose(sc);
	}
}

/* The dense form: an n x n float64 dataset. */
static hid_t dense_dataset(struct h5w *h, hid_t loc, const char *name, const struct matrix_out *m)
{
	size_t n = m->n;
	hsize_t dims[2] = { n, n };
	double *full = NULL;
	const double *data = m->cell;
	if (!data && n) {
		data = full = calloc(n * n, sizeof *full);
		for (size_t k = 0; full && m->nz && k < m->nnz; k++)
			full[m->nz[k].row * n + m->nz[k].col] = m->nz[k].v;
	}
	if (!data && n) {
		h5w_fail(h);
		return -1;
	}
	hid_t d = h5w_dataset(h, loc, name, 2, dims, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, data);
	free(full);
	return d;
}

/* The sparse form: a 1-D dataset of the non-zero cells, compound
 * {row uint32, column uint32, value float64} by row then column, with the
 * attributes layout "sparse" and n. */
static hid_t sparse_dataset(struct h5w *h, hid_t loc, const char *name, const struct matrix_out *m)
{
	const struct mx_triplet *t;
	struct mx_triplet *owned;
	ptrdiff_t nt = out_nonzero(m, &t, &owned);
	if (nt < 0) {
		h5w_fail(h);
		return -1;
	}
	hid_t mt = H5Tcreate(H5T_COMPOUND, sizeof(struct mx_triplet));
	hid_t ft = H5Tcreate(H5T_COMPOUND, 16);
	if (mt >= 0 && ft >= 0) {
		H5Tinsert(mt, "row", offsetof(struct mx_triplet, row), H5T_NATIVE_UINT32);
		H5Tinsert(mt, "column", offsetof(struct mx_triplet, col), H5T_NATIVE_UINT32);
		H5Tinsert(mt, "value", offsetof(struct mx_triplet, v), H5T_NATIVE_DOUBLE);
		H5Tinsert(ft, "row", 0, H5T_STD_U32LE);
		H5Tinsert(ft, "column", 4, H5T_STD_U32LE);
		H5Tinsert(ft, "value", 8, H5T_IEEE_F64LE);
	}
	hsize_t dim = (hsize_t)nt;
	static const struct mx_triplet none;
	hid_t d = mt < 0 || ft < 0 ? -1 : h5w_dataset(h, loc, name, 1, &dim, ft, mt, nt ? t : &none);
	if (mt < 0 || ft < 0)
		h5w_fail(h);
	if (mt >= 0)
		H5Tclose(mt);
	if (ft >= 0)
		H5Tclose(ft);
	free(owned);
	if (d >= 0) {
		h5w_attr_str(h, d, "layout", "sparse");
		h5w_attr_u64(h, d, "n", m->n);
	}
	return d;
}

hid_t h5w_matrix(struct h5w *h, hid_t loc, const char *name, const struct matrix_out *m)
{
	size_t n = m->n;
	bool sparse = out_sparse(m);
	hid_t d = sparse ? sparse_dataset(h, loc, name, m) : dense_dataset(h, loc, name, m);
	if (d < 0)
		return d;
	h5w_attr_str(h, d, "kind", m->kind);
	h5w_attr_str(h, d, "index", m->index);
	h5w_attr_str(h, d, "units", m->units);
	const char **v = calloc(n ? n : 1, sizeof *v);
	char (*bufs)[32] = calloc(n ? n : 1, sizeof *bufs);
	if (v && bufs) {
		for (size_t i = 0; i < n; i++)
			v[i] = out_label(m, i, bufs[i], sizeof bufs[i]);
		/* an attribute holds at most 64 KiB (4,000 labels or so): a sparse
		 * or a large matrix has its labels in the datasets only */
		if (!sparse && n <= OUT_DENSE_MAX)
			h5w_attr_strs(h, d, "labels", v, n);
		label_datasets(h, loc, sparse ? -1 : d, m, v);
	} else {
		h5w_fail(h);
	}
	free(v);
	free(bufs);
	return d;
}

/* ---- the matrix writer ------------------------------------------------------- */

/* The dataset name of matrix k: its name ('/' -> '_'), "matrix_K" without
 * one, "_2", "_3" ... appended when taken. */
static void dataset_name(hid_t file, const struct matrix_out *m, size_t k, char *name,
                         size_t namelen)
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
}

static void write_one(struct h5w *h, const struct matrix_out *m, const char *name)
{
	hid_t d = h5w_matrix(h, h->file, name, m);
	if (d < 0)
		return;
	for (size_t a = 0; m->attrs && a < m->nattrs; a++) {
		const char *key = m->attrs[a].key, *value = m->attrs[a].value;
		/* "labels" and the fixed keys are ours: the same value is there
		 * already; another is kept under a prefix */
		const char *fixed = !key ? NULL : !strcmp(key, "kind") ? m->kind :
		                    !strcmp(key, "index") ? m->index : !strcmp(key, "units") ? m->units :
		                    !strcmp(key, "labels") ? "" : NULL;
		char alt[256];
		if (fixed && value && !strcmp(fixed, value))
			continue;
		if (fixed) {
			snprintf(alt, sizeof alt, "attr_%s", key);
			key = alt;
		}
		h5w_attr_value(h, d, key, value);
	}
	if (H5Dclose(d) < 0)
		h5w_fail(h);
}

int write_matrices_h5(const char *path, const struct matrix_out *m, size_t nm,
                      struct ct_error *err)
{
	struct ct_error local;
	if (!err)
		err = &local;
	struct h5w h;
	if (h5w_create(&h, path, err))
		return -1;
	char name[300];
	h5w_attr_str(&h, h.file, "creator", "commtrace " CT_VERSION);
	h5w_attr_str(&h, h.file, "format", "commtrace matrices");
	h5w_attr_u64(&h, h.file, "matrices", nm);
	if (h.bad)
		snprintf(err->msg, sizeof err->msg, "cannot write HDF5 file '%s': file attributes", path);
	for (size_t k = 0; k < nm && !h.bad; k++) {
		dataset_name(h.file, &m[k], k, name, sizeof name);
		write_one(&h, &m[k], name);
		if (h.bad)
			snprintf(err->msg, sizeof err->msg, "cannot write dataset '%s' to HDF5 file '%s'",
			         name, path);
	}
	bool before = h.bad;
	int rc = h5w_close(&h);
	if (rc && !before)
		snprintf(err->msg, sizeof err->msg, "cannot write HDF5 file '%s'", path);
	return rc;
}

#endif
