// Package counters holds [Redis], what a Redis store counts of its own
// work: the value redisstore.Store.Stats returns. The type is in a package
// of its own, which imports the standard library alone, so that the
// metrics modules (github.com/ratescope/ratescope/prometheus and
// github.com/ratescope/ratescope/otel), which report these counts, name it
// without pulling in the Redis client for an application that counts in
// memory.
package counters
