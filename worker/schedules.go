package worker

import (
	"context"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
)

// KeepSchedules brings the service's Schedules to this build's
// configuration (sync) while v is its deployment's current version: at
// once, then every interval, until ctx ends. A build that is not current
// (a new one not yet promoted, an old one draining after an upgrade or a
// rollback, which may restart with its old settings for hours) leaves the
// Schedules alone: two builds' settings would otherwise be written in
// turn, an old INBOX_RETENTION over the new. Promoted by an operator
// (temporal worker deployment set-current-version), the build writes its
// settings within an interval, without a restart. Errors are logged and
// asked again at the next interval: the Schedules keep running meanwhile.
func KeepSchedules(ctx context.Context, c client.Client, v sdkworker.WorkerDeploymentVersion, every time.Duration, sync func(context.Context) error, log *slog.Logger) error {
	started, synced := time.Now(), false
	wasCurrent := true // so the first "not current" is said
	for {
		current, err := IsCurrent(ctx, c, v)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			log.Warn("schedules: could not tell whether this build is current; asked again", "build_id", v.BuildID, "error", err)
		case current:
			if err := sync(ctx); err != nil && ctx.Err() == nil {
				log.Warn("schedules: could not bring them to the configuration; asked again", "build_id", v.BuildID, "error", err)
			} else {
				synced = true
			}
		case wasCurrent:
			log.Info("schedules left to the current build: this one is not", "deployment", v.DeploymentName, "build_id", v.BuildID)
		}
		wasCurrent = err != nil || current
		// A first start is promoted within a second or two (Promote):
		// asked every second until its first sync, for a minute.
		wait := every
		if !synced && time.Since(started) < time.Minute {
			wait = min(every, time.Second)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// IsCurrent tells whether v is its deployment's current version. A
// deployment Temporal does not know yet (no worker polled) has none.
func IsCurrent(ctx context.Context, c client.Client, v sdkworker.WorkerDeploymentVersion) (bool, error) {
	d, err := c.WorkerDeploymentClient().GetHandle(v.DeploymentName).Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		if versionUnknownYet(err) {
			return false, nil
		}
		return false, err
	}
	current := d.Info.RoutingConfig.CurrentVersion
	return current != nil && *current == v, nil
}
