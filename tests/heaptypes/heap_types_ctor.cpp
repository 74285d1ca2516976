// Cell's constructor in a unit of its own (heap_types.cpp -DCTOR_ELSEWHERE),
// built without instrumentation: the site's type comes from a unit in which
// nothing was recorded.
#define CTOR_ELSEWHERE
#include "heap_types.h"

Cell::Cell() : x(0), y(0), n(0) {}
