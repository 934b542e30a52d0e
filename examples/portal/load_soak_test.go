//go:build soak

package main_test

// loadRuns is how many times TestLoadLateAnswers runs per framework under
// `make load`.
const loadRuns = 10
