/* The matrix output writers by --format name, and writing through one of
 * them to a file or standard output.  Adding a format: its writer
 * (out_NAME.c), a row here, the usage texts and the man page. */
#include <errno.h>
#include <string.h>

#include "ana.h"
#include "out_util.h"

static int stream_error(const struct out_dest *d)
{
	snprintf(d->err->msg, sizeof d->err->msg, "cannot write %s: %s",
	         d->path ? d->path : "standard output", strerror(errno));
	return -1;
}

/* Writers of one matrix per call: each matrix in turn. */
static int each(const struct out_dest *d, const struct matrix_out *m, size_t nm,
                int (*one)(FILE *, const struct matrix_out *))
{
	for (size_t i = 0; i < nm; i++)
		if (one(d->f, &m[i]))
			return stream_error(d);
	return 0;
}

static int text(const struct out_dest *d, const struct matrix_out *m, size_t nm)
{
	return each(d, m, nm, write_matrix_text);
}

static int csv(const struct out_dest *d, const struct matrix_out *m, size_t nm)
{
	return each(d, m, nm, write_matrix_csv);
}

static int svg(const struct out_dest *d, const struct matrix_out *m, size_t nm)
{
	return each(d, m, nm, write_matrix_svg);
}

static int json(const struct out_dest *d, const struct matrix_out *m, size_t nm)
{
	return write_matrices_json(d->f, m, nm) ? stream_error(d) : 0;
}

static int h5(const struct out_dest *d, const struct matrix_out *m, size_t nm)
{
	return write_matrices_h5(d->path, m, nm, d->err);
}

static const struct matrix_writer writers[] = {
	{ "text", false, text },
	{ "csv", false, csv },
	{ "json", false, json },
	{ "h5", true, h5 },
	{ "svg", false, svg },
};
#define NWRITERS (sizeof writers / sizeof *writers)

const struct matrix_writer *matrix_writer_find(const char *name)
{
	for (size_t i = 0; i < NWRITERS; i++)
		if (!strcmp(writers[i].name, name))
			return &writers[i];
	return NULL;
}

const char *matrix_writer_names(char *buf, size_t cap)
{
	const char *names[NWRITERS];
	for (size_t i = 0; i < NWRITERS; i++)
		names[i] = writers[i].name;
	return names_list(names, NWRITERS, buf, cap);
}

int matrix_write(const struct matrix_writer *w, const char *path, const struct matrix_out *m,
                 size_t nm, struct ct_error *err)
{
	struct out_dest d = { .path = path, .err = err };
	if (w->writes_to_file)
		return w->write(&d, m, nm);
	d.f = path ? fopen(path, "w") : stdout;
	if (!d.f)
		return stream_error(&d);
	int rc = w->write(&d, m, nm);
	if ((path ? fclose(d.f) : fflush(d.f)) && !rc)
		rc = stream_error(&d);
	return rc;
}
