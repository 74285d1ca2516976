/* commanalyze-mpi: the sweep command across MPI ranks (see sweep_mpi.c).
 *
 *   mpirun -np 4 commanalyze-mpi [sweep] TRACE --param ... -o sweep.h5
 *   srun commanalyze-mpi --traces a.zst,b.zst --param ... -o sweep.h5
 *
 * Same options and outputs as `commanalyze sweep`; rank 0 prints and
 * writes. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "sweep.h"

int main(int argc, char **argv)
{
	int provided = 0;
	/* worker threads never call MPI: only the main thread does */
	if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
		fprintf(stderr, "commanalyze-mpi: MPI_Init_thread failed\n");
		return EXIT_USAGE;
	}
	int rank = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		if (rank == 0)
			fprintf(argc < 2 ? stderr : stdout,
			        "usage: mpirun -np N commanalyze-mpi [sweep] TRACE|--traces T1,T2,...\n"
			        "           --param NAME=V1,V2,... [--param ...] [-j N] [-o FILE.h5]\n"
			        "           [--csv FILE] [--plot FILE.svg] [--reference POINT|TRACE]\n"
			        "           [fixed model options]\n"
			        "Same options as `commanalyze sweep`; see commanalyze(1).\n");
		MPI_Finalize();
		return argc < 2 ? EXIT_USAGE : 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		if (rank == 0)
			printf("commanalyze-mpi %s\n", CT_VERSION);
		MPI_Finalize();
		return 0;
	}
	int rc = sweep_mpi_main(argc - 1, argv + 1);
	MPI_Finalize();
	return rc;
}
