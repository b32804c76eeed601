/*
 * fuzz_model.h — the differential fuzz engine shared by the libFuzzer target
 * and the plain corpus replay: decode bytes into scheduler operations, run
 * them against one backend in virtual mode and against a reference model,
 * and stop the process at the first divergence.
 *
 * The engine is written against the public interface and the backend's
 * capability flags only, so every registered backend is fuzzed with no edit
 * here.
 */
#ifndef TIMERBENCH_FUZZ_MODEL_H
#define TIMERBENCH_FUZZ_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "timerbench/scheduler.h"

/** Runs one input against backend `b`.  Returns normally when the backend
 *  agreed with the model on every step; on the first divergence prints what
 *  differed (backend, operation number, expected and observed) to stderr and
 *  calls abort(), so libFuzzer keeps the input and a replay fails. */
void tbf_run(const struct tb_backend *b, const uint8_t *data, size_t size);

/** Names the input being run (a file name) in divergence reports; NULL
 *  clears it.  The string must outlive the runs. */
void tbf_set_label(const char *label);

/** When non-zero, prints every decoded operation and its result to stderr:
 *  how a failing input is read. */
void tbf_set_trace(int on);

#endif
