// Package worker owns the Temporal worker of the PIX service: what it
// registers on which task queue, and its run loop with a graceful stop that
// lets running activities finish.
package worker
