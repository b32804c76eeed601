/*
 * replay.c — runs fuzz inputs without libFuzzer: every file named on the
 * command line (a directory means every file in it) against every
 * registered backend, or the one given with --backend.  This is how the
 * committed corpus and the regression cases run in every build, gcc's
 * included, and how a crash input is read: TB_FUZZ_TRACE=1 prints each
 * decoded operation.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_model.h"

static const struct tb_backend *only;
static long files, runs;

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            buf = realloc(buf, cap);
            if (!buf) {
                fprintf(stderr, "replay: out of memory\n");
                exit(2);
            }
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    tbf_set_label(path);
    for (size_t i = 0; i < tb_backend_count(); i++) {
        const struct tb_backend *b = tb_backend_at(i);
        if (only && b != only)
            continue;
        tbf_run(b, buf, n);
        runs++;
    }
    tbf_set_label(NULL);
    free(buf);
    files++;
}

/* Files of a directory in name order, so runs repeat exactly. */
static void replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        exit(2);
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, cap * sizeof *names);
            if (!names)
                exit(2);
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        names[n] = malloc(len);
        if (!names[n])
            exit(2);
        snprintf(names[n++], len, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
            replay_file(names[i]);
        free(names[i]);
    }
    free(names);
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
    for (; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            return 2;
        }
        if (S_ISDIR(st.st_mode))
            replay_dir(argv[i]);
        else
            replay_file(argv[i]);
    }
    if (files == 0) {
        fprintf(stderr, "replay: no inputs found\n");
        return 2;
    }
    printf("replay: %ld inputs, %ld backend runs, no divergence\n", files,
           runs);
    return 0;
}
