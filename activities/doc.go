// Package activities owns the side effects of the PIX workflows. Activities is
// a struct holding the dependencies; its methods are registered with the worker
// and referenced from workflows through a nil *Activities. Every activity is
// one PostgreSQL transaction and safe to run twice: Temporal runs activities at
// least once. Business refusals become Temporal application errors whose type
// is one of the ErrType constants, so that retry policies can name them.
package activities
