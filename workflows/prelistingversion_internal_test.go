package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/pix"
)

// PreListingVersionCreditPix is CreditPix as the worker before merge
// 4df3977 ("i17-creditcost") ran it, verbatim (git show 73b78c3^:workflows/credit.go)
// but for the conversions of its durations, time.Durations then (payload.Duration now):
// it asks workflow.GetVersion and knows nothing of CreditInput.ListingVersion
// (an old binary's CreditInput has no such field; the JSON decoder drops it).
// It stands for an old worker process still polling the task queue during a
// rolling deploy, or every worker after a rollback.
func PreListingVersionCreditPix(ctx workflow.Context, in CreditInput) (CreditOutput, error) {
	creditCtx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		// Without it, a local activity's attempts share one StartToClose.
		ScheduleToCloseTimeout: 2 * roundBudget(in.Retry),
		StartToCloseTimeout:    time.Duration(in.Retry.ActivityTimeout),
		RetryPolicy:            creditPolicy(in.Retry),
	})
	version := ListingVersion(ctx)
	for round := 1; ; round++ {
		var res activities.CreditResult
		err := workflow.ExecuteLocalActivity(creditCtx, a.CreditAccount, activities.CreditInput{
			EndToEndID:    in.EndToEndID,
			PriorAttempts: in.PriorAttempts,
			Drive:         in.Drive,
		}).Get(ctx, &res)
		if err == nil {
			UpsertStatus(ctx, version, pix.StatusDone, AttrAccountID.ValueSet(res.AccountID))
			return CreditOutput{Credited: res.Credited, AccountID: res.AccountID, AmountCents: res.AmountCents, BalanceAfter: res.BalanceAfter}, nil
		}
		if isSuperseded(err) {
			return CreditOutput{}, superseded(ctx, in, err)
		}
		if !isTechnical(err) {
			return failCredit(ctx, version, in, err)
		}
		in.PriorAttempts += int(in.Retry.MaxAttempts)
		workflow.GetLogger(ctx).Warn("technical failure; the PIX stays pending and is retried",
			"end_to_end_id", in.EndToEndID, "round", round, "attempts", in.PriorAttempts, "error", FailureReason(err))
		if round >= roundsPerRun {
			return CreditOutput{}, workflow.NewContinueAsNewError(ctx, CreditWorkflowName, in)
		}
		if err := workflow.Sleep(ctx, time.Duration(in.Retry.MaxInterval)); err != nil {
			return CreditOutput{}, err
		}
	}
}
