//go:build !race

package med

// boundaryCases is how many random reports TestTheRunDecidesAsTheStoreRowSays
// draws: about 1.5 s (boundary_race_internal_test.go: fewer under -race).
const boundaryCases = 20000
