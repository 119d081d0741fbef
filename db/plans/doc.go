// Package plans holds the check that every statement the service runs is
// bounded by an index (plans_test.go): each statement of the one registry
// (db.Statements, with every saga linked in through saga/registry) is
// planned by PostgreSQL on tables filled in production's shape
// (testdata/fixture.sql), and a plan that reads a growing table whole
// fails, naming the statement and showing its plan. It is a package of its
// own so that linking in every saga changes nothing of package db's own
// tests, which see only db's statements and queues. It has no code.
package plans
