/* The functions the runtime's wrappers stand in front of.
 *
 * dlsym(RTLD_NEXT) finds the next definition in the global scope.  A
 * library that a program opened with RTLD_LOCAL (an OpenMP plugin and its
 * libgomp) is not there, yet its calls to the wrapped names bind to the
 * runtime's global wrappers: then the definition is looked up in the
 * libraries already loaded under the names that define them. */
#include "rt.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void *rt_real(const char *name)
{
	/* dlsym and dlopen allocate (dlerror's buffer, the handles): the
	 * runtime's, not the program's, allocations */
	rt_guard++;
	void *f = dlsym(RTLD_NEXT, name);
	static const char *const owners[] = { "libgomp.so.1", "libc.so.6" };
	for (size_t i = 0; !f && i < sizeof owners / sizeof owners[0]; i++) {
		void *h = dlopen(owners[i], RTLD_LAZY | RTLD_NOLOAD);
		if (h) {
			f = dlsym(h, name);
			dlclose(h);
		}
	}
	rt_guard--;
	return f;
}

void rt_no_real(const char *name)
{
	char msg[160];
	int n = snprintf(msg, sizeof msg, "commrec: the runtime wraps %s, but no library of the "
	                 "process defines it\n", name);
	ssize_t w = write(2, msg, n > 0 && (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
	(void)w;
	abort();
}
