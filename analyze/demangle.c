/* Readable symbol names.  C++ names go through the C++ runtime's own
 * demangler, __cxa_demangle (libstdc++, always present with g++): it is the
 * demangler of the ABI GCC and Clang emit on Linux, needs no extra package
 * and is the same code (libiberty's cp-demangle.c) that c++filt runs.
 * Two conventions are rewritten after it, because neither demangler names
 * them the way people read them:
 *   - OpenMP regions outlined by GCC: "work() [clone ._omp_fn.0]" (and
 *     the C "main._omp_fn.0", left as it is) become "work()._omp_fn.0",
 *     the region of its parent function;
 *   - gfortran module procedures "__grid_MOD_step" become "grid::step". */
#include <stdlib.h>
#include <string.h>

#include "attrib.h"

char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

#define CLONE_OMP " [clone ._omp_fn."

/* "f() [clone ._omp_fn.N]" -> "f()._omp_fn.N", in place */
static void omp_clone_suffix(char *d)
{
	char *c = strstr(d, CLONE_OMP);
	if (!c)
		return;
	char *num = c + strlen(CLONE_OMP), *end = strchr(num, ']');
	if (!end || end[1])
		return;
	size_t n = (size_t)(end - num);
	memmove(c + strlen("._omp_fn."), num, n);
	memcpy(c, "._omp_fn.", strlen("._omp_fn."));
	c[strlen("._omp_fn.") + n] = 0;
}

/* "__MODULE_MOD_NAME" -> "MODULE::NAME" (gfortran), or NULL */
static char *fortran_module_name(const char *name)
{
	const char *mod = strstr(name, "_MOD_");
	if (strncmp(name, "__", 2) || !mod || mod == name + 2 || !mod[5])
		return NULL;
	size_t ml = (size_t)(mod - name - 2), nl = strlen(mod + 5);
	char *out = malloc(ml + 2 + nl + 1);
	if (!out)
		return NULL;
	memcpy(out, name + 2, ml);
	memcpy(out + ml, "::", 2);
	memcpy(out + ml + 2, mod + 5, nl + 1);
	return out;
}

char *symbol_demangle(const char *name)
{
	if (!name)
		return NULL;
	if (!strncmp(name, "_Z", 2)) {
		int status = 0;
		char *d = __cxa_demangle(name, NULL, NULL, &status);
		if (status || !d) {
			free(d);
			return NULL;
		}
		omp_clone_suffix(d);
		return d;
	}
	return fortran_module_name(name);
}

/* Re-intern one name; the old string stays in the table (unused). */
static void demangle_one(struct st_module *m, uint32_t *name)
{
	char *d = symbol_demangle(st_str(m, *name));
	if (!d)
		return;
	uint32_t off = st_intern(m, d);
	if (off != ST_NONE)
		*name = off;
	free(d);
}

void symtab_demangle(struct symtab *s)
{
	for (size_t i = 0; i < s->n; i++) {
		struct st_module *m = s->mods[i];
		for (size_t k = 0; k < m->nfuncs; k++)
			demangle_one(m, &m->funcs[k].name);
		for (size_t k = 0; k < m->nvars; k++)
			demangle_one(m, &m->vars[k].name);
	}
}
