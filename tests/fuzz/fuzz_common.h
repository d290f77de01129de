/* Shared by the libFuzzer harnesses of tests/fuzz/ (issue #21). */
#ifndef LLMPLAN_FUZZ_COMMON_H
#define LLMPLAN_FUZZ_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llmplan/sim.h"
#include "llmplan/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a NUL-terminated string (NULL when out of memory). */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    char *t = malloc(size + 1);
    if (!t) return NULL;
    memcpy(t, data, size);
    t[size] = '\0';
    return t;
}

/* A refusal is an error code with a message. */
static inline void fuzz_check_error(int rc, const struct lp_err *err)
{
    if (rc >= 0 || err->code == 0 || err->msg[0] == '\0') {
        fprintf(stderr, "refusal without a message: rc %d code %d\n", rc, err->code);
        abort();
    }
}

/* The oracle: a feasible result has a finite positive time and cost. */
static inline void fuzz_check_result(const struct lp_result *r)
{
    if (!r->feasible) return;
    if (!(isfinite(r->iteration_time_s) && r->iteration_time_s > 0 && isfinite(r->mfu) &&
          r->mfu > 0 && isfinite(r->cost_per_iteration_usd) && r->cost_per_iteration_usd >= 0 &&
          r->gpus > 0 && r->microbatches > 0)) {
        fprintf(stderr, "unsound feasible result: %g s, mfu %g, %g USD, %d GPUs\n",
                r->iteration_time_s, r->mfu, r->cost_per_iteration_usd, r->gpus);
        abort();
    }
}

/* Write the input to a private temporary file; returns its path (static). */
static inline const char *fuzz_file(const uint8_t *data, size_t size, const char *suffix)
{
    static char path[256];
    if (!path[0])
        snprintf(path, sizeof(path), "%s/llmplan_fuzz_%d%s",
                 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (int)getpid(), suffix);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    size_t n = size ? fwrite(data, 1, size, f) : 0;
    fclose(f);
    return n == size ? path : NULL;
}

#endif
