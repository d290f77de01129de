/* The configuration space of a sweep, its enumeration, and the reduction of
 * its results (Pareto front, top-k): the core's side of a search, in two
 * headers, included here together.
 *
 *   llmplan/space.h    (src/core/space.c, constraints.c) the dimensions, the
 *                      parsed sweep (read by src/io/sweep_json.c, declared
 *                      in llmplan/io.h), mixed-radix index <-> configuration
 *                      with the validity rules' block skipping
 *   llmplan/results.h  (src/core/pareto.c) Pareto front of (time, cost) and
 *                      top-k per objective, canonical under any merge order;
 *                      the sweep's counters
 *
 * MPI-free: the MPI driver in search/ hands out index ranges of the space
 * and merges these objects as bytes. Nothing here allocates per
 * configuration. */
#ifndef LLMPLAN_SEARCH_H
#define LLMPLAN_SEARCH_H

#include "llmplan/results.h"
#include "llmplan/space.h"

#endif
