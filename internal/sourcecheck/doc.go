// Package sourcecheck owns the checks of the service's own source that the
// linters don't make (its tests; it has no code): a product function of
// more than MaxFuncLines lines must say in its doc comment why it is not
// split (funclen_test.go); a package does not import against ImportRules'
// directions, directly or not, unless docs/architecture.md's "Import
// directions" says why one stays (imports_test.go); no product file reads
// a row with pgx's strict by-name scanners, which refuse a column a later
// migration adds (rowscan_test.go: internal/rowscan reads it).
package sourcecheck

// MaxFuncLines is the most lines a function of the service's module (its
// non-test Go files) has, from its func keyword to its closing brace,
// unless its doc comment holds a line "Length: <why>".
const MaxFuncLines = 100
