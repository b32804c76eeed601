/*
 * replay.c — runs fuzz inputs without libFuzzer: every file named on the
 * command line (a directory means every file in it) against every
 * registered backend, or the one given with --backend.  This is how the
 * committed corpus and the regression cases run in every build, gcc's
 * included, and how a crash input is read: TB_FUZZ_TRACE=1 prints each
 * decoded operation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_model.h"
#include "inputs.h"

static const struct tb_backend *only;
static long files, runs;

/* One input against every backend (or the one named). */
static void replay_input(const char *path, const uint8_t *buf, size_t n)
{
    tbf_set_label(path);
    for (size_t i = 0; i < tb_backend_count(); i++) {
        const struct tb_backend *b = tb_backend_at(i);
        if (only && b != only)
            continue;
        tbf_run(b, buf, n);
        runs++;
    }
    tbf_set_label(NULL);
    files++;
}

int main(int argc, char **argv)
{
    const char *tr = getenv("TB_FUZZ_TRACE");
    tbf_set_trace(tr && *tr == '1');
    int i = 1;
    if (i + 1 < argc && strcmp(argv[i], "--backend") == 0) {
        only = tb_backend_find(argv[i + 1]);
        if (!only) {
            fprintf(stderr, "replay: no backend named '%s'\n", argv[i + 1]);
            return 2;
        }
        i += 2;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: %s [--backend NAME] FILE|DIR...\n", argv[0]);
        return 2;
    }
    fuzz_inputs(argv + i, argc - i, replay_input);
    if (files == 0) {
        fprintf(stderr, "replay: no inputs found\n");
        return 2;
    }
    printf("replay: %ld inputs, %ld backend runs, no divergence\n", files,
           runs);
    return 0;
}
