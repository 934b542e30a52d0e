//go:build !soak

package main_test

// loadRuns is how many times TestLoadLateAnswers runs per framework: once
// in the ordinary test run, 10 times in `make load` (build tag soak).
const loadRuns = 1
