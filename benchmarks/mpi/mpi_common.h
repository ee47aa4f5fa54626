/* Shared by the MPI timers of benchmarks/ (allreduce_timer.c, hd_steps.c): forcing a coll_tuned
 * algorithm through MPI_T, and printing which host each rank ran on. */
#ifndef PLINK_MPI_COMMON_H
#define PLINK_MPI_COMMON_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* Write control variable NAME (e.g. "coll_tuned_allreduce_algorithm") through MPI_T and read it
 * back into *read_back; MPI_SUCCESS or the failing call's error. */
static int set_cvar(const char *name, int value, int *read_back) {
    int idx, count, err;
    MPI_T_cvar_handle h;
    if ((err = MPI_T_cvar_get_index(name, &idx)) != MPI_SUCCESS) return err;
    if ((err = MPI_T_cvar_handle_alloc(idx, NULL, &h, &count)) != MPI_SUCCESS) return err;
    if ((err = MPI_T_cvar_write(h, &value)) != MPI_SUCCESS) { MPI_T_cvar_handle_free(&h); return err; }
    MPI_T_cvar_read(h, read_back);
    MPI_T_cvar_handle_free(&h);
    return MPI_SUCCESS;
}

/* Rank 0 prints {"hosts": [host of rank 0, 1, ...]} (collective over MPI_COMM_WORLD). */
static void print_hosts(int rank, int world) {
    char name[MPI_MAX_PROCESSOR_NAME] = {0};
    int len;
    MPI_Get_processor_name(name, &len);
    char *all = rank == 0 ? malloc((size_t)world * MPI_MAX_PROCESSOR_NAME) : NULL;
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("{\"hosts\": [");
        for (int i = 0; i < world; i++) printf("%s\"%s\"", i ? ", " : "", all + (size_t)i * MPI_MAX_PROCESSOR_NAME);
        printf("]}\n");
        fflush(stdout);
        free(all);
    }
}

#endif
