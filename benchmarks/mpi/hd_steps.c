/* Rabenseifner's all-reduce (Open MPI coll_tuned allreduce algorithm 6) taken apart into its steps.
 *
 * Usage: hd_steps SIZE_BYTES WARMUP REPEATS   (a power-of-two number of ranks; run with
 * --mca coll_tuned_use_dynamic_rules 1, as benchmarks/hd_steps_netns.py does)
 *
 * 1. the real MPI_Allreduce of SIZE bytes of floats, algorithm 6 forced through MPI_T on a
 *    communicator duplicated from MPI_COMM_WORLD (as allreduce_timer.c does);
 * 2. its 2 log2(n) exchanges emulated, one MPI_Sendrecv of SIZE / (2 mask) bytes with rank ^ mask
 *    per step, steps separated by barriers: the reduce-scatter's masks 1, 2, .., n/2 (distance
 *    doubling, vector halving), then the allgather's n/2, .., 1; the slowest rank's time per step;
 * 3. the same exchanges back to back with the reduce-scatter's local sums (the real one's shape).
 * Prints on rank 0, JSON lines (seconds: the slowest rank's, per repeat after WARMUP):
 *   {"what": "allreduce", "read_back": 6, "correct": true, "seconds": [...]}
 *   {"what": "steps", "seconds": [[step 0, .., step 2L-1], ...]}
 *   {"what": "free", "seconds": [...]}
 *   {"what": "trace", "ends": [[[rank 0's step 0 end, ..], [rank 1's ..], ..], ...]}
 *   {"hosts": [host of rank 0, 1, ...]}
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "mpi_common.h"

static double slowest(double dt) {
    double mx = 0;
    MPI_Reduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    return mx;
}

static void print_list(const double *x, int k) {
    printf("[");
    for (int i = 0; i < k; i++) printf("%s%.6f", i ? ", " : "", x[i]);
    printf("]");
}

int main(int argc, char **argv) {
    int provided, rank, n;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int L = 0;
    while ((1 << L) < n) L++;
    if (argc != 4 || (1 << L) != n) {
        if (rank == 0) fprintf(stderr, "usage: %s SIZE_BYTES WARMUP REPEATS (power-of-two ranks)\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long size = atol(argv[1]);
    int warmup = atoi(argv[2]), reps = atoi(argv[3]), nsteps = 2 * L;
    int count = (int)(size / sizeof(float));
    float *a = malloc(size), *b = malloc(size), *o = malloc(size);
    double *t = calloc((size_t)reps * (nsteps + 2), sizeof(double)), t0;
    for (int k = 0; k < count; k++) a[k] = 1.0f;

    /* 1. the real all-reduce, algorithm 6 */
    int got = -1;
    if (set_cvar("coll_tuned_allreduce_algorithm", 6, &got) != MPI_SUCCESS) {
        if (rank == 0) fprintf(stderr, "cannot set coll_tuned_allreduce_algorithm through MPI_T\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    for (int r = 0; r < warmup + reps; r++) {
        MPI_Barrier(comm);
        t0 = MPI_Wtime();
        MPI_Allreduce(a, o, count, MPI_FLOAT, MPI_SUM, comm);
        double mx = slowest(MPI_Wtime() - t0);
        if (r >= warmup) t[r - warmup] = mx;
    }
    int ok = 1, all_ok = 0;
    for (int k = 0; k < count; k++) if (o[k] != (float)n) { ok = 0; break; }
    MPI_Reduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Comm_free(&comm);
    if (rank == 0) {
        printf("{\"what\": \"allreduce\", \"read_back\": %d, \"correct\": %s, \"seconds\": ", got,
               all_ok ? "true" : "false");
        print_list(t, reps);
        printf("}\n");
        fflush(stdout);
    }

    /* 2. the steps, separated by barriers */
    for (int r = 0; r < warmup + reps; r++) {
        for (int s = 0; s < nsteps; s++) {
            int mask = s < L ? 1 << s : 1 << (nsteps - 1 - s), c = count / (2 * mask), peer = rank ^ mask;
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            MPI_Sendrecv(a, c, MPI_FLOAT, peer, s, b, c, MPI_FLOAT, peer, s, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            double mx = slowest(MPI_Wtime() - t0);
            if (r >= warmup) t[reps + (r - warmup) * nsteps + s] = mx;
        }
    }
    if (rank == 0) {
        printf("{\"what\": \"steps\", \"seconds\": [");
        for (int r = 0; r < reps; r++) {
            printf("%s", r ? ", " : "");
            print_list(t + reps + r * nsteps, nsteps);
        }
        printf("]}\n");
        fflush(stdout);
    }

    /* 3. the steps back to back, with the local sums */
    double *free_t = t + reps + reps * nsteps;
    for (int r = 0; r < warmup + reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (int s = 0; s < nsteps; s++) {
            int mask = s < L ? 1 << s : 1 << (nsteps - 1 - s), c = count / (2 * mask), peer = rank ^ mask;
            MPI_Sendrecv(a, c, MPI_FLOAT, peer, s, b, c, MPI_FLOAT, peer, s, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (s < L) for (int k = 0; k < c; k++) o[k] = a[k] + b[k];
        }
        double mx = slowest(MPI_Wtime() - t0);
        if (r >= warmup) free_t[r - warmup] = mx;
    }
    if (rank == 0) {
        printf("{\"what\": \"free\", \"seconds\": ");
        print_list(free_t, reps);
        printf("}\n");
        fflush(stdout);
    }

    /* 4. back to back again, every rank's step ends */
    double *mine = calloc((size_t)nsteps + 1, sizeof(double));
    double *all = rank == 0 ? calloc((size_t)n * (nsteps + 1), sizeof(double)) : NULL;
    if (rank == 0) printf("{\"what\": \"trace\", \"ends\": [");
    for (int r = 0; r < warmup + reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        mine[0] = MPI_Wtime();
        for (int s = 0; s < nsteps; s++) {
            int mask = s < L ? 1 << s : 1 << (nsteps - 1 - s), c = count / (2 * mask), peer = rank ^ mask;
            MPI_Sendrecv(a, c, MPI_FLOAT, peer, s, b, c, MPI_FLOAT, peer, s, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (s < L) for (int k = 0; k < c; k++) o[k] = a[k] + b[k];
            mine[s + 1] = MPI_Wtime();
        }
        MPI_Gather(mine, nsteps + 1, MPI_DOUBLE, all, nsteps + 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        if (rank == 0 && r >= warmup) {
            double first = all[0];
            for (int i = 1; i < n; i++) if (all[i * (nsteps + 1)] < first) first = all[i * (nsteps + 1)];
            printf("%s[", r > warmup ? ", " : "");
            for (int i = 0; i < n; i++) {
                for (int s = 1; s <= nsteps; s++) all[i * (nsteps + 1) + s] -= first;
                printf("%s", i ? ", " : "");
                print_list(all + i * (nsteps + 1) + 1, nsteps);
            }
            printf("]");
        }
    }
    if (rank == 0) {
        printf("]}\n");
        fflush(stdout);
    }

    print_hosts(rank, n);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
