/*
 * fuzz_target.c — the libFuzzer entry point of the differential fuzz engine
 * (fuzz_model.c).  Every input runs against every registered backend, or
 * only against the one named by TB_FUZZ_BACKEND: one backend per fuzzing
 * process lets coverage feedback steer towards that backend's own code, and
 * is how the `fuzz` suite spreads its time budget.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_model.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct tb_backend *only;

/** Resolves TB_FUZZ_BACKEND once; an unknown name stops the run at once
 *  rather than fuzzing nothing. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *name = getenv("TB_FUZZ_BACKEND");
    if (name && *name) {
        only = tb_backend_find(name);
        if (!only) {
            fprintf(stderr, "fuzz_target: TB_FUZZ_BACKEND=%s is not a "
                    "registered backend\n", name);
            exit(2);
        }
    }
    const char *tr = getenv("TB_FUZZ_TRACE");
    tbf_set_trace(tr && *tr == '1');
    return 0;
}

/** Runs one input: never fails by return value, a divergence aborts. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (only) {
        tbf_run(only, data, size);
        return 0;
    }
    for (size_t i = 0; i < tb_backend_count(); i++)
        tbf_run(tb_backend_at(i), data, size);
    return 0;
}
