package worker

import (
	"context"
	"slices"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/workflows"
)

// Schedules are the service's Temporal Schedules as this worker's
// configuration has them: every saga's Schedule (saga.Descriptor.Schedule)
// built from Env (its settings, its ScheduleSync), on Client.
type Schedules struct {
	Client client.Client
	Sagas  []saga.Descriptor
	Env    saga.Env
}

// Sync brings the Schedules to this worker's configuration: each that
// differs is created, changed or deleted (workflows.ScheduleSync).
func (s Schedules) Sync(ctx context.Context) error { return s.each(ctx, s.Env) }

// Check names the Schedules that differ from this worker's configuration,
// writing nothing.
func (s Schedules) Check(ctx context.Context) ([]workflows.ScheduleDifference, error) {
	var found []workflows.ScheduleDifference
	env := s.Env
	env.Schedules.Differs = func(d workflows.ScheduleDifference) { found = append(found, d) }
	err := s.each(ctx, env)
	return found, err
}

func (s Schedules) each(ctx context.Context, env saga.Env) error {
	for _, d := range s.Sagas {
		if d.Schedule == nil {
			continue
		}
		if err := d.Schedule(ctx, s.Client, env); err != nil {
			return err
		}
	}
	return nil
}

// KeepSchedules brings s to this worker's configuration once each time its
// build v becomes its deployment's current version: at the worker's start
// if it is current, or when an operator promotes it (temporal worker
// deployment set-current-version, a rollback too), without a restart. A
// build that is not current (a new one not yet promoted, an old one
// draining after an upgrade or a rollback, which may restart with its old
// settings for hours) writes nothing. It asks whether v is current every
// interval until ctx ends (a read), and, while it is, checks the
// Schedules against this worker's configuration without writing: two
// pools of one build with other settings (a settings-only rolling change,
// a pool with the catch-up off) would otherwise write theirs in turn at
// every interval, one deleting the catch-up's Schedule and the other
// creating it again. A difference is logged (WARN) when it appears or
// changes, and counted (pix_schedules_differing); the Schedules follow the
// worker that started or was promoted last. Errors are logged and asked
// again at the next interval, a write until it succeeds: the Schedules
// keep running meanwhile.
func KeepSchedules(ctx context.Context, s Schedules, v sdkworker.WorkerDeploymentVersion, every time.Duration) error {
	log, m := s.Env.Log, s.Env.Metrics
	started := time.Now()
	// syncedFor is the promotion (the time v last became current) this
	// worker wrote its configuration for: nil at its start and once v is
	// no longer current, so that the next promotion writes again, even
	// one that came and went between two intervals (its time changed).
	var syncedFor *time.Time
	var differing []workflows.ScheduleDifference // as last logged
	wasCurrent := true                           // so the first "not current" is said
	for {
		current, since, err := currentSince(ctx, s.Client, v)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			log.Warn("schedules: could not tell whether this build is current; asked again", "build_id", v.BuildID, "error", err)
		case !current:
			if wasCurrent {
				log.Info("schedules left to the current build: this one is not", "deployment", v.DeploymentName, "build_id", v.BuildID)
			}
			syncedFor, differing = nil, nil
			m.SchedulesDiffering(0)
		case syncedFor == nil || !syncedFor.Equal(since):
			if err := s.Sync(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				log.Warn("schedules: could not bring them to the configuration; asked again", "build_id", v.BuildID, "error", err)
				break
			}
			syncedFor, differing = &since, nil
			m.SchedulesDiffering(0)
			log.Info("schedules brought to this worker's configuration: its build is current", "deployment", v.DeploymentName,
				"build_id", v.BuildID, "current_since", since)
		default:
			found, err := s.Check(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				log.Warn("schedules: could not compare them with the configuration; asked again", "build_id", v.BuildID, "error", err)
				break
			}
			if len(found) > 0 {
				// Another build promoted meanwhile may be what wrote them:
				// asked again at once, so that a promotion is not said as
				// a difference by the build it replaced.
				if still, again, err := currentSince(ctx, s.Client, v); err == nil && (!still || !again.Equal(since)) {
					continue
				}
			}
			m.SchedulesDiffering(len(found))
			if !slices.EqualFunc(found, differing, sameDifference) {
				if len(found) > 0 {
					log.Warn("schedules differ from this worker's configuration: another worker of this build wrote its settings (or a hand edit); left as they are",
						"build_id", v.BuildID, "differences", found)
				} else {
					log.Info("schedules as this worker's configuration again", "build_id", v.BuildID)
				}
				differing = found
			}
		}
		wasCurrent = err != nil || current
		// A first start is promoted within a second or two (Promote):
		// asked every second until its first write, for a minute.
		wait := every
		if syncedFor == nil && time.Since(started) < time.Minute {
			wait = min(every, time.Second)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

func sameDifference(a, b workflows.ScheduleDifference) bool {
	return a.ID == b.ID && slices.Equal(a.Differs, b.Differs)
}

// currentSince tells whether v is its deployment's current version, and
// since when the deployment's current version is the one it is. A
// deployment Temporal does not know yet (no worker polled) has none.
func currentSince(ctx context.Context, c client.Client, v sdkworker.WorkerDeploymentVersion) (bool, time.Time, error) {
	d, err := c.WorkerDeploymentClient().GetHandle(v.DeploymentName).Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		if versionUnknownYet(err) {
			return false, time.Time{}, nil
		}
		return false, time.Time{}, err
	}
	rc := d.Info.RoutingConfig
	return rc.CurrentVersion != nil && *rc.CurrentVersion == v, rc.CurrentVersionChangedTime, nil
}
