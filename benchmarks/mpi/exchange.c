/* One exchange per pair, timed: every active rank MPI_Sendrecv's BYTES with its partner
 * (rank ^ STRIDE), REPEATS times after one warm-up, a barrier before each; rank 0 prints
 * {"seconds": [slowest active rank's time of each run]}.
 *   exchange BYTES REPEATS STRIDE [ACTIVE]   (ACTIVE: only ranks < ACTIVE exchange; default all)
 * Used by benchmarks/exchange_netns.py. */
#include "mpi_common.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (argc < 4) {
        if (rank == 0) fprintf(stderr, "usage: exchange BYTES REPEATS STRIDE [ACTIVE]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long bytes = atol(argv[1]);
    int repeats = atoi(argv[2]), stride = atoi(argv[3]);
    int active_n = argc > 4 ? atoi(argv[4]) : world;
    int peer = rank ^ stride, active = rank < active_n && peer < active_n && peer < world;
    char *out = calloc((size_t)bytes, 1), *in = malloc((size_t)bytes);
    double *t = malloc(sizeof(double) * (size_t)(repeats + 1));
    print_hosts(rank, world);
    for (int k = 0; k <= repeats; k++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime(), dt, slowest;
        if (active)
            MPI_Sendrecv(out, (int)bytes, MPI_BYTE, peer, 0, in, (int)bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
        dt = active ? MPI_Wtime() - t0 : 0.0;
        MPI_Reduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        t[k] = slowest;
    }
    if (rank == 0) {
        printf("{\"seconds\": [");
        for (int k = 1; k <= repeats; k++) printf("%s%.6f", k > 1 ? ", " : "", t[k]);
        printf("]}\n");
    }
    free(out); free(in); free(t);
    MPI_Finalize();
    return 0;
}
