/* commanalyze lines TRACE: the cache-line view (like perf c2c): the
 * hottest lines and, per byte offset, the object and field there, the
 * threads that store and load it, true and false events, the source lines. */
#include "ana.h"
#include "attrib_int.h"

static int write_lines(struct attrib_cli *c, struct analysis *an, struct attrib *a, FILE *f)
{
	(void)an;
	return attrib_write_lines(a, f, c->fmt, c->top);
}

int cmd_lines(int argc, char **argv)
{
	return attrib_cli_main("lines", ACMD_LINES, argc, argv, write_lines);
}
