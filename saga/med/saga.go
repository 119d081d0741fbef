package med

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/saga"
)

// Kinds are the saga's business errors, added to pix.Kinds.
var Kinds = pix.DeclareKinds(
	&pix.Kind{Err: ErrNotFound, Refusal: true,
		Status: http.StatusNotFound, Code: "med_report_not_found", Message: "no infraction report with this id",
		TemporalType: "MEDReportNotFound"},
	&pix.Kind{Err: ErrRequestNotFound, Refusal: true,
		Status: http.StatusNotFound, Code: "med_refund_request_not_found",
		Message: "no refund request kept on its own with this id (one its report answers is the report's)"},
	&pix.Kind{Err: ErrAnalysed, Refusal: true,
		Status: http.StatusUnprocessableEntity, Code: "med_report_analysed",
		Message: "the infraction report was analysed already, with another result or details"},
	&pix.Kind{Err: ErrNotAnalysable, Refusal: true,
		Status: http.StatusUnprocessableEntity, Code: "med_report_not_analysable",
		Message: "the infraction report is past its analysis (ended, cancelled, not ours, or closed)"},
	&pix.Kind{Err: ErrNotReleasable, Refusal: true,
		Status: http.StatusUnprocessableEntity, Code: "med_report_not_releasable",
		Message: "the infraction report is not open, not stopped at the DICT, has a devolução in flight, or may still be returned on (its refund request not CLOSED REJECTED at the DICT and its return_until not passed, or CANCELLED): nothing released"},
	&pix.Kind{Err: ErrWrongPSP, Refusal: true, Status: http.StatusForbidden, Code: "med_notice_wrong_psp",
		Message: "the notice's PSP did not deliver this PIX; nothing was changed"},
	// Not a refusal: ours to put right; the PSP delivers the notice again.
	&pix.Kind{Err: ErrPSPUnknown, Status: http.StatusServiceUnavailable, Code: "med_notice_psp_unknown",
		Message: "the PSP that delivered this PIX is not on record here yet; nothing was changed: deliver the notice again later"},
	// Met at an intake: the lister logs it; the PSP's notice is answered
	// it (webhook.go).
	&pix.Kind{Err: ErrReportMismatch, Refusal: true, Status: http.StatusUnprocessableEntity, Code: "med_report_mismatch",
		Message:      "the notice names an infraction report received with another PIX; nothing was changed",
		TemporalType: "MEDReportMismatch"},
	&pix.Kind{Err: ErrNotAtDICT, Refusal: true, Status: http.StatusUnprocessableEntity, Code: "med_notice_not_at_dict",
		Message: "the DICT has no such infraction report or refund request; nothing was changed"},
	&pix.Kind{Err: ErrQuarantineNotFound, Refusal: true, Status: http.StatusNotFound, Code: "med_quarantine_not_found",
		Message: "no quarantined item of the DICT's lists with this kind and id modified at the date-time given (through)"},
)

// Saga is MED as the credited participant, declared once: listed in
// saga/registry.
var Saga = saga.Descriptor{
	Name: "med",
	// A report holds a PIX received and hands its return to the devolução
	// saga: its runs are on the devoluções' queue, as the block's.
	Family:    runconf.Refunds,
	Workflows: map[string]any{WorkflowName: Workflow, ListerWorkflowName: ListerWorkflow},
	// AutoUpgrade: a run lasts up to 90 days after the PIX, beyond any
	// release's drain; its changes replay the recorded histories
	// (replay_test.go).
	Versioning: workflow.VersioningBehaviorAutoUpgrade,
	Settings:   CheckSettings,
	Help: "MED reaches the DICT with MED_DICT_URL, MED_DICT_CERT_FILE and MED_DICT_KEY_FILE (mutual TLS), " +
		"MED_DICT_VERIFY_CERT_FILE (the DICT's signing certificate) and BANK_ISPB; or runs without it, said with " +
		"MED_DICT_DISABLED=true (its reports then go on the PSP's notices, stopping where only the DICT could answer, and nothing lists the DICT). " +
		"pixd with neither does not start.",
	Deps:       depsOf,
	Activities: func(deps any) []any { d := deps.(*Deps); return []any{d.Activities, d.Lister} },
	Schedule: func(ctx context.Context, c client.Client, env saga.Env) error {
		return EnsureListerSchedule(ctx, c, env.Schedules, env.Queues, settings.Of(env.Lookup))
	},
	Source: func(env saga.Env, taskQueue string) durable.Source {
		return Source(NewStore(env.Store).Queue(), taskQueue)
	},
	Kinds:  Kinds,
	Events: Events,
	HTTP: func(env saga.Env) (api.SagaHTTP, error) {
		h := &Handlers{Store: NewStore(env.Store), Keys: env.Store, Temporal: env.Temporal, Log: env.Log}
		out := h.HTTP()
		s := settings.Of(env.Lookup)
		doors := &Doors{Store: storeOf(env, s), Temporal: env.Temporal, Log: env.Log}
		notices := &Notices{Store: doors, Log: env.Log}
		if s.DICT.BaseURL != "" {
			notices.DICT = signatureCounted{dictOf(env, s)}
		}
		out.Webhooks = notices.Webhooks()
		return out, nil
	},
	Collectors: collectors,
	// A fill of a report's hold wakes its run, after the inflow's commit.
	HoldsFilled: func(env saga.Env) db.FillsHook { return FillsWake(env.Temporal, env.Log) },
}

// notConfigured is the DICT of a service that runs MED without the DICT
// (MED_DICT_DISABLED=true, Settings): every call is refused unsent, so a report's run holds its money and
// stops, visibly (Report.DICTProblem), at its first DICT step; none is
// guessed past.
type notConfigured struct{}

var errNotConfigured = fmt.Errorf("%w: no DICT client configured (MED_DICT_DISABLED=true)", dict.ErrNotSent)

func (notConfigured) GetInfractionReport(context.Context, string) (dict.InfractionReport, error) {
	return dict.InfractionReport{}, errNotConfigured
}

func (notConfigured) AcknowledgeInfractionReport(context.Context, string) (dict.InfractionReport, error) {
	return dict.InfractionReport{}, errNotConfigured
}

func (notConfigured) CloseInfractionReport(context.Context, string, dict.AnalysisResult, string) (dict.InfractionReport, error) {
	return dict.InfractionReport{}, errNotConfigured
}

func (notConfigured) GetRefund(context.Context, string) (dict.Refund, error) {
	return dict.Refund{}, errNotConfigured
}

func (notConfigured) WalkRefunds(context.Context, dict.RefundQuery, func(dict.Refund) error) (time.Time, error) {
	return time.Time{}, errNotConfigured
}

func (notConfigured) CloseRefund(context.Context, string, dict.RefundClosing) (dict.Refund, error) {
	return dict.Refund{}, errNotConfigured
}
