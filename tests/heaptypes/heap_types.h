// struct Cell of heap_types.cpp (and heap_types_ctor.cpp).
struct Cell {
	double x, y;
	long n;
#ifdef CTOR_ELSEWHERE
	Cell();
#else
	Cell() : x(0), y(0), n(0) {}
#endif
};
