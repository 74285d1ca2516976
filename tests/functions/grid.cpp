// A C++ program for demangled names and typed heap blocks
// (tests/e2e/functions.sh): physics::Grid objects created with new by one
// thread and read by another; their cells written through Grid::fill().
#include <pthread.h>
#include <cstdio>

namespace physics {
struct Cell {
	double x, y;
};
class Grid {
public:
	static Grid *create(int n);
	void fill(int r);
	double total() const;
	Cell cells[8];
	int n;
};

__attribute__((noinline)) Grid *Grid::create(int n)
{
	Grid *g = new Grid;
	g->n = n;
	return g;
}

__attribute__((noinline)) void Grid::fill(int r)
{
	for (int i = 0; i < n; i++)
		cells[i].x = cells[i].y = r + i;
}

__attribute__((noinline)) double Grid::total() const
{
	double s = 0;
	for (int i = 0; i < n; i++)
		s += cells[i].x + cells[i].y;
	return s;
}
}  // namespace physics

static physics::Grid *grid;
static pthread_barrier_t bar;
static double result;

static void *reader(void *)
{
	double s = 0;
	for (int r = 0; r < 4; r++) {
		pthread_barrier_wait(&bar);
		s += grid->total();
		pthread_barrier_wait(&bar);
	}
	result = s;
	return nullptr;
}

int main()
{
	grid = physics::Grid::create(8);
	pthread_barrier_init(&bar, nullptr, 2);
	pthread_t t;
	pthread_create(&t, nullptr, reader, nullptr);
	for (int r = 0; r < 4; r++) {
		grid->fill(r);
		pthread_barrier_wait(&bar);
		pthread_barrier_wait(&bar);
	}
	pthread_join(t, nullptr);
	std::printf("total %g\n", result);
	return 0;
}
