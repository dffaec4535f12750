/*
 * Latency summary of qdm-recv's samples (see latency_stats.h).
 */
#include "latency_stats.h"

#include <stdlib.h>

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile in microseconds over the sorted samples. */
static double pct_us(const int64_t *sorted, size_t n, double q) {
  if (n == 0) return -1;
  size_t rank = (size_t)(q * (double)n + 0.999999);
  if (rank < 1) rank = 1;
  if (rank > n) rank = n;
  return (double)sorted[rank - 1] / 1000.0;
}

qdm_latency_t qdm_latency_summary(int64_t *samples, size_t n) {
  qsort(samples, n, sizeof(int64_t), cmp_i64);
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += (double)samples[i];
  qdm_latency_t out = {pct_us(samples, n, 0.50), pct_us(samples, n, 0.90), pct_us(samples, n, 0.99),
                       pct_us(samples, n, 1.0), n ? sum / (double)n / 1000.0 : -1.0};
  return out;
}
