package contract_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/tooling/apicontract"
)

// medReports is a med.RouteStore that has one report; the routes it is
// not asked for are nil (a call panics).
type medReports struct {
	med.RouteStore
	r med.Report
}

func (m medReports) Get(context.Context, uuid.UUID) (med.Report, error) { return m.r, nil }

func (m medReports) List(context.Context, *med.ListKey, int) ([]med.Report, error) {
	return []med.Report{m.r}, nil
}

// The operator's view of a MED report keeps to MEDReport
// (additionalProperties: false) whatever the saga's columns hold: the
// fields the workflow is given as JSON but the document does not have
// (refund_close_sent_at, review r19 MED-3) are not answered. Every
// column the view could carry is set.
func TestMEDReportViewKeepsToItsSchema(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	str := func(s string) *string { return &s }
	cents := func(c int64) *int64 { return &c }
	id, hold, req := uuid.New(), uuid.New(), uuid.New()
	r := med.Report{ID: id, EndToEndID: "E12345678202612061200aaaaaaaaaaa", AccountID: str("acc-1"), AmountCents: cents(10_000),
		CreditedAt: &now, Reporter: "87654321", InfractionType: "FRAUD", ReportedBy: "DEBITED_PARTICIPANT",
		ReportDetails: "golpe", DICTStatus: "CLOSED", DICTModifiedAt: now, DICTAnalysisResult: str("AGREED"), ReportedAt: now,
		Status: med.StatusAwaitingCredit, AnalysisResult: str("AGREED"), AnalysisDetails: str("ok"), AnalysedBy: str("op"),
		AnalysedAt: &now, AcknowledgedAt: &now, ClosedAt: &now, HoldID: &hold, Holds: 1, HeldCents: 3_000,
		RefundRequestID: &req, RefundRequestCents: cents(10_000), RefundRequestState: str("CLOSED"), RefundRequestModifiedAt: &now,
		RefundRequestDICTResult: str("REJECTED"), RefundRequestDICTReason: str("OTHER"), RefundClosedAt: &now, RefundClosedRtrID: str("D12345678202612061200aaaaaaaaaaa"),
		ReturnedCents: 3_000, Returns: 1, FirstRtrID: str("D12345678202612061200aaaaaaaaaaa"), AnalysisDueAt: now,
		RequestDueAt: &now, ReturnUntil: &now, DICTProblem: str("dict_not_as_ours: x"), AcknowledgeSentAt: &now,
		CloseSentAt: &now, RefundCloseSentAt: &now, Gen: 7, Traceparent: str("00-x"), CreatedAt: now, UpdatedAt: now,
		DispatchDueAt: &now, DispatchedAt: &now, ReleasedBy: str("op"), ReleaseDetails: str("decidido")}
	checkMEDReportView(t, id, r)
	for _, cause := range med.EndCauses {
		// Every end cause is one of the document's (rejected_at_dict:
		// review r21 MED-3).
		r.Status, r.EndCause = med.StatusEnded, str(cause)
		checkMEDReportView(t, id, r)
	}
}

// checkMEDReportView checks the operator's views of r (its own, and the
// list that has it), and of r stopped with each code, against the document.
func checkMEDReportView(t *testing.T, id uuid.UUID, r med.Report) {
	str := func(s string) *string { return &s }
	const admin = "contract-admin-token-0123456789"
	store := &medReports{r: r}
	handler, err := api.NewRouter(api.Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), AdminToken: admin,
		TemporalUIURL: "http://temporal.local", TemporalNamespace: "default",
		Sagas: []api.SagaHTTP{(&med.Handlers{Store: store, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}).HTTP()}},
		api.AllRoutes)
	require.NoError(t, err)
	c := loadContract(t)
	for _, target := range []string{"/pix/med/reports/" + id.String(), "/pix/med/reports"} {
		checkMEDView(t, c, handler, admin, target)
	}
	// Every code of why a step stopped is in dict_problem_code's enum
	// (psp_action_awaited, a bank behind a PSP's cue, too).
	for _, code := range []string{med.ProblemRefused, med.ProblemUnverified, med.ProblemNotAsOurs, med.ProblemInvalidStatus,
		med.ProblemMalformed, med.ProblemPSPActionAwaited} {
		store.r.DICTProblem = str(code + ": x")
		checkMEDView(t, c, handler, admin, "/pix/med/reports/"+id.String())
	}
}

// checkMEDView gets target from handler as the admin and checks the answer
// against the contract c.
func checkMEDView(t *testing.T, c *apicontract.Contract, handler http.Handler, admin, target string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Header.Set("Authorization", "Bearer "+admin)
	w := httptest.NewRecorder()
	handler.ServeHTTP(w, req)
	require.Equal(t, http.StatusOK, w.Code, "%s: %s", target, w.Body)
	res := c.Check(apicontract.Exchange{Method: http.MethodGet, Target: target, RequestHeader: req.Header, Status: w.Code,
		ResponseHeader: w.Header(), ResponseBody: w.Body.Bytes()})
	require.NotEmpty(t, res.Operation, target)
	require.Empty(t, res.Problems, "%s: %s", target, w.Body)
}
