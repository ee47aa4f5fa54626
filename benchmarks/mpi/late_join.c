/* Exchanges across one shared rack uplink, one of them started late.
 *
 * Usage: late_join BYTES REPEATS DELAY_MS...   (2 racks of K ranks: ranks 0..K-1 in one, K..2K-1 in the
 * other, pairs (i, i + K): K exchanges on every uplink direction)
 *
 * For each DELAY (ms; "alone" = -1: only the last pair exchanges) and each of REPEATS runs after one
 * warm-up: a barrier, then every pair but the last MPI_Sendrecv's BYTES at once, the last pair after
 * DELAY ms (sleeping in steps of at most 1 ms).  Rank 0 prints one JSON line per delay:
 *   {"delay_ms": D, "start": [[pair 0's start, ..], ...], "end": [[...], ...]}
 * seconds after the barrier, per run (the ranks share one machine's clock on the emulated cluster;
 * a pair's end is the later of its two ranks'). Used by benchmarks/late_join_netns.py. */
#include <unistd.h>

#include "mpi_common.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (argc < 4 || world % 2 || world < 4) {
        if (rank == 0) fprintf(stderr, "usage: late_join BYTES REPEATS DELAY_MS... (an even number >= 4 of ranks)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long bytes = atol(argv[1]);
    int repeats = atoi(argv[2]), K = world / 2, pair = rank % K, peer = rank < K ? rank + K : rank - K;
    char *out = calloc((size_t)bytes, 1), *in = malloc((size_t)bytes);
    double mine[2], *all = rank == 0 ? malloc(sizeof(double) * 2 * (size_t)world) : NULL;
    print_hosts(rank, world);
    for (int d = 3; d < argc; d++) {
        double delay = atof(argv[d]);
        int alone = delay < 0;
        if (rank == 0) printf("{\"delay_ms\": %g, \"runs\": [", delay);
        for (int k = 0; k <= repeats; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            int late = pair == K - 1, active = late || !alone;
            if (late && delay > 0)  /* sleep, not spin: the other ranks share the cores */
                while (MPI_Wtime() - t0 < delay / 1e3) {
                    double left = delay / 1e3 - (MPI_Wtime() - t0);
                    if (left > 0) usleep((useconds_t)(left > 1e-3 ? 1e3 : left * 1e6));
                }
            mine[0] = MPI_Wtime();
            if (active)
                MPI_Sendrecv(out, (int)bytes, MPI_BYTE, peer, 0, in, (int)bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
            mine[1] = active ? MPI_Wtime() : -1.0;
            mine[0] = active ? mine[0] : -1.0;
            double first;
            MPI_Allreduce(&t0, &first, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
            if (active) { mine[0] -= first; mine[1] -= first; }
            MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            if (rank == 0 && k > 0) {
                printf("%s{\"start\": [", k > 1 ? ", " : "");
                for (int p = 0; p < K; p++) {
                    double a = all[2 * p], b = all[2 * (p + K)];
                    printf("%s%.6f", p ? ", " : "", a < 0 ? -1.0 : (a < b ? a : b));
                }
                printf("], \"end\": [");
                for (int p = 0; p < K; p++) {
                    double a = all[2 * p + 1], b = all[2 * (p + K) + 1];
                    printf("%s%.6f", p ? ", " : "", a < 0 ? -1.0 : (a > b ? a : b));
                }
                printf("]}");
            }
        }
        if (rank == 0) {
            printf("]}\n");
            fflush(stdout);
        }
    }
    free(out); free(in); free(all);
    MPI_Finalize();
    return 0;
}
