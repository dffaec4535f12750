/*
 * Latency summary of qdm-recv's samples (one-way, in nanoseconds).
 */
#ifndef QDM_LOADGEN_LATENCY_STATS_H
#define QDM_LOADGEN_LATENCY_STATS_H

#include <stddef.h>
#include <stdint.h>

/* Percentiles by nearest rank, in microseconds; all -1 when there are no samples. */
typedef struct qdm_latency_t {
  double p50_us, p90_us, p99_us, max_us, mean_us;
} qdm_latency_t;

/* Sorts samples[0..n) in place and summarises them. */
qdm_latency_t qdm_latency_summary(int64_t *samples, size_t n);

#endif
