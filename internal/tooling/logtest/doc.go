// Package logtest is a log destination for tests: the JSON lines a
// logger writes, which a test reads (and counts by message) while they are
// still being written by the goroutines under test.
package logtest
