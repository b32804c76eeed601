/*
 * tests/fuzz/inputs.h — how the replay programs of the fuzz suite
 * (fuzz_replay, replay.c, and trace_fuzz_replay, trace_target.c) read the
 * committed inputs: each path on the command line is a file, or a directory
 * whose regular files are taken in name order, so runs repeat exactly.
 * Header-only (static functions): each program includes it once.
 */
#ifndef TIMERBENCH_FUZZ_INPUTS_H
#define TIMERBENCH_FUZZ_INPUTS_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/** What a program does with one input: its path and its bytes. */
typedef void (*fuzz_input_fn)(const char *path, const uint8_t *buf,
                              size_t n);

/* realloc or exit 2 (an input reader has nothing to fall back on) */
static void *fuzz_inputs_grow(void *p, size_t size)
{
    p = realloc(p, size);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static int fuzz_inputs_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads the file whole and hands it to run; exits 2 if it cannot. */
static void fuzz_input_file(const char *path, fuzz_input_fn run)
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
            cap = cap ? cap * 2 : 8192;
            buf = fuzz_inputs_grow(buf, cap);
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    run(path, buf, n);
    free(buf);
}

/* The regular files of a directory, in name order. */
static void fuzz_input_dir(const char *dir, fuzz_input_fn run)
{
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        exit(2);
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        names = fuzz_inputs_grow(names, (n + 1) * sizeof *names);
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        names[n] = fuzz_inputs_grow(NULL, len);
        snprintf(names[n++], len, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, fuzz_inputs_cmp);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
            fuzz_input_file(names[i], run);
        free(names[i]);
    }
    free(names);
}

/** Runs every input that paths[0..n) name (files, or directories of
 *  them).  Exits 2 for a path that does not exist. */
static void fuzz_inputs(char **paths, int n, fuzz_input_fn run)
{
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0) {
            perror(paths[i]);
            exit(2);
        }
        if (S_ISDIR(st.st_mode))
            fuzz_input_dir(paths[i], run);
        else
            fuzz_input_file(paths[i], run);
    }
}

#endif
