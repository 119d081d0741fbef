// Package runconf holds what the workflows' runs are configured with, below
// both the configuration that reads it from the environment
// (internal/config) and the workflows that run with it (workflows, each
// saga's package): the families of workflows and their task queues, derived
// from TEMPORAL_TASK_QUEUE (taskqueues.go); the credit activity's retries
// (RetrySettings: INBOX_*); the pace of the sagas' calls to the PSP
// (PSPCalls: PSP_TIMEOUT, PSP_RETRY_*). Its types travel in the workflows'
// inputs: their fields are part of the recorded histories' JSON, renamed
// only under the versioning rules. It imports no package of the service but
// the leaves it describes values with (internal/payload, internal/pix).
package runconf
