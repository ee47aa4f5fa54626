/* Time MPI_Allreduce only (not start-up), one communicator per forced coll_tuned algorithm.
 *
 * Usage: allreduce_timer SIZE_BYTES WARMUP REPEATS SPEC [SPEC ...]
 * SPEC is "A" or "A:R:B": coll_tuned allreduce algorithm A (Open MPI 4.1: 2 nonoverlapping
 * reduce+bcast, 3 recursive doubling, 4 ring, 6 rabenseifner), and for A=2 the reduce (R) and
 * bcast (B) algorithms it uses (4 binary / 5 binary tree: a binary-tree reduce then bcast).
 * Run with --mca coll_tuned_use_dynamic_rules 1.  Each SPEC is written to the coll_tuned
 * control variables through MPI_T (they are "writeable" in ompi_info) and a communicator is
 * duplicated from MPI_COMM_WORLD afterwards: coll_tuned reads the forced algorithm when a
 * communicator's module is enabled, so the duplicate runs SPEC, in MPI_COMM_WORLD's rank order
 * (the order mpirun --map-by seq gave from the hostfile).
 * Prints on rank 0, one JSON line per SPEC: {"spec": ..., "read_back": [...], "seconds": [...],
 * "correct": ...} (seconds: per repeat, the slowest rank's time of one MPI_Allreduce after a
 * barrier), then {"hosts": [host of rank 0, 1, ...]}.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_common.h"

int main(int argc, char **argv) {
    int provided, rank, world;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (argc < 5) {
        if (rank == 0) fprintf(stderr, "usage: %s SIZE_BYTES WARMUP REPEATS SPEC...\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long size = atol(argv[1]);
    int warmup = atoi(argv[2]), repeats = atoi(argv[3]);
    int count = (int)(size / sizeof(float));
    float *in = malloc(sizeof(float) * count), *out = malloc(sizeof(float) * count);
    double *t = malloc(sizeof(double) * repeats), *tmax = malloc(sizeof(double) * repeats);
    for (int s = 4; s < argc; s++) {
        int a = 0, r = 0, b = 0, got[3] = {-1, -1, -1};
        int n = sscanf(argv[s], "%d:%d:%d", &a, &r, &b);
        if (set_cvar("coll_tuned_allreduce_algorithm", a, &got[0]) != MPI_SUCCESS ||
            (n == 3 && (set_cvar("coll_tuned_reduce_algorithm", r, &got[1]) != MPI_SUCCESS ||
                        set_cvar("coll_tuned_bcast_algorithm", b, &got[2]) != MPI_SUCCESS))) {
            if (rank == 0) fprintf(stderr, "cannot set coll_tuned algorithm %s through MPI_T\n", argv[s]);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        MPI_Comm comm;
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        for (int i = 0; i < warmup + repeats; i++) {
            for (int k = 0; k < count; k++) in[k] = 1.0f;
            MPI_Barrier(comm);
            double t0 = MPI_Wtime();
            MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, comm);
            double dt = MPI_Wtime() - t0;
            if (i >= warmup) t[i - warmup] = dt;
        }
        int ok = 1;
        for (int k = 0; k < count; k++) if (out[k] != (float)world) { ok = 0; break; }
        int all_ok;
        MPI_Reduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, 0, comm);
        MPI_Reduce(t, tmax, repeats, MPI_DOUBLE, MPI_MAX, 0, comm);
        if (rank == 0) {
            printf("{\"spec\": \"%s\", \"read_back\": [%d, %d, %d], \"seconds\": [", argv[s], got[0], got[1], got[2]);
            for (int i = 0; i < repeats; i++) printf("%s%.6f", i ? ", " : "", tmax[i]);
            printf("], \"correct\": %s}\n", all_ok ? "true" : "false");
            fflush(stdout);
        }
        MPI_Comm_free(&comm);
    }
    print_hosts(rank, world);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
