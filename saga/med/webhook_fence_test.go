package med_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/retention"
	"github.com/pixbank/pix/saga/sagatest"
)

// inboxRetention is the retention's default window (INBOX_RETENTION).
const inboxRetention = 30 * 24 * time.Hour

// creditListed credits a PIX of 10_000 centavos that the PSP catch-up
// found in the PSP's record (no webhook came): stored by the listing's
// path with the catch-up's psp, then credited.
func (f *fixture) creditListed() string {
	f.t.Helper()
	e2e := f.storeListed()
	credited, err := f.s.Credit(context.Background(), e2e, 1, 1)
	require.NoError(f.t, err)
	require.True(f.t, credited.Credited)
	return e2e
}

// storeListed stores a PIX of 10_000 centavos to a new account (with its
// Pix key) as the PSP catch-up does when it finds it first in the PSP's
// record, not credited yet; it returns its end_to_end_id.
func (f *fixture) storeListed() string {
	f.t.Helper()
	ctx := context.Background()
	account := "acc-" + uuid.NewString()[:8]
	dbtest.OpenAccount(f.t, f.s, account, 0)
	_, err := f.s.CreatePixKey(ctx, db.NewPixKey{Key: account + "@example.com", KeyType: "email", AccountID: account})
	require.NoError(f.t, err)
	e2e := pix.NewEndToEndID("12345678", time.Now())
	out, err := f.s.StoreListed(ctx, []pix.Notification{{EndToEndID: e2e, Source: pix.SourceAPIPix, PixKey: account + "@example.com",
		AmountCents: 10_000, PSP: pix.CatchUpPSP, Listed: true, Payload: json.RawMessage(`{}`)}})
	require.NoError(f.t, err)
	require.True(f.t, out[0].New, "stored first by the catch-up")
	return e2e
}

// creditFrom credits a PIX of 10_000 centavos delivered by psp's webhook.
func (f *fixture) creditFrom(psp string) string {
	f.t.Helper()
	return dbtest.CreditPIX(f.t, f.s, dbtest.PIX{PSP: psp}).EndToEndID
}

// retire has the inbox retention delete the PIX's inbox row, as it does
// INBOX_RETENTION after its credit: the row made that old, then the
// retention's own delete.
func (f *fixture) retire(e2e string) {
	f.t.Helper()
	ctx := context.Background()
	_, err := f.s.Pool().Exec(ctx, `UPDATE inbox_messages SET processed_at = now() - interval '40 days' WHERE end_to_end_id = $1`, e2e)
	require.NoError(f.t, err)
	deleted, err := retention.NewStore(f.s).DeleteDoneInboxRows(ctx, inboxRetention, 1000)
	require.NoError(f.t, err)
	require.EqualValues(f.t, 1, deleted)
	var left int
	require.NoError(f.t, f.s.Pool().QueryRow(ctx, `SELECT count(*) FROM inbox_messages WHERE end_to_end_id = $1`, e2e).Scan(&left))
	require.Zero(f.t, left, "the inbox row is gone")
}

// creditPSP is what the PIX's credit recorded as its PSP (nil: NULL).
func (f *fixture) creditPSP(e2e string) *string {
	f.t.Helper()
	var psp *string
	require.NoError(f.t, f.s.Pool().QueryRow(context.Background(), `SELECT psp FROM pix_credits WHERE end_to_end_id = $1`, e2e).Scan(&psp))
	return psp
}

// noticeFrom posts a report notice about e2e signed by key, and returns
// the answer's status and error code.
func noticeFrom(t *testing.T, a *sagatest.API, e2e string, key []byte) (int, string) {
	t.Helper()
	status, got := post(t, a, reportsPath, reportNotice(report(e2e, dict.ReportOpen, time.Now())), key)
	return status, sagatest.Code(got)
}

// A PIX the catch-up found (its inbox row's psp 'catchup': no webhook
// came) is the PSP's that the catch-up lists (PSP_NAME): its credit records
// that PSP, whose notices about it are taken; another PSP's are refused
// 403, as for a PIX its webhook delivered. The credit keeps the PSP after
// the retention deleted the inbox row. (Before: every notice about it was
// refused, the PSP's own included, as 'catchup' is no PSP.)
func TestANoticeAboutAPIXTheCatchUpFoundIsItsPSPs(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.s.SetCatchUpPSP("psp-1")
	a := f.notices(&sagatest.Signals{})
	e2e := f.creditListed()
	require.Equal(t, "psp-1", *f.creditPSP(e2e), "the credit records the PSP the catch-up lists")

	status, code := noticeFrom(t, a, e2e, otherPSPKey)
	require.Equal(t, http.StatusForbidden, status, code)
	require.Equal(t, "med_notice_wrong_psp", code)
	found, err := f.store.OfPIX(ctx, e2e, 10)
	require.NoError(t, err)
	require.Empty(t, found, "nothing recorded")
	status, code = noticeFrom(t, a, e2e, pspKey)
	require.Equal(t, http.StatusAccepted, status, code)

	f.retire(e2e)
	status, code = noticeFrom(t, a, e2e, otherPSPKey)
	require.Equal(t, http.StatusForbidden, status, code)
	require.Equal(t, "med_notice_wrong_psp", code)
	status, code = noticeFrom(t, a, e2e, pspKey)
	require.Equal(t, http.StatusAccepted, status, code)
	found, err = f.store.OfPIX(ctx, e2e, 10)
	require.NoError(t, err)
	require.Len(t, found, 2, "the PSP's two reports, none of the other's")
}

// The fence outlives the inbox row: once the retention deleted the row
// that named the PSP (30 days; MED comes up to 90 days after the PIX), the
// credit still says which PSP delivered it, and another PSP's notices,
// reports and refund requests alike, are refused. (Before: with the row
// gone, any PSP's notice passed.)
func TestThePSPFenceOutlivesTheInboxRow(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.notices(&sagatest.Signals{})
	e2e := f.creditFrom("psp-2")
	require.Equal(t, "psp-2", *f.creditPSP(e2e))
	f.retire(e2e)

	status, code := noticeFrom(t, a, e2e, pspKey) // psp-1's
	require.Equal(t, http.StatusForbidden, status, code)
	require.Equal(t, "med_notice_wrong_psp", code)
	refund := refundNotice(dict.Refund{ID: uuid.NewString(), TransactionID: e2e, RefundReason: dict.RefundFraud,
		RefundAmount: 10_000, Status: dict.RefundOpen, InfractionReportID: uuid.NewString()})
	status, got := post(t, a, refundsPath, refund, pspKey)
	require.Equal(t, http.StatusForbidden, status, "%v", got)
	require.Equal(t, "med_notice_wrong_psp", sagatest.Code(got))
	found, err := f.store.OfPIX(ctx, e2e, 10)
	require.NoError(t, err)
	require.Empty(t, found, "nothing recorded")

	status, code = noticeFrom(t, a, e2e, otherPSPKey) // psp-2's own
	require.Equal(t, http.StatusAccepted, status, code)
}

// A PIX of ours whose PSP is not on record (a catch-up PIX credited while
// PSP_NAME was unset; a credit from before 0050 once its inbox row is
// gone), with several PSPs configured (db.Store.SolePSP unset), is held on
// no PSP's word: the notice is answered 503
// med_notice_psp_unknown, which the PSP delivers again, nothing recorded;
// once an operator records the PSP, its redelivery is taken. (Before: a
// catch-up PIX's notices were refused 403 for good, and an old credit's,
// its row gone, taken from any PSP.)
func TestANoticeAboutAPIXWhosePSPIsNotOnRecordIsDeliveredAgain(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.notices(&sagatest.Signals{})
	listed := f.creditListed() // PSP_NAME unset
	require.Nil(t, f.creditPSP(listed), "no PSP recorded: none is known")
	old := f.creditFrom("psp-1")
	_, err := f.s.Pool().Exec(ctx, `UPDATE pix_credits SET psp = NULL WHERE end_to_end_id = $1`, old) // as before 0050
	require.NoError(t, err)
	f.retire(old)

	for _, e2e := range []string{listed, old} {
		status, code := noticeFrom(t, a, e2e, pspKey)
		require.Equal(t, http.StatusServiceUnavailable, status, code)
		require.Equal(t, "med_notice_psp_unknown", code)
		found, err := f.store.OfPIX(ctx, e2e, 10)
		require.NoError(t, err)
		require.Empty(t, found, "nothing recorded")

		_, err = f.s.Pool().Exec(ctx, `UPDATE pix_credits SET psp = 'psp-1' WHERE end_to_end_id = $1`, e2e) // the operator's
		require.NoError(t, err)
		status, code = noticeFrom(t, a, e2e, pspKey)
		require.Equal(t, http.StatusAccepted, status, code)
	}
}

// A PIX of ours credited with no PSP on record is held on no PSP's word,
// even with one PSP configured (attack review B, LOW-2): the PSP was
// inferred from the configuration of the process the notice reached, so
// with API processes split by PSP each saw a sole PSP, and after a move
// from one PSP to another the old PIX became the new one's. The notice is
// answered 503 med_notice_psp_unknown until the backfill of docs/med.md
// records the PSP, and then taken from that PSP only. Before the fix, the
// first notice was taken (202).
func TestAPIXWhosePSPIsNotOnRecordIsNoConfiguredPSPs(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.notices(&sagatest.Signals{})
	listed := f.creditListed() // credited while PSP_NAME was unset
	require.Nil(t, f.creditPSP(listed))
	f.s.SetCatchUpPSP("psp-1") // one PSP configured now, and named
	old := f.creditFrom("psp-1")
	_, err := f.s.Pool().Exec(ctx, `UPDATE pix_credits SET psp = NULL WHERE end_to_end_id = $1`, old) // as before 0050
	require.NoError(t, err)
	f.retire(old)

	for _, e2e := range []string{listed, old} {
		status, code := noticeFrom(t, a, e2e, pspKey)
		require.Equal(t, http.StatusServiceUnavailable, status, code)
		require.Equal(t, "med_notice_psp_unknown", code)
		found, err := f.store.OfPIX(ctx, e2e, 10)
		require.NoError(t, err)
		require.Empty(t, found, "nothing recorded")

		_, err = f.s.Pool().Exec(ctx, `UPDATE pix_credits SET psp = 'psp-1' WHERE end_to_end_id = $1 AND psp IS NULL`, e2e) // the backfill
		require.NoError(t, err)
		status, code = noticeFrom(t, a, e2e, otherPSPKey)
		require.Equal(t, http.StatusForbidden, status, code)
		require.Equal(t, "med_notice_wrong_psp", code)
		status, code = noticeFrom(t, a, e2e, pspKey)
		require.Equal(t, http.StatusAccepted, status, code)
		found, err = f.store.OfPIX(ctx, e2e, 10)
		require.NoError(t, err)
		require.Len(t, found, 1, "the recorded PSP's report is taken")
	}
}
