/* HDF5 writing helpers (out_h5.c), shared by the matrix writer and the
 * sweep's file (sweep_h5.c); only in builds with HDF5.  Conventions:
 * float64 matrices n x n row-major, scalar UTF-8 string attributes, a
 * "labels" attribute of n strings, HDF5's automatic error printing off
 * while a file is written.  A failure marks the file bad (h->bad, errno of
 * the first one in h->err_no) and the writing goes on; the caller checks
 * h->bad where it wants to stop, and h5w_close says whether all went well. */
#ifndef CT_OUT_H5_H
#define CT_OUT_H5_H

#include <hdf5.h>

#include "analysis.h"

struct h5w {
	hid_t file;
	hid_t str;                  /* variable-length UTF-8 string type */
	int bad, err_no;
	H5E_auto2_t old_fn;
	void *old_data;
};

/* Create path anew.  0, or -1 with err->msg "cannot create HDF5 file
 * 'path'[: why]" and errno set (then nothing to close). */
int h5w_create(struct h5w *h, const char *path, struct ct_error *err);
/* Close the file: 0, or -1 when anything failed (errno: the first
 * failure's).  Restores HDF5's error printing. */
int h5w_close(struct h5w *h);

/* Mark the file bad (errno, else EIO, as the first failure's). */
void h5w_fail(struct h5w *h);

void h5w_attr_str(struct h5w *h, hid_t obj, const char *key, const char *value);
void h5w_attr_strs(struct h5w *h, hid_t obj, const char *key, const char *const *v, size_t n);
void h5w_attr_u64(struct h5w *h, hid_t obj, const char *key, uint64_t v);
void h5w_attr_i64(struct h5w *h, hid_t obj, const char *key, int64_t v);
void h5w_attr_f64(struct h5w *h, hid_t obj, const char *key, double v);
/* An attribute from text: a uint64 when it is a decimal integer, a float64
 * when it is another finite number, else a string (numbers stay numbers for
 * h5py, xarray and pandas). */
void h5w_attr_value(struct h5w *h, hid_t obj, const char *key, const char *text);
/* A 1-D dataset of the n texts: uint64 or float64 when every one is a
 * number (as h5w_attr_value), else strings.  Open (close it), or < 0. */
hid_t h5w_dataset_values(struct h5w *h, hid_t loc, const char *name, const char *const *v,
                         size_t n);
/* Make dataset `scale` (1-D) the dimension scale of dimension `dim` of d. */
void h5w_attach_scale(struct h5w *h, hid_t d, hid_t scale, unsigned dim);
/* A dataset of `rank` dims written from data (memory type mtype): open
 * (close it), or < 0. */
hid_t h5w_dataset(struct h5w *h, hid_t loc, const char *name, int rank, const hsize_t *dims,
                  hid_t ftype, hid_t mtype, const void *data);
void h5w_dataset_strs(struct h5w *h, hid_t loc, const char *name, const char *const *v, size_t n);
/* Matrix m as dataset `name` of loc with the attributes kind, index, units
 * and labels, and its labels as the dimension scales of its rows and
 * columns (datasets INDEX_row and INDEX_column of loc, shared by the
 * matrices of one index; m's other attributes and settings are the
 * caller's): open (close it), or < 0.  Sparse (out_sparse): triplets, the
 * labels only in those datasets (out_h5.c). */
hid_t h5w_matrix(struct h5w *h, hid_t loc, const char *name, const struct matrix_out *m);

#endif
