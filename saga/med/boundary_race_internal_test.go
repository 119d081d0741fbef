//go:build race

package med

// boundaryCases under the race detector, which makes a JSON round trip of
// a report some fifteen times slower: the seeded property keeps its first
// cases, within the same budget.
const boundaryCases = 1000
